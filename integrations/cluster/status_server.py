"""The TrainJob status server, as kubeflow/trainer v2.3.0's (``pkg/statusserver``), in the controller.

Off unless ``trainweave controller --trainer-status`` (upstream: the ``TrainJobStatus`` feature
gate, alpha, off by default). HTTPS on ``--trainer-status-bind`` (upstream's port 10443), in
daemon threads; every replica serves it (upstream's ``NeedLeaderElection`` is false). The
request contract, decoding and the status apply are ``trainweave.trainer_status``; here is only
the I/O:

- a body over 64 KiB by its Content-Length: 413, before anything else (upstream's middleware);
- ``POST StatusUrl(ns, name)`` only, else 404;
- the bearer token is checked by a TokenReview with the audience ``TokenAudience(ns, name)``:
  the API server checks signature, expiry and audience against the cluster's own issuer (upstream
  verifies the same with the issuer's OIDC keys, ``auth.go``) and, beyond upstream, that the
  pod or Secret the token is bound to still exists; the token's ServiceAccount must be in ``ns``
  (upstream: the ``kubernetes.io`` namespace claim). Not authenticated: 403. The TrainJob is the
  one the path names, and the audience must name it: a token is good for its own TrainJob only;
- the status is written by server-side apply to ``trainjobs/<name>/status`` (field manager
  ``trainer-status``, forced), so the API server validates it against the TrainJob CRD.

TLS: the serving certificate and its CA from ``--trainer-status-cert-dir`` (``tls.crt``,
``tls.key``, ``ca.crt``: a mounted Secret), else a CA and certificate made at start. The CA goes
to each TrainJob's ``<name>-tls-config`` ConfigMap through the render
(``adapters.trainjob_status``).
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import json
import logging
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase
from pathlib import Path
from typing import Any

from trainweave import trainer_status as ts
from trainweave.adapters.options import Options
from trainweave.integrations.cluster.executor import Renderer, adapters_renderer
from trainweave.integrations.views.requests import api
from trainweave.trainer_status import ServerRef

Json = dict[str, Any]
log = logging.getLogger("trainweave.status-server")
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
APPLY_PATCH = "application/apply-patch+yaml"
READ_TIMEOUT = 10.0  # server.go readTimeout
DEFAULT_SERVICE = "trainweave-controller.trainweave-system.svc"
DEFAULT_BIND = f":{ts.DEFAULT_PORT}"
DEFAULT_URL = f"https://{DEFAULT_SERVICE}:{ts.DEFAULT_PORT}"


@dataclass(frozen=True)
class ServerTLS:
    """PEM files of the serving certificate and key, and the CA's certificate text."""

    cert_file: str
    key_file: str
    ca_pem: str

    @staticmethod
    def from_dir(folder: str) -> ServerTLS:
        """``tls.crt``, ``tls.key``, ``ca.crt`` of a mounted Secret."""
        d = Path(folder)
        return ServerTLS(str(d / "tls.crt"), str(d / "tls.key"), (d / "ca.crt").read_text())

    @staticmethod
    def generate(hosts: list[str], folder: str | None = None) -> ServerTLS:
        """A new CA and a certificate it signs for ``hosts`` (DNS names or IPs), valid a year."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.UTC)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "trainweave-status-ca")])
        ca = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(ca_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(ca_key, hashes.SHA256())
        )
        d = Path(folder or tempfile.mkdtemp(prefix="trainweave-status-tls-"))
        pem = serialization.Encoding.PEM
        (d / "tls.crt").write_bytes(cert.public_bytes(pem))
        (d / "tls.key").write_bytes(
            key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        (d / "tls.key").chmod(0o600)
        (d / "ca.crt").write_bytes(ca.public_bytes(pem))
        return ServerTLS.from_dir(str(d))


def default_hosts(service: str = DEFAULT_SERVICE) -> list[str]:
    """The serving certificate's names: the Service (short and cluster.local), loopback."""
    return [service, f"{service}.cluster.local", "localhost", "127.0.0.1"]


def token_review(token: str, audience: str) -> api.Request:
    """A TokenReview of ``token`` for ``audience``."""
    body = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": [audience]},
    }
    return api.Request("POST", TOKEN_REVIEWS, body=body)


def status_apply(namespace: str, name: str, trainer_status: Json) -> api.Request:
    """Server-side apply of upstream's status patch (field manager trainer-status, forced)."""
    return api.Request(
        "PATCH",
        api.TRAINJOB.path(namespace, name, "status"),
        (("fieldManager", ts.FIELD_MANAGER), ("force", "true")),
        ts.apply_body(namespace, name, trainer_status),
        APPLY_PATCH,
        api.TRAINJOB,
    )


