"""The one place requests reach the API server (lightkube's ``send`` half).

``KubeClient.send`` takes an ``api.Request`` value and returns the decoded JSON;
``KubeClient.stream`` yields watch events. Connection, TLS and credentials come
from the official ``kubernetes`` client (kubeconfig or in-cluster). Watches go
through its urllib3 pool directly, which works the same on kubernetes 31..37
(whose generated ``call_api`` signatures differ). Other requests go over one kept-alive
``http.client`` connection per thread, TLS set up from the same configuration: half the CPU
of a urllib3 request (docs/benchmarks.md); a configuration with a proxy, ``tls_server_name``
or a string ``assert_hostname`` keeps the urllib3 pool. Every request is counted by
verb and resource (``trainweave_api_requests_total``). Answers and watch events are decoded
with ``orjson``: two to four times faster than ``json`` on them, and decoding watch events was
the controller's largest single CPU cost (docs/benchmarks.md).
"""

from __future__ import annotations

import http.client
import select
import ssl
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import orjson
import urllib3

from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.requests import api

Json = dict[str, Any]


def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ``kubernetes.client.Configuration``: kubeconfig if given/found, else in-cluster."""
    from kubernetes import client, config

    cfg = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=cfg
        )
    except (config.ConfigException, FileNotFoundError, TypeError):
        if kubeconfig:
            raise
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    return cfg


class KubeClient:
    """Sends Requests with the credentials of a kubernetes ``Configuration``."""

    def __init__(self, configuration: Any, metrics: Metrics | None = None) -> None:
        from kubernetes import client

        self.configuration = configuration
        self.api_client = client.ApiClient(configuration)
        self.pool: urllib3.PoolManager = self.api_client.rest_client.pool_manager
        self.metrics = metrics
        self.direct = direct_connection(configuration)
        self._local = threading.local()

    def _headers(self, req: api.Request) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": "trainweave-controller"}
        if req.body is not None:
            headers["Content-Type"] = req.content_type
        for auth in self.configuration.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                headers[auth["key"]] = auth["value"]
        return headers

    def _open(self, req: api.Request, timeout: float | None, stream: bool) -> Any:
        if self.metrics is not None:
            self.metrics.request(req)
        body = orjson.dumps(req.body) if req.body is not None else None
        try:
            return self.pool.request(
                req.method,
                self.configuration.host + req.url_path,
                body=body,
                headers=self._headers(req),
                preload_content=not stream,
                timeout=urllib3.Timeout(connect=10.0, read=timeout),
                retries=False,
            )
        except urllib3.exceptions.HTTPError as err:
            raise api.ApiError(0, type(err).__name__, {"message": str(err)}) from err

    def send(self, req: api.Request) -> Json:
        """Send one request; raise ``api.ApiError`` on a non-2xx answer."""
        if self.direct is None:
            resp = self._open(req, timeout=60.0, stream=False)
            status, reason, data = resp.status, resp.reason, resp.data
        else:
            status, reason, data = self._send_direct(req)
        doc: Json = orjson.loads(data) if data else {}
        if not 200 <= status < 300:
            raise api.ApiError(status, str(reason), doc)
        return doc

    def _send_direct(self, req: api.Request) -> tuple[int, str, bytes]:
        """(status, reason, body) over this thread's kept-alive connection. A connection the
        server closed while idle is replaced before the request; a failure during it is an
        ``ApiError`` of status 0, as on the urllib3 path (no retry: a write may have landed)."""
        assert self.direct is not None
        if self.metrics is not None:
            self.metrics.request(req)
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None or (conn.sock is not None and _readable(conn.sock)):
            if conn is not None:
                conn.close()
            conn = self.direct()
            self._local.conn = conn
        body = orjson.dumps(req.body) if req.body is not None else None
        try:
            conn.request(req.method, req.url_path, body=body, headers=self._headers(req))
            resp = conn.getresponse()
            return resp.status, resp.reason, resp.read()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            message = f"{self.configuration.host}: {err}"
            raise api.ApiError(0, type(err).__name__, {"message": message}) from err

    def stream(self, req: api.Request) -> Iterator[Json]:
        """Yield watch events (``{type, object}``) until the server closes the watch. A dropped
        connection, a reset or a line that is no JSON object ends it with ``api.ApiError`` of
        status 0 (the informer relists)."""
        resp = self._open(req, timeout=330.0, stream=True)
        try:
            if not 200 <= resp.status < 300:
                data = resp.read()
                raise api.ApiError(resp.status, str(resp.reason), orjson.loads(data or b"{}"))
            rest = b""
            for chunk in resp.stream(65536, decode_content=True):
                *lines, rest = (rest + chunk).split(b"\n")  # one event a line; the last may be cut
                for line in lines:
                    if line.strip():
                        yield _event(line)
            # a last line cut by the server's close is dropped: the watch resumes from the last
            # whole event's resourceVersion, and the server sends the cut one again
        except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError) as err:
            raise api.ApiError(0, type(err).__name__, {"message": str(err)}) from err
        finally:
            resp.release_conn()


def _event(line: bytes) -> Json:
    """One watch line as its event; a line that is no JSON object is a broken stream
    (``api.ApiError`` of status 0: the informer relists)."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise api.ApiError(0, "BadWatchEvent", {"message": f"{err}: {line[:200]!r}"}) from err
    if not isinstance(event, dict):
        raise api.ApiError(0, "BadWatchEvent", {"message": f"not an event: {line[:200]!r}"})
    return event


def _readable(sock: Any) -> bool:
    """An idle kept-alive socket is readable only when the server closed it (or broke the
    protocol): either way it is not to be used again. ``poll`` where there is one: ``select``
    refuses file descriptors above 1023."""
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([sock], [], [], 0.0)[0])


def direct_connection(cfg: Any) -> Any:
    """A maker of ``http.client`` connections to ``cfg.host`` with ``cfg``'s TLS settings, or
    None when ``cfg`` needs what only the urllib3 pool does (a proxy, another TLS server name,
    a hostname to assert other than the host's)."""
    url = urlsplit(cfg.host)
    if cfg.proxy or cfg.tls_server_name or isinstance(cfg.assert_hostname, str) or not url.hostname:
        return None
    host, port = url.hostname, url.port
    if url.scheme == "http":
        return lambda: http.client.HTTPConnection(host, port, timeout=60.0)
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert, cadata=cfg.ca_cert_data)
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    if not cfg.verify_ssl or cfg.assert_hostname is False:
        ctx.check_hostname = False
    if not cfg.verify_ssl:
        ctx.verify_mode = ssl.CERT_NONE
    return lambda: http.client.HTTPSConnection(host, port, timeout=60.0, context=ctx)
