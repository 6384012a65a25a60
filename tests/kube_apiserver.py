"""A real API server for the live-cluster tests: etcd and kube-apiserver (v1.37.2, built by
``kube/build.sh`` into ``${XDG_CACHE_HOME:-~/.cache}/policylang/kube/<key>``) started on loopback
with free ports in a temporary directory, token authentication, RBAC, and an audit log of
every request (which the tests read to check that policylang sends nothing but GETs).

Without Go the binaries cannot be had and the tests skip with a one-line reason;
``POLICYLANG_REQUIRE_APISERVER=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import shutil
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request

import yaml

ROOT = Path(__file__).parent.parent
BUILD = ROOT / "kube" / "build.sh"
ADMIN_TOKEN = "policylang-admin-token"
# The user policylang reads as in the tests (a cluster admin), so that the audit log's events of
# this user are policylang's requests only; the admin creates the test objects.
READER, READER_TOKEN = "policylang-reader", "policylang-reader-token"
START_TIMEOUT = 120


class ApiServerUnavailable(Exception):
    pass


def required() -> bool:
    return os.environ.get("POLICYLANG_REQUIRE_APISERVER", "") not in ("", "0")


def binaries() -> Path:
    """The directory holding etcd and kube-apiserver (built once, then reused)."""
    if shutil.which("go") is None:
        raise ApiServerUnavailable("go is not on PATH: kube-apiserver and etcd cannot be built")
    if shutil.which("openssl") is None:
        raise ApiServerUnavailable("openssl is not on PATH: no service-account signing key can be made")
    done = subprocess.run([str(BUILD)], capture_output=True, text=True)
    if done.returncode != 0:
        raise ApiServerUnavailable(f"kube/build.sh failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ApiServer:
    """etcd + kube-apiserver in ``workdir``; ``request`` talks to it as the admin (system:masters)."""

    def __init__(self, bin_dir: Path, workdir: Path):
        self.dir = workdir
        self.procs: list[subprocess.Popen] = []
        self._logs: list = []
        try:
            self._boot(bin_dir, workdir)
        except BaseException:
            self.stop()
            raise

    def _boot(self, bin_dir: Path, workdir: Path) -> None:
        client, peer, self.port = free_port(), free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._start("etcd", [
            str(bin_dir / "etcd"), "--name", "policylang", "--data-dir", str(workdir / "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"policylang=http://127.0.0.1:{peer}", "--unsafe-no-fsync", "--log-level", "warn"])
        subprocess.run(["openssl", "genrsa", "-out", str(workdir / "sa.key"), "2048"], check=True,
                       capture_output=True)
        (workdir / "tokens.csv").write_text(f'{ADMIN_TOKEN},policylang-admin,admin-uid,"system:masters"\n'
                                            f'{READER_TOKEN},{READER},reader-uid,"system:masters"\n')
        (workdir / "audit.yaml").write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n")
        self.audit_log = workdir / "audit.log"
        self._start("kube-apiserver", [
            str(bin_dir / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{client}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.port}",
            f"--cert-dir={workdir / 'certs'}", f"--token-auth-file={workdir / 'tokens.csv'}",
            "--authorization-mode=RBAC", "--anonymous-auth=false",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={workdir / 'sa.key'}",
            f"--service-account-signing-key-file={workdir / 'sa.key'}",
            # v1.37 refuses to start on a loopback advertise address unless no endpoint reconciler
            # runs (there is no kubernetes Service to keep here anyway).
            "--endpoint-reconciler-type=none",
            # No controller manager makes namespaces' default service accounts, which this
            # admission plugin would insist on for every pod; and no kubelet ever reports a node
            # ready, so TaintNodesByCondition would taint every node created not-ready.
            "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            f"--audit-policy-file={workdir / 'audit.yaml'}", f"--audit-log-path={self.audit_log}",
            # Pods are watched from etcd itself, not the watch cache, so that compacting etcd
            # (compact_etcd) makes an old resourceVersion 410 Gone, as it does for any client
            # once the cache has moved on.
            "--watch-cache-sizes=pods#0",
            "--enable-priority-and-fairness=false", "--profiling=false"])
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca = workdir / "certs" / "apiserver.crt"
        self._wait_ready()
        self.kubeconfig = self.write_kubeconfig(READER, READER_TOKEN)

    def _start(self, name: str, argv: list[str]) -> None:
        log = open(self.dir / f"{name}.log", "wb")
        self._logs.append(log)
        self.procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise ApiServerUnavailable(f"{proc.args[0]} exited ({proc.returncode}):\n{self.log_tail()}")
            try:
                if self.request("GET", "/readyz", raw=True) == b"ok":
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError):
                pass
            time.sleep(0.5)
        raise ApiServerUnavailable(f"kube-apiserver not ready after {START_TIMEOUT}s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        return "\n".join((self.dir / f"{n}.log").read_text(errors="replace")[-3000:]
                         for n in ("etcd", "kube-apiserver") if (self.dir / f"{n}.log").exists())

    def _context(self) -> ssl.SSLContext:
        if self.ca.exists():
            return ssl.create_default_context(cafile=str(self.ca))
        ctx = ssl.create_default_context()   # before the server wrote its certificate
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        return ctx

    def request(self, method: str, path: str, body=None, token: str = ADMIN_TOKEN, raw: bool = False,
                content_type: str = "application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {token}", "Content-Type": content_type,
                                              "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self._context(), timeout=30) as resp:
            out = resp.read()
        return out if raw else json.loads(out)

    def create(self, obj: dict) -> dict:
        return self.request("POST", collection(obj), obj)

    def patch(self, obj: dict, change: dict) -> dict:
        return self.request("PATCH", path_of(obj), change, content_type="application/merge-patch+json")

    def delete(self, obj: dict) -> None:
        self.request("DELETE", f"{path_of(obj)}?gracePeriodSeconds=0")

    def clear(self) -> None:
        """Delete every node and every pod (at once: no kubelet would finish a graceful deletion)."""
        for pod in self.request("GET", "/api/v1/pods")["items"]:
            self.delete({"kind": "Pod", **pod})
        self.request("DELETE", "/api/v1/nodes")

    def write_kubeconfig(self, user: str, token: str, namespace: str | None = None) -> Path:
        context = {"cluster": "policylang", "user": user, **({"namespace": namespace} if namespace else {})}
        config = {"apiVersion": "v1", "kind": "Config", "current-context": user,
                  "clusters": [{"name": "policylang", "cluster": {"server": self.url,
                                                                  "certificate-authority": str(self.ca)}}],
                  "users": [{"name": user, "user": {"token": token}}],
                  "contexts": [{"name": user, "context": context}]}
        path = self.dir / f"kubeconfig-{user}"
        path.write_text(yaml.safe_dump(config))
        return path

    def service_account_token(self, namespace: str, name: str, rules: list[dict]) -> str:
        """A service account with a cluster role of these rules only, and a token for it."""
        self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                     {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
        self.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
                     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": name}, "rules": rules})
        self.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                      "metadata": {"name": name},
                      "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                      "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]})
        review = self.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                              {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                               "spec": {"expirationSeconds": 3600}})
        return review["status"]["token"]

    def compact_etcd(self) -> int:
        """Compact etcd's history up to its current revision (which kube-apiserver does every
        five minutes); the revision."""
        def post(path: str, body: dict) -> dict:
            req = urllib.request.Request(self.etcd_url + path, data=json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())
        revision = int(post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        post("/v3/kv/compaction", {"revision": str(revision), "physical": True})
        return revision

    def audit_events(self, user: str) -> list[dict]:
        """The audit log's events of requests by this user (one JSON object a line)."""
        events = []
        for line in self.audit_log.read_text().splitlines():
            event = json.loads(line)
            if (event.get("user") or {}).get("username") == user and event.get("stage") == "ResponseComplete":
                events.append(event)
        return events

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(timeout=5)    # kube-apiserver's graceful shutdown waits on its watches
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in self._logs:
            log.close()


