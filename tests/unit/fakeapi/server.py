"""The fake Kubernetes API server of the unit tier: one in-process object store behind the REST
verbs the controller, the CLI and the status server send. Tests only.

``FakeApi.handle(method, path_with_query, body, content_type)`` answers one request as the API
server does, or raises ``errors.Failure`` (a ``Status`` body); ``FakeApi.watch`` streams a WATCH.
Reach it through ``transport.Transport`` (the ``send``/``stream`` pair the controller takes,
in-process) or ``http.serve`` (a real HTTP server on 127.0.0.1 for ``kube.KubeClient``).

What it models, per resource (``resources.DEFAULT``): GET; LIST with ``labelSelector`` and
paging (``limit``/``continue`` over a snapshot, 410 once the snapshot is dropped); WATCH
(``watch.py``); POST (uid, resourceVersion, creationTimestamp, generation; 409 AlreadyExists;
``generateName``; the status of a kind with a status subresource dropped); PUT (409 Conflict on
a stale resourceVersion); PATCH (merge, strategic on built-ins only, JSON patch, server-side
apply with ``fieldManager`` and ``force``); DELETE with preconditions (uid, resourceVersion: 409),
``propagationPolicy`` (Foreground and Orphan add their finalizers) and finalizers (an object with
finalizers gets a ``deletionTimestamp`` and goes once the last is removed); the ``status``
subresource; ``dryRun=All`` (checked, answered, nothing stored); 422 for invalid names and labels
and whatever a per-kind ``validators`` entry refuses. Not modelled: authorization, admission
webhooks, namespaces' lifecycle, defaulting and schema validation of the CRDs, and the garbage
collector (``collect_garbage`` plays it when a test says so, as tests play Argo and Kueue).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.unit.fakeapi import errors, writes
from tests.unit.fakeapi import watch as watching
from tests.unit.fakeapi.listing import list_page
from tests.unit.fakeapi.resources import DEFAULT, Resource, Routes, Target
from tests.unit.fakeapi.store import Store

Json = dict[str, Any]
Validator = Callable[[Json], list[tuple[str, str]]]
# (method, target, body) before a request is served: raise ``errors.Failure`` to refuse it (as
# RBAC, an admission webhook or an overloaded server does), ``api.ApiError`` of status 0 for a
# connection that breaks, or block to hold it
Hook = Callable[[str, Target, Json | None], None]
APPLY = "application/apply-patch+yaml"


def _never_reviewed(review: Json) -> Json:
    return {"authenticated": False, "error": "no TokenReview answers set on the fake"}


INT64 = 2**63


def as_decoded(value: Any) -> Any:
    """A copy of ``value`` as the API server holds JSON it decoded: an integer beyond int64 is a
    float (Go's ``float64``), a float that JSON cannot carry (nan, inf) is null."""
    if isinstance(value, dict):
        return {str(k): as_decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_decoded(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -INT64 <= value < INT64 else float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


class FakeApi:
    """An in-process API server (see the module doc)."""

    def __init__(
        self,
        resources: tuple[Resource, ...] = DEFAULT,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        history: int = 10000,
        page_size: int | None = None,
    ) -> None:
        """``page_size``: at most that many items a LIST page, whatever its ``limit`` (the
        API conventions let a server return fewer)."""
        self.routes = Routes(resources)
        self.store = Store(history=history)
        self.now = now
        self.validators: dict[str, Validator] = {}  # kind -> field errors (a CRD's schema)
        self.token_review: Callable[[Json], Json] = _never_reviewed  # TokenReview spec -> status
        self.snapshots: dict[str, tuple[int, list[Json]]] = {}
        self.page_size = page_size
        self.hooks: list[Hook] = []

    # --- requests -------------------------------------------------------------------
    def target(self, path: str) -> Target:
        """The resource a path names; 404 for a path nothing serves."""
        found = self.routes.parse(path)
        if found is None:
            raise errors.no_route(path)
        if (found.sub and found.sub != "status") or (
            found.sub == "status" and not found.resource.status
        ):
            raise errors.no_route(path)
        return found

    def handle(self, method: str, url: str, body: Json | None, content_type: str) -> Json:
        """Answer one non-WATCH request (raise ``errors.Failure`` for a non-2xx one)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        t = self.target(parts.path)
        for hook in self.hooks:
            hook(method, t, body)
        if t.resource.create_only:
            if method != "POST" or t.name:
                raise errors.method_not_allowed(method, parts.path)
            return {**(body or {}), "status": self.token_review((body or {}).get("spec") or {})}
        dry = query.get("dryRun") == "All"
        if method == "GET":
            if query.get("watch") in ("true", "1"):
                raise errors.bad_request("a watch is streamed: FakeApi.watch")
            return self.get(t) if t.name else list_page(self, t, query)
        w = writes.Writer(self, t, dry)
        if method == "POST" and not t.name and not t.sub:
            return w.create(body or {})
        if not t.name:
            raise errors.method_not_allowed(method, parts.path)
        if method == "PUT":
            return w.update(body or {})
        if method == "PATCH":
            if content_type == APPLY:
                manager = query.get("fieldManager", "")
                if not manager:
                    raise errors.bad_request("fieldManager is required for apply requests")
                return w.apply(body or {}, manager, query.get("force") == "true")
            return w.patch(body, content_type)
        if method == "DELETE" and not t.sub:
            return w.delete(body or {})
        raise errors.method_not_allowed(method, parts.path)

    def watch(self, url: str, alive: Callable[[], bool], owner: object = None) -> Iterator[Json]:
        """A WATCH's events (``watch.stream``)."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        t = self.target(parts.path)
        if t.name:
            raise errors.method_not_allowed("WATCH", parts.path)
        return watching.stream(self.store, t, query, alive, owner)

    def get(self, t: Target) -> Json:
        """One object (its ``status`` subresource is the same object)."""
        found = self.store.get(t.resource, (t.namespace, t.name))
        if found is None:
            raise errors.not_found(t.resource, t.name)
        return found

    # --- for tests: the state, as engines and other clients leave it ---------------------
    def seed(self, *objs: Json) -> list[Json]:
        """Store objects as other clients and earlier servers left them: status, uid and
        creationTimestamp kept when given, the rest of the server's metadata filled in; checked
        as a create is (422 for an invalid name); returns them as stored."""
        out = []
        for obj in objs:
            kind = str(obj["kind"])
            res = next(r for r in self.routes.by_path.values() if r.kind.kind == kind)
            ns = str((obj.get("metadata") or {}).get("namespace") or "")
            w = writes.Writer(self, Target(res, ns if res.kind.namespaced else ""), False)
            out.append(w.create(as_decoded(obj), seeded=True))
        return out

    def objects(self, kind: str, namespace: str = "") -> list[Json]:
        """Copies of the stored objects of ``kind`` (in ``namespace``; all when ""), by name."""
        res = next(r for r in self.routes.by_path.values() if r.kind.kind == kind)
        with self.store.cond:
            items = sorted(self.store.of(res).items())
            return [copy.deepcopy(o) for (ns, _), o in items if not namespace or ns == namespace]

    def everything(self) -> list[Json]:
        """Copies of every stored object."""
        with self.store.cond:
            return [copy.deepcopy(o) for objs in self.store.objects.values() for o in objs.values()]

    def find(self, kind: str, namespace: str, name: str) -> Json | None:
        """A copy of one stored object, or None."""
        res = next(r for r in self.routes.by_path.values() if r.kind.kind == kind)
        return self.store.get(res, (namespace if res.kind.namespaced else "", name))

    def collect_garbage(self) -> int:
        """One pass of the garbage collector (``writes.collect``); the objects it changed."""
        return writes.collect(self)
