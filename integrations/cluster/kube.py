"""The one place requests reach the API server (lightkube's ``send`` half).

``KubeClient.send`` takes an ``api.Request`` value and returns the decoded JSON;
``KubeClient.stream`` yields watch events. Connection, TLS and credentials come
from the official ``kubernetes`` client (kubeconfig or in-cluster); requests go
through its urllib3 pool directly, which works the same on kubernetes 31..37
(whose generated ``call_api`` signatures differ). Every request is counted by
verb and resource (``trainweave_api_requests_total``). Answers and watch events are decoded
with ``orjson``: two to four times faster than ``json`` on them, and decoding watch events was
the controller's largest single CPU cost (docs/benchmarks.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
import urllib3

from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views import api

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
        body = json.dumps(req.body).encode() if req.body is not None else None
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
        resp = self._open(req, timeout=60.0, stream=False)
        data = resp.data
        doc: Json = orjson.loads(data) if data else {}
        if not 200 <= resp.status < 300:
            raise api.ApiError(resp.status, str(resp.reason), doc)
        return doc

    def stream(self, req: api.Request) -> Iterator[Json]:
        """Yield watch events (``{type, object}``) until the server closes the watch."""
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
                        yield orjson.loads(line)
        except urllib3.exceptions.HTTPError as err:
            raise api.ApiError(0, type(err).__name__, {"message": str(err)}) from err
        finally:
            resp.release_conn()
