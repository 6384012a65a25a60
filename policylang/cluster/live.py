"""Reading cluster state straight from an API server, read-only, through the official
kubernetes client (imported only when a cluster is read, so dumps need no client).

Every request is a GET (`Reader.get` is the only method that sends one): paginated lists
(``limit``/``continue``, as kubectl's chunked lists) of each kind the loader models, and
watches (``cluster/watch.py``). Each list's items are fed as raw JSON to the dump loader
(`load.objects_from_documents`), so a live cluster and a dump are decoded by the same code.
A kind the credentials may not list (403) or the server does not serve (404) is a warning that
says what is then not modelled; Nodes and Pods are needed for any answer, so for them it is an
error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, Optional

from ..diagnostics import InputError
from ..frozen import frozen
from ..inputs import json_document, read_bytes

PAGE_SIZE = 500     # kubectl's --chunk-size default
REQUEST_TIMEOUT = 60
LIST_ATTEMPTS = 3   # a list whose continue token expires is started over, this many times at most


@frozen
class Kind:
    kind: str
    group_version: str      # "v1" for the core group
    plural: str
    namespaced: bool
    unmodelled: str         # what a state without this kind does not model

    @property
    def path(self) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        return f"{base}/{self.plural}"

    @property
    def resource(self) -> str:
        """The resource as RBAC and kubectl name it: plural.group."""
        group = self.group_version.rpartition("/")[0]
        return f"{self.plural}.{group}" if group else self.plural


# Every kind `load.KINDS` models, in the order a dump lists them (nodes first: their order is
# the node tree's). Dynamic Resource Allocation's four kinds (resource.k8s.io/v1) come before the
# pods whose claims they answer; a server without that API group (404) is warned about.
KINDS: tuple[Kind, ...] = (
    Kind("Node", "v1", "nodes", False, "nothing can be decided without nodes"),
    Kind("Namespace", "v1", "namespaces", False,
         "namespace labels are not modelled: a pod affinity term's namespaceSelector matches no namespace"),
    Kind("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", False,
         "priority classes are not modelled: a pod without spec.priority has priority 0"),
    Kind("Service", "v1", "services", True,
         "services are not modelled: default topology spreading ignores the pods they select"),
    Kind("ReplicationController", "v1", "replicationcontrollers", True,
         "replication controllers are not modelled: default topology spreading ignores the pods they own"),
    Kind("ReplicaSet", "apps/v1", "replicasets", True,
         "replica sets are not modelled: default topology spreading ignores the pods they own"),
    Kind("StatefulSet", "apps/v1", "statefulsets", True,
         "stateful sets are not modelled: default topology spreading ignores the pods they own"),
    Kind("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True,
         "disruption budgets are not modelled: preemption chooses victims as if no budget protected them"),
    Kind("StorageClass", "storage.k8s.io/v1", "storageclasses", False,
         "storage classes are not modelled: claims that wait for a first consumer or need provisioning fail"),
    Kind("PersistentVolume", "v1", "persistentvolumes", False,
         "persistent volumes are not modelled: unbound claims find no volume, bound ones no node affinity"),
    Kind("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True,
         "claims are not modelled: pods that use a PersistentVolumeClaim are unschedulable (claim not found)"),
    Kind("CSINode", "storage.k8s.io/v1", "csinodes", False,
         "CSI nodes are not modelled: no per-node CSI volume limit is enforced"),
    Kind("CSIDriver", "storage.k8s.io/v1", "csidrivers", False,
         "CSI drivers are not modelled: every CSI volume is taken to need attaching"),
    Kind("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities", True,
         "storage capacity is not modelled: provisioning is taken to fit anywhere"),
    Kind("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", False,
         "volume attachments are not modelled: volumes already attached do not count against CSI limits"),
    Kind("DeviceClass", "resource.k8s.io/v1", "deviceclasses", False,
         "device classes are not modelled: every pod that claims devices is unschedulable (class does not exist)"),
    Kind("ResourceSlice", "resource.k8s.io/v1", "resourceslices", False,
         "resource slices are not modelled: no node has devices to allocate"),
    Kind("ResourceClaimTemplate", "resource.k8s.io/v1", "resourceclaimtemplates", True,
         "claim templates are not modelled: simulate makes no claims for pods that name one"),
    Kind("ResourceClaim", "resource.k8s.io/v1", "resourceclaims", True,
         "resource claims are not modelled: pods that use one are unschedulable (claim not found), and no "
         "device is in use"),
    Kind("Pod", "v1", "pods", True, "nothing can be decided without pods"),
)
REQUIRED = ("Node", "Pod")


@frozen
class ClusterSource:
    """Where to read: a kubeconfig (the file or KUBECONFIG's list when None) and a context in
    it (its current one when None), or the pod's own service account (in-cluster)."""
    kubeconfig: Optional[str] = None
    context: Optional[str] = None
    in_cluster: bool = False


class Gone(Exception):
    """410 Gone: a continue token or a watch's resourceVersion is too old; list again."""


class Forbidden(Exception):
    """403: the credentials may not list this kind."""


class NotServed(Exception):
    """404: the server does not serve this kind (its API group is off, or older)."""


@frozen
class Listed:
    """One kind as listed: its items (raw, each with kind and apiVersion) and the list's resourceVersion."""
    kind: Kind
    items: tuple
    resource_version: str


def _client_modules():
    try:
        import kubernetes.client
        import kubernetes.config
    except ImportError:
        raise InputError("reading a cluster needs the kubernetes Python client: pip install kubernetes") from None
    return kubernetes.client, kubernetes.config


def kubeconfig_paths(source: ClusterSource) -> list[str]:
    """The kubeconfig files kubectl would read: --kubeconfig, else KUBECONFIG's list, else ~/.kube/config."""
    if source.kubeconfig:
        return [source.kubeconfig]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [p for p in env.split(os.pathsep) if p]
    return [str(Path("~/.kube/config").expanduser())]


class Reader:
    """A connection to one API server that only ever sends GET requests."""

    def __init__(self, source: ClusterSource, pool_size: int = 4):
        client, config = _client_modules()
        self._client_mod = client
        self.default_namespace = "default"
        try:
            if source.in_cluster or (not source.kubeconfig and _in_pod_without_kubeconfig()):
                configuration = client.Configuration()
                config.load_incluster_config(client_configuration=configuration)
                configuration.connection_pool_maxsize = pool_size
                self.api = client.ApiClient(configuration)
                self.default_namespace = _in_cluster_namespace()
            else:
                paths = kubeconfig_paths(source)
                for path in paths:
                    if source.kubeconfig or os.path.exists(path):
                        read_bytes(path)    # bounded, a regular file, never /proc: before the client reads it
                if not any(os.path.exists(p) for p in paths):
                    raise InputError("no kubeconfig found (give --kubeconfig, set KUBECONFIG, or --in-cluster)",
                                     path=paths[0])
                name = paths[0] if source.kubeconfig else os.pathsep.join(paths)
                configuration = client.Configuration()
                config.load_kube_config(config_file=name, context=source.context,
                                        client_configuration=configuration)
                configuration.connection_pool_maxsize = pool_size
                self.api = client.ApiClient(configuration)
                self.default_namespace = _context_namespace(config, name, source.context)
        except InputError:
            raise
        except Exception as err:  # noqa: BLE001 - the client's own parsing of the user's kubeconfig
            # ConfigException for a missing context or user; a malformed file makes the client
            # fail in other ways (KeyError, TypeError, a YAML error, a missing certificate file).
            where = "in-cluster configuration" if source.in_cluster else os.pathsep.join(kubeconfig_paths(source))
            message = " ".join(str(err).split())[:300]
            raise InputError(f"cannot use the cluster configuration: {message}", path=where) from None
        self.api.user_agent = "policylang"
        self.host = self.api.configuration.host.rstrip("/")

    def close(self) -> None:
        self.api.close()

    def get(self, path: str, query: list[tuple[str, str]], stream: bool = False, timeout: float = REQUEST_TIMEOUT):
        """The one request this module sends: GET path?query. Returns the urllib3 response
        (streaming) or its JSON document."""
        import urllib3

        try:
            resp = self._send(path, query, timeout)
        except urllib3.exceptions.HTTPError as err:
            raise InputError(f"cannot reach the API server: {_reason(err)}", path=self.host) from None
        status = resp.status
        if status >= 300:
            body = resp.data
            resp.release_conn()
            if status == 410:
                raise Gone(_message(body, "410 Gone"))
            if status == 403:
                raise Forbidden(_message(body, "403 Forbidden"))
            if status == 404:
                raise NotServed(_message(body, "404 Not Found"))
            if status == 401:
                raise InputError("the API server refused the credentials (401 Unauthorized)", path=self.host)
            raise InputError(f"the API server answered {status}: {_message(body, '')}", path=self.host + path)
        if stream:
            return resp
        try:
            text = resp.data.decode("utf-8")
        finally:
            resp.release_conn()
        return json_document(text, self.host + path)

    def _send(self, path: str, query: list[tuple[str, str]], timeout: float):
        """GET through the client, which adds its credentials (refreshing an exec plugin's token);
        the urllib3 response, whatever its status. The client's generations differ here: since
        v35 `param_serialize` builds the request and `call_api` sends it; before, `call_api` did both."""
        headers = {"Accept": "application/json"}
        if hasattr(self.api, "param_serialize"):
            method, url, headers, body, post = self.api.param_serialize(
                "GET", path, query_params=query, header_params=headers, auth_settings=["BearerToken"])
            return self.api.call_api(method, url, headers, body, post, _request_timeout=timeout).response
        exc = self._client_mod.exceptions.ApiException
        try:
            resp = self.api.call_api(path, "GET", query_params=query, header_params=headers,
                                     auth_settings=["BearerToken"], _preload_content=False,
                                     _request_timeout=timeout)
        except exc as err:
            return _Failed(err.status, (err.body or b"") if isinstance(err.body, bytes) else
                           str(err.body or err.reason).encode())
        return resp[0] if isinstance(resp, tuple) else resp

    def list(self, kind: Kind, namespace: Optional[str] = None, field_selector: Optional[str] = None,
             on_page: Optional[Callable[[int], None]] = None) -> Listed:
        """Every object of a kind, page by page; a continue token that expires (410) starts the list over."""
        path = kind.path if namespace is None else kind.path.replace(f"/{kind.plural}",
                                                                     f"/namespaces/{namespace}/{kind.plural}")
        for _ in range(LIST_ATTEMPTS):
            items: list = []
            token = ""
            try:
                while True:
                    query = [("limit", str(PAGE_SIZE))]
                    if token:
                        query.append(("continue", token))
                    if field_selector is not None:
                        query.append(("fieldSelector", field_selector))
                    page = self.get(path, query)
                    items += [{"apiVersion": kind.group_version, "kind": kind.kind, **item}
                              for item in page.get("items") or []]
                    if on_page:
                        on_page(len(items))
                    meta = page.get("metadata") or {}
                    token = meta.get("continue") or ""
                    if not token:
                        return Listed(kind, tuple(items), meta.get("resourceVersion") or "")
            except Gone:
                continue
        raise InputError(f"listing {kind.resource} failed {LIST_ATTEMPTS} times: its continue token kept "
                         "expiring (410 Gone)", path=self.host)

    def watch(self, kind: Kind, resource_version: str, timeout_seconds: int = 300,
              on_open: Optional[Callable] = None) -> Iterator[dict]:
        """The watch events of a kind from resource_version on (GET ?watch=1), as the server sends
        them, until the server ends the watch; Gone when resource_version is too old."""
        import json

        query = [("watch", "1"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true"),
                 ("timeoutSeconds", str(timeout_seconds))]
        resp = self.get(kind.path, query, stream=True, timeout=timeout_seconds + 30)
        if on_open:
            on_open(kind, resp)
        try:
            buffer = b""
            for chunk in resp.stream(65536, decode_content=True):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if event.get("type") == "ERROR":
                        status = event.get("object") or {}
                        if status.get("code") == 410:
                            raise Gone(status.get("message", "410 Gone"))
                        raise InputError(f"watch of {kind.resource} failed: {status.get('message', status)}",
                                         path=self.host)
                    yield event
        finally:
            resp.release_conn()


def _context_namespace(config, name: str, context: Optional[str]) -> str:
    contexts, active = config.list_kube_config_contexts(config_file=name)
    chosen = next((c for c in contexts if c["name"] == context), None) if context else active
    return ((chosen or {}).get("context") or {}).get("namespace") or "default"


def context_namespace(source: ClusterSource) -> str:
    """The namespace kubectl would act in for this source: the context's, else default."""
    _, config = _client_modules()
    if source.in_cluster or (not source.kubeconfig and _in_pod_without_kubeconfig()):
        return _in_cluster_namespace()
    paths = [p for p in kubeconfig_paths(source) if os.path.exists(p)]
    if not paths:
        return "default"
    for path in paths:
        read_bytes(path)
    try:
        return _context_namespace(config, os.pathsep.join(paths), source.context)
    except config.ConfigException as err:
        raise InputError(f"cannot use the cluster configuration: {err}", path=paths[0]) from None


def _in_pod_without_kubeconfig() -> bool:
    """kubectl's fallback: no kubeconfig anywhere, but a pod's service account is mounted."""
    return (bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
            and not any(os.path.exists(p) for p in kubeconfig_paths(ClusterSource())))


def _in_cluster_namespace() -> str:
    path = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
    try:
        return read_bytes(path).decode().strip() or "default"
    except (InputError, UnicodeDecodeError):
        return "default"


@frozen
class _Failed:
    """An error answer as the older clients raise it, shaped as a response."""
    status: int
    data: bytes

    def release_conn(self) -> None:
        pass


def _message(body: bytes, default: str) -> str:
    """A Status object's message, else the body's start."""
    import json

    try:
        return str(json.loads(body).get("message") or default)[:500]
    except (TypeError, ValueError, AttributeError, UnicodeDecodeError):
        return (body[:200].decode("utf-8", "replace") if body else "") or default


def _reason(err) -> str:
    reason = getattr(err, "reason", None) or err
    return " ".join(str(reason).split())[:300]


@frozen
class Read:
    """What a read got: every kind listed (raw items), and a warning for each kind that was not."""
    host: str
    listed: tuple[Listed, ...]
    warnings: tuple[str, ...]

    def documents(self) -> list[dict]:
        return [item for one in self.listed for item in one.items]


def warning_for(kind: Kind, status: str) -> str:
    return f"warning: cannot list {kind.resource} ({status}); {kind.unmodelled}"


def read_cluster(reader: Reader, namespace: Optional[str] = None,
                 progress: Optional[Callable[[str, int, int, int], None]] = None) -> Read:
    """List every kind of KINDS. With ``namespace``, pending pods are read from that namespace
    only (bound pods, which take nodes' room, always from all)."""
    listed, warnings = [], []
    total = len(KINDS)
    for number, kind in enumerate(KINDS, 1):
        def on_page(count: int, kind=kind, number=number) -> None:
            if progress:
                progress(kind.kind, number, total, count)
        on_page(0)
        try:
            if kind.kind == "Pod" and namespace is not None:
                bound = reader.list(kind, field_selector="spec.nodeName!=", on_page=on_page)
                pending = reader.list(kind, namespace=namespace, field_selector="spec.nodeName=", on_page=on_page)
                listed += [bound, pending]
            else:
                listed.append(reader.list(kind, on_page=on_page))
        except Forbidden:
            if kind.kind in REQUIRED:
                raise InputError(f"not allowed to list {kind.resource} (403 Forbidden): {kind.unmodelled}",
                                 path=reader.host) from None
            warnings.append(warning_for(kind, "403 Forbidden, verb list"))
        except NotServed:
            if kind.kind in REQUIRED:
                raise InputError(f"the server does not serve {kind.resource} (404 Not Found)",
                                 path=reader.host) from None
            warnings.append(warning_for(kind, "404 Not Found: the server does not serve it"))
    return Read(reader.host, tuple(listed), tuple(warnings))


def load_live(source: ClusterSource, namespace: Optional[str] = None, progress=None):
    """The ClusterState of a live cluster (`read_cluster` then the dump loader), the reader's
    default namespace (the context's), and what was read (its ``warnings``: the kinds that could
    not be listed, for the caller to show)."""
    from .load import load_documents

    reader = Reader(source)
    try:
        read = read_cluster(reader, namespace, progress)
    finally:
        reader.close()
    state = load_documents(read.host, read.documents())
    return state, reader.default_namespace, read