PLURALS = {"Node": "nodes", "Pod": "pods", "Namespace": "namespaces", "PriorityClass": "priorityclasses",
           "Service": "services", "ReplicaSet": "replicasets", "PodDisruptionBudget": "poddisruptionbudgets",
           "DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices", "ResourceClaim": "resourceclaims",
           "ResourceClaimTemplate": "resourceclaimtemplates"}
GROUPS = {"PriorityClass": "/apis/scheduling.k8s.io/v1", "ReplicaSet": "/apis/apps/v1",
          "PodDisruptionBudget": "/apis/policy/v1",
          **dict.fromkeys(("DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"),
                          "/apis/resource.k8s.io/v1")}
CLUSTER_SCOPED = {"Node", "Namespace", "PriorityClass", "DeviceClass", "ResourceSlice"}


def collection(obj: dict) -> str:
    kind = obj["kind"]
    base = GROUPS.get(kind, "/api/v1")
    if kind in CLUSTER_SCOPED:
        return f"{base}/{PLURALS[kind]}"
    namespace = (obj.get("metadata") or {}).get("namespace", "default")
    return f"{base}/namespaces/{namespace}/{PLURALS[kind]}"


def path_of(obj: dict) -> str:
    return f"{collection(obj)}/{obj['metadata']['name']}"
