"""KubeClient.send over a kept-alive http.client connection, against a real local HTTP server:
answers decoded, errors kept, a connection the server closed while idle replaced."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from kubernetes import client

from trainweave.integrations.cluster.kube import KubeClient, direct_connection
from trainweave.integrations.views.requests import api


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server
    seen: ClassVar[list[tuple[str, str, Any, int]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        # the client port tells whether the connection was reused
        self.seen.append((self.command, self.path, body, self.client_address[1]))
        status = 404 if self.path.endswith("/missing") else 200
        data = json.dumps({"path": self.path, "body": body}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.path.endswith("/close"):
            self.send_header("Connection", "close")
            self.close_connection = True
        if self.path.endswith("/drop"):  # closed after the answer, unannounced (an idle timeout)
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    Handler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _kube(httpd: ThreadingHTTPServer) -> KubeClient:
    kube = KubeClient(client.Configuration(host=f"http://127.0.0.1:{httpd.server_address[1]}"))
    assert kube.direct is not None
    return kube


def test_answers_are_decoded_over_one_kept_alive_connection(server: ThreadingHTTPServer) -> None:
    kube = _kube(server)
    got = kube.send(api.Request("PATCH", "/a", body={"x": [1, 2]}))
    assert got == {"path": "/a", "body": {"x": [1, 2]}}
    kube.send(api.Request("GET", "/b", query=(("labelSelector", "a=b"),)))
    (m1, p1, _, port1), (m2, p2, _, port2) = Handler.seen
    assert (m1, p1, m2, p2) == ("PATCH", "/a", "GET", "/b?labelSelector=a%3Db")
    assert port1 == port2


def test_a_non_2xx_answer_is_an_api_error_with_its_body(server: ThreadingHTTPServer) -> None:
    with pytest.raises(api.ApiError) as err:
        _kube(server).send(api.Request("GET", "/missing"))
    assert (err.value.status, err.value.reason) == (404, "Not Found")


def test_a_connection_the_server_closed_is_replaced(server: ThreadingHTTPServer) -> None:
    kube = _kube(server)
    kube.send(api.Request("GET", "/close"))
    kube.send(api.Request("GET", "/after"))
    ports = [port for *_, port in Handler.seen]
    assert ports[0] != ports[1]


def test_a_connection_dropped_while_idle_is_replaced_before_the_next_request(
    server: ThreadingHTTPServer,
) -> None:
    """The server closes the kept-alive connection without saying so, as an API server's idle
    timeout does; the next request goes on a new connection instead of failing on the old."""
    kube = _kube(server)
    kube.send(api.Request("GET", "/drop"))
    conn = kube._local.conn
    deadline = time.monotonic() + 10
    while not _closed_by_peer(conn.sock) and time.monotonic() < deadline:
        time.sleep(0.01)  # polls the socket for the server's close, bounded by the deadline
    assert kube.send(api.Request("PATCH", "/after", body={"a": 1}))["body"] == {"a": 1}
    ports = [port for *_, port in Handler.seen]
    assert ports[0] != ports[1]


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False


def test_no_server_is_an_api_error_of_status_0() -> None:
    with socket.socket() as sock:  # a port nothing listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kube = KubeClient(client.Configuration(host=f"http://127.0.0.1:{port}"))
    with pytest.raises(api.ApiError) as err:
        kube.send(api.Request("GET", "/a"))
    assert (err.value.status, err.value.reason) == (0, "ConnectionRefusedError")


@pytest.mark.parametrize(
    ("settings", "direct"),
    [
        ({}, True),
        ({"verify_ssl": False}, True),
        ({"proxy": "http://proxy:3128"}, False),
        ({"tls_server_name": "kubernetes.default"}, False),
        ({"assert_hostname": "kubernetes.default"}, False),
    ],
    ids=["plain", "no-verify", "proxy", "tls-server-name", "assert-hostname"],
)
def test_what_only_urllib3_does_keeps_urllib3(settings: dict[str, Any], direct: bool) -> None:
    cfg = client.Configuration(host="https://127.0.0.1:6443")
    for key, value in settings.items():
        setattr(cfg, key, value)
    assert (direct_connection(cfg) is not None) is direct
