"""`policylang serve` as a child process on a free loopback port, for the tests over real HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = Path(__file__).parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, args: list, workdir: Path, env: "dict | None" = None, timeout: float = 60,
                 ca: "Path | None" = None, client_cert: "tuple | None" = None):
        """``ca``: serve is given --tls-cert/--tls-key in ``args``; this CA verifies it;
        ``client_cert``: (cert, key) this client presents."""
        self.port = free_port()
        self.url = f"{'https' if ca else 'http'}://127.0.0.1:{self.port}"
        self._context = ssl.create_default_context(cafile=str(ca)) if ca else None
        if client_cert is not None:
            self._context.load_cert_chain(*client_cert)
        self.log_path = workdir / "serve.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "policylang.cli", "serve", "--port", str(self.port), *args],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited ({self.proc.returncode}):\n{self.log()}")
            try:
                if self.get("/readyz")[0] == 200:
                    return
            except (OSError, ssl.SSLError):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"serve not ready after {timeout}s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def request(self, method: str, path: str, data: "bytes | None" = None, headers: "dict | None" = None):
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30, context=self._context) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def get(self, path: str):
        return self.request("GET", path)

    def post(self, path: str, body) -> tuple:
        status, raw = self.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        return status, (json.loads(raw) if status == 200 else raw.decode())

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def certificates(tmp: Path) -> tuple:
    """A CA, and a certificate and key it signed for 127.0.0.1 (tls.crt, tls.key), made with
    openssl in ``tmp``; also a client certificate it signed (client.crt, client.key)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-subj", "/CN=policylang-test-ca", "-days", "1")
    (tmp / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    for name, cn in (("tls", "127.0.0.1"), ("client", "kube-scheduler")):
        openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                "-subj", f"/CN={cn}")
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", f"{name}.crt", "-days", "1", "-extfile", "san.cnf")
    return tmp / "tls.crt", tmp / "tls.key", tmp / "ca.crt"
