"""The fake API server behind a real HTTP server on 127.0.0.1, for ``kube.KubeClient``. Tests only.

HTTP/1.1 with keep-alive, as the API server: answers are JSON with a Content-Length, errors a
``Status`` body with their code; a WATCH (``?watch=true``) is a chunked stream of one JSON event
a line. ``Served.close`` stops the server and closes every open connection (a watch sees its
stream end, as when an API server restarts).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.server import FakeApi

Json = dict[str, Any]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api: FakeApi) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api = api
        self.closing = threading.Event()
        self.conns: set[socket.socket] = set()
        self.conns_lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.conns_lock:
            self.server.conns.add(self.connection)

    def finish(self) -> None:
        with self.server.conns_lock:
            self.server.conns.discard(self.connection)
        super().finish()

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        return json.loads(data) if data else None

    def _answer(self, code: int, doc: Json) -> None:
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _any(self) -> None:
        api = self.server.api
        try:
            body = self._body()
            if self.command == "GET" and ("watch=true" in self.path or "watch=1" in self.path):
                self._watch(api)
                return
            content_type = self.headers.get("Content-Type") or "application/json"
            self._answer(200, api.handle(self.command, self.path, body, content_type))
        except Failure as err:
            self._answer(err.code, err.body)
        except ValueError as err:  # undecodable JSON
            self._answer(400, Failure(400, "BadRequest", str(err)).body)

    def _watch(self, api: FakeApi) -> None:
        events = api.watch(self.path, lambda: not self.server.closing.is_set(), owner=self)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in events:
                line = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client went away
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any


class Served:
    """A ``FakeApi`` served over HTTP on 127.0.0.1 (an ephemeral port) until ``close``."""

    def __init__(self, api: FakeApi) -> None:
        self.api = api
        self.httpd = _Server(api)
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        """Stop serving; end the open watches and connections."""
        self.httpd.closing.set()
        self.api.store.close_watches()
        self.httpd.shutdown()
        with self.httpd.conns_lock:
            for conn in list(self.httpd.conns):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self.httpd.server_close()
