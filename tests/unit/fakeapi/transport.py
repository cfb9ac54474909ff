"""The fake API server reached in-process: the ``send``/``stream`` pair ``Controller``, ``Executor``
and the CLI take (``api.Send``), as ``kube.KubeClient`` gives them. Tests only.

Bodies go through JSON both ways with ``orjson``, as ``KubeClient`` encodes and decodes them; a
non-2xx answer is ``api.ApiError(code, HTTP reason phrase, Status body)``, as ``KubeClient``
raises it. Every request is recorded (``sent``). A transport can be cut, as the process behind it
dying: its watches end and every later request fails with status 0; ``crash_after_writes=N``
cuts it right after its N-th write (Lease and Event writes not counted), before the answer
reaches the caller, as a process killed there.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import orjson

from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.server import FakeApi
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
UNCOUNTED = frozenset({api.LEASE.plural, api.EVENT.plural})
PLURALS = frozenset(k.plural for k in api.BY_KIND.values())


def resource(req: api.Request) -> str:
    """The plural a request path names ("?" when none of the known ones)."""
    return next((p for p in req.path.split("/") if p in PLURALS), "?")


class Transport:
    """One client's connection to a ``FakeApi``."""

    @staticmethod
    def of(*objs: Json, **options: Any) -> Transport:
        """A transport to a new ``FakeApi(**options)`` holding ``objs`` (``FakeApi.seed``)."""
        server = FakeApi(**options)
        server.seed(*objs)
        return Transport(server)

    def __init__(self, server: FakeApi, crash_after_writes: int | None = None) -> None:
        self.server = server
        self.crash_after = crash_after_writes
        self.sent: list[api.Request] = []
        self.writes = 0  # counted writes (not Leases or Events)
        self.dead = False
        self.crashed = False  # cut by ``crash_after_writes``
        self.lock = threading.Lock()

    def __call__(self, req: api.Request) -> Json:
        """``send``: one request, its decoded answer."""
        return self.send(req)

    def send(self, req: api.Request) -> Json:
        """One request, its decoded answer; ``api.ApiError`` for a non-2xx one. Requests run
        concurrently, except on a transport that is to crash: one at a time there, so no write
        lands after the one it crashes on."""
        if self.crash_after is None:
            return self._send(req)
        with self.lock:
            return self._send(req)

    def _send(self, req: api.Request) -> Json:
        body = orjson.loads(orjson.dumps(req.body)) if req.body is not None else None
        if self.dead:
            raise api.ApiError(0, "ConnectionRefusedError", {"message": "the client is gone"})
        self.sent.append(req)
        try:
            out = self.server.handle(req.method, req.url_path, body, req.content_type)
        except Failure as err:
            raise api.ApiError(err.code, err.phrase, err.body) from None
        if req.is_write and resource(req) not in UNCOUNTED:
            self.writes += 1
            if self.crash_after is not None and self.writes >= self.crash_after:
                self.crashed = True
                self.cut()
                raise api.ApiError(0, "Crashed", {"message": f"crashed after write {self.writes}"})
        decoded: Json = orjson.loads(orjson.dumps(out))
        return decoded

    def stream(self, req: api.Request) -> Iterator[Json]:
        """A WATCH's events, until the server ends it or the transport is cut."""
        if self.dead:
            raise api.ApiError(0, "ConnectionRefusedError", {"message": "the client is gone"})
        self.sent.append(req)
        try:
            events = self.server.watch(req.url_path, lambda: not self.dead, owner=self)
        except Failure as err:
            raise api.ApiError(err.code, err.phrase, err.body) from None
        for event in events:
            if self.dead:
                return
            yield orjson.loads(orjson.dumps(event))

    def cut(self) -> None:
        """The client is gone: its watches end, its later requests fail."""
        self.dead = True
        self.server.store.close_watches(self)

    def quiet(self, watches: int) -> bool:
        """``watches`` watches of this client are open and each has been read to the end."""
        return self.server.store.quiet(self, watches)

    @property
    def write_requests(self) -> list[api.Request]:
        """The writes sent, in order (watches and reads left out)."""
        return [r for r in self.sent if r.is_write]