class StatusServer:
    """Answers status updates; ``send`` reaches the API server."""

    def __init__(self, send: api.Send) -> None:
        self.send = send

    def authorized(self, header: str, namespace: str, name: str) -> bool:
        """auth.go Authorize: the token is authenticated for this TrainJob's audience and its
        ServiceAccount is in the TrainJob's namespace. An API failure raises (500)."""
        token = ts.extract_raw_token(header)
        if not token:
            return False
        audience = ts.token_audience(namespace, name)
        status = self.send(token_review(token, audience)).get("status") or {}
        if not status.get("authenticated") or audience not in (status.get("audiences") or []):
            return False
        user = str((status.get("user") or {}).get("username") or "")
        parts = user.split(":")
        return (
            len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[2] == namespace
        )

    def answer(
        self, method: str, path: str, header: str, length: int | None, read: Callable[[], bytes]
    ) -> tuple[int, Json]:
        """The HTTP code and JSON answer of one request (``length``: its Content-Length;
        ``read``: its body, raising ``Refusal`` 422 past the limit)."""
        try:
            return self._answer(method, path, header, length, read)
        except ts.Refusal as refusal:
            return refusal.code, ts.failure(refusal)
        except Exception:  # recoveryMiddleware: never a dropped connection
            log.exception("status update %s %s failed", method, path)
            return ts.INTERNAL.code, ts.failure(ts.INTERNAL)

    def _answer(
        self, method: str, path: str, header: str, length: int | None, read: Callable[[], bytes]
    ) -> tuple[int, Json]:
        if length is not None and length > ts.MAX_BODY_SIZE:
            raise ts.TOO_LARGE
        target = ts.route(method, path)
        if target is None:
            raise ts.NOT_FOUND
        namespace, name = target
        try:
            if not self.authorized(header, namespace, name):
                raise ts.FORBIDDEN
        except api.ApiError as err:
            log.warning("TokenReview failed: %s", err)
            raise ts.INTERNAL from err
        decoded = ts.decode(read())
        if decoded is None:
            return 200, ts.echo(None)
        try:
            self.send(status_apply(namespace, name, decoded))
        except api.ApiError as err:
            refusal = ts.api_refusal(err.status, err.body)
            if refusal is ts.INTERNAL:
                log.warning("status apply %s/%s failed: %s", namespace, name, err)
            raise refusal from err
        return 200, ts.echo(decoded)


def _read_chunked(rfile: BufferedIOBase, limit: int) -> bytes:
    """A chunked body; past ``limit`` bytes a 422 (upstream's MaxBytesReader fails the decode).
    The rest of an over-long body is read and dropped (up to 16 x ``limit``) so the client
    gets the answer, as Go's server drains a small unread body."""
    out, seen = b"", 0
    while True:
        size = int(rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline(1024).strip():  # trailers
                pass
            if seen > limit:
                raise ts.INVALID_PAYLOAD
            return out
        seen += size
        if seen > 16 * limit:
            raise ts.INVALID_PAYLOAD
        data = rfile.read(size)
        if seen <= limit:
            out += data
        rfile.readline(1024)


class _TLSServer(ThreadingHTTPServer):
    daemon_threads = True
    context: ssl.SSLContext

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = self.socket.accept()  # the handshake happens in the handler's thread
        sock.settimeout(READ_TIMEOUT)
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s dropped", client_address, exc_info=True)


def serve(server: StatusServer, bind: str, tls: ServerTLS) -> ThreadingHTTPServer:
    """Serve ``server`` over HTTPS on ``host:port`` in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _any(self) -> None:
            raw = self.headers.get("Content-Length")
            length = int(raw) if raw is not None and raw.isdigit() else None
            chunked = self.headers.get("Transfer-Encoding", "").lower() == "chunked"

            unread = [bool(length) or chunked]

            def read() -> bytes:
                unread[0] = False
                if chunked:
                    return _read_chunked(self.rfile, ts.MAX_BODY_SIZE)
                return self.rfile.read(length) if length else b""

            header = self.headers.get("Authorization") or ""
            code, doc = server.answer(self.command, self.path, header, length, read)
            if unread[0] or code == 413:  # a body left unread: this connection cannot go on
                self.close_connection = True
            data = (json.dumps(doc) + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, *args: object) -> None:
            return

    host, _, port = bind.rpartition(":")
    httpd = _TLSServer((host.strip("[]") or "0.0.0.0", int(port)), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(tls.cert_file, tls.key_file)
    httpd.context = ctx
    threading.Thread(target=httpd.serve_forever, name="status-server", daemon=True).start()
    log.info("status server on https://%s", bind)
    return httpd


def start(
    bind: str, url: str, cert_dir: str | None = None, kubeconfig: str | None = None
) -> ServerRef:
    """Serve the status server (its own API client, as upstream's has its own rate limits) and
    return what the render needs: ``url`` and the CA. Without ``cert_dir``, a CA and serving
    certificate for the URL's host, the default Service names and loopback are made now."""
    from urllib.parse import urlsplit

    from trainweave.integrations.cluster.kube import KubeClient, load_configuration

    if cert_dir:
        tls = ServerTLS.from_dir(cert_dir)
    else:
        host = urlsplit(url).hostname or ""
        hosts = default_hosts()
        tls = ServerTLS.generate(([host] if host and host not in hosts else []) + hosts)
    client = KubeClient(load_configuration(kubeconfig))
    serve(StatusServer(client.send), bind, tls)
    return ServerRef(url, tls.ca_pem)


def renderer(ref: ServerRef, default_queue: str | None) -> Renderer:
    """``executor.adapters_renderer`` with the plugin on (``Options.trainer_status``)."""
    base = adapters_renderer(default_queue)

    def run(trainjob: Json, runtime: Json, options: Options) -> list[Json]:
        return base(trainjob, runtime, dataclasses.replace(options, trainer_status=ref))

    return run
