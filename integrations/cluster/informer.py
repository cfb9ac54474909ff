"""List+watch caches and a work queue (client-go's reflector/store/workqueue, small).

An ``Informer`` lists a resource, then watches from the list's resourceVersion
(bookmarks on), resumes from the last seen version when the server closes the
watch, and relists on ``410 Gone`` or any error (after a backoff). Each change
calls ``on_change(obj)``, except a watch event whose kept object (``transform``) differs
from the cached one only in ``resourceVersion`` (stored, no one told: a Workflow's progress
or a pod's container statuses move, which no reconcile reads), and a relisted object the
cache already holds at that resourceVersion; the store is a dict with optional secondary
indexes.

One object never stops the informer: an exception while keeping or indexing it, or in
``on_change``, goes to ``on_error(obj, err)`` and the object is skipped (the cache keeps what it
had for that key). Any other exception (a watch line that is not JSON, a dropped connection) ends
the watch and relists after the backoff. ``last_success`` is the ``clock()`` time of the last
LIST, watch event or cleanly closed watch: ``stale_after`` seconds without one (twice the
watch's ``api.WATCH_TIMEOUT``, which closes a healthy idle watch) is an informer that is not
keeping up (``/readyz``, ``trainweave_informer_seconds_since_success``).
``WorkQueue`` hands each key to one worker at a time, coalesces duplicates, holds a new key
for a short settle time so the burst of events one engine change causes is one reconcile, and
delays retries with per-key exponential backoff.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from trainweave.integrations.views.requests import api

Json = dict[str, Any]
Key = tuple[str, str]
log = logging.getLogger("trainweave.controller")
STALE_AFTER = 2.0 * api.WATCH_TIMEOUT  # seconds without a LIST or watch event: not keeping up


def _log_error(obj: Json, err: Exception) -> None:
    log.warning("object %s skipped: %s", "/".join(key_of(obj)), err)


def key_of(obj: Json) -> Key:
    """(namespace, name)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "", ""
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def same_but_version(old: Json, new: Json) -> bool:
    """``old`` and ``new`` (both as the cache keeps them) differ in ``resourceVersion`` at most:
    the change was to fields the transform dropped, which no reconcile reads."""
    if old.keys() != new.keys():
        return False
    for k, v in old.items():
        if k != "metadata" and new[k] != v:
            return False
    a, b = old.get("metadata") or {}, new.get("metadata") or {}
    if a.keys() != b.keys():
        return False
    return all(v == b[k] for k, v in a.items() if k != "resourceVersion")


class Informer:
    """A watched cache of one resource kind."""

    def __init__(
        self,
        send: api.Send,
        stream: Callable[[api.Request], Iterator[Json]],
        kind: api.Kind,
        *,
        namespace: str = "",
        selector: str = "",
        on_change: Callable[[Json], None] = lambda obj: None,
        indexes: dict[str, Callable[[Json], list[str]]] | None = None,
        transform: Callable[[Json], Json] = lambda obj: obj,
        on_error: Callable[[Json, Exception], None] = _log_error,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.send, self.stream, self.kind = send, stream, kind
        self.namespace, self.selector = namespace, selector
        self.on_change = on_change
        self.on_error = on_error
        self.transform = transform
        self.clock = clock
        self.last_success = clock()
        self.indexers = indexes or {}
        self.store: dict[Key, Json] = {}
        self.index: dict[str, dict[str, set[Key]]] = {n: {} for n in self.indexers}
        self.lock = threading.RLock()
        self.synced = threading.Event()
        self.stopped = threading.Event()

    # --- store -------------------------------------------------------------
    def get(self, namespace: str, name: str) -> Json | None:
        """The cached object, if any."""
        with self.lock:
            return self.store.get((namespace, name))

    def by_index(self, index: str, value: str) -> list[Json]:
        """Cached objects whose ``index`` function yields ``value``."""
        with self.lock:
            keys = self.index[index].get(value, set())
            return [self.store[k] for k in keys if k in self.store]

    def items(self) -> list[Json]:
        """All cached objects."""
        with self.lock:
            return list(self.store.values())

    def put(self, obj: Json) -> Json:
        """Store ``transform(obj)`` (kept fields only); returns what was stored."""
        obj = self.transform(obj)
        self._put(obj)
        return obj

    def _known(self, obj: Json) -> bool:
        """The store already holds this exact version of ``obj`` (same resourceVersion)."""
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        old = self.get(*key_of(obj))
        return (
            bool(rv)
            and old is not None
            and (old.get("metadata") or {}).get("resourceVersion") == rv
        )

    def _put(self, obj: Json) -> None:
        key = key_of(obj)
        values = {name: fn(obj) for name, fn in self.indexers.items()}  # may raise: no change
        with self.lock:
            self._unindex(key)
            self.store[key] = obj
            for name, found in values.items():
                for value in found:
                    self.index[name].setdefault(value, set()).add(key)

    def _drop(self, key: Key) -> Json | None:
        with self.lock:
            self._unindex(key)
            return self.store.pop(key, None)

    def _unindex(self, key: Key) -> None:
        old = self.store.get(key)
        if old is None:
            return
        for name, fn in self.indexers.items():
            for value in fn(old):
                self.index[name].get(value, set()).discard(key)

    # --- list + watch ---------------------------------------------------------
    def relist(self) -> str:
        """LIST (paged), replace the store, notify changes; the list's resourceVersion."""
        items: list[Json] = []
        cont = ""
        while True:
            params = {"limit": "500"} | ({"continue": cont} if cont else {})
            page = self.send(api.list_(self.kind, self.namespace, self.selector, **params))
            items += page.get("items") or []
            cont = (page.get("metadata") or {}).get("continue") or ""
            if not cont:
                break
        rv = str((page.get("metadata") or {}).get("resourceVersion") or "")
        fresh = {key_of(i): i for i in items if isinstance(i, dict)}
        with self.lock:
            gone = [k for k in self.store if k not in fresh]
        for k in gone:
            old = self._drop(k)
            if old is not None:
                self._guarded(old, self.on_change, old)
        for obj in fresh.values():
            obj.setdefault("apiVersion", self.kind.api_version)
            obj.setdefault("kind", self.kind.kind)
            self._guarded(obj, self._relisted, obj)
        self.synced.set()
        self.last_success = self.clock()
        return rv

    def _relisted(self, obj: Json) -> None:
        """Keep one listed object; tell ``on_change`` unless the cache had this version."""
        if self._known(obj):
            self.put(obj)  # the same version again (a relist after a 410): nothing changed
            return
        self.on_change(self.put(obj))

    def _guarded(self, obj: Json, fn: Callable[[Json], None], arg: Json) -> bool:
        """``fn(arg)``; an exception is ``obj``'s: ``on_error``, and False."""
        try:
            fn(arg)
        except Exception as err:  # one object's shape or bug: skip it, keep watching
            try:
                self.on_error(obj, err)
            except Exception:
                log.exception("on_error for %s", "/".join(key_of(obj)))
            return False
        return True

    @property
    def stale_for(self) -> float:
        """Seconds since the last LIST, watch event or cleanly closed watch."""
        return max(0.0, self.clock() - self.last_success)

    def run(self) -> None:
        """List, then watch forever (until ``stop``). ``410 Gone`` relists at once; any other
        failure (an API error, a connection reset, a watch line that is no JSON event) relists
        after a backoff of 0.5 s doubling to 30 s: events missed while the watch was down come
        back as the differences the relist finds."""
        backoff = 0.5
        rv = ""
        while not self.stopped.is_set():
            try:
                if not rv:
                    rv = self.relist()
                rv = self._watch(rv)
                self.last_success = self.clock()
                backoff = 0.5
            except api.ApiError as err:
                if err.gone:
                    rv = ""
                    continue
                log.warning("watch %s: %s", self.kind.plural, err)
                rv = ""
                self.stopped.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            except Exception:
                log.exception("watch %s: relisting", self.kind.plural)
                rv = ""
                self.stopped.wait(backoff)
                backoff = min(backoff * 2, 30.0)

    def _watch(self, rv: str) -> str:
        req = api.watch(self.kind, self.namespace, self.selector, rv)
        for ev in self.stream(req):
            if self.stopped.is_set():
                break
            rv = self.handle(ev, rv)
        return rv

    def handle(self, ev: Json, rv: str = "") -> str:
        """One watch event into the cache; the resourceVersion to resume from after it. An
        ``ERROR`` event raises ``api.ApiError`` (410: relist); an event that is no
        ``{type, object}`` mapping raises ``ValueError`` (the stream is broken: relist)."""
        obj = ev.get("object") if isinstance(ev, dict) else None
        etype = ev.get("type") if isinstance(ev, dict) else None
        if not isinstance(obj, dict) or not isinstance(etype, str):
            raise ValueError(f"not a watch event: {str(ev)[:200]}")
        if etype == "ERROR":
            code = obj.get("code")
            status = code if isinstance(code, int) and not isinstance(code, bool) else 500
            raise api.ApiError(status, str(obj.get("reason")), obj)
        self.last_success = self.clock()
        meta = obj.get("metadata")
        found = meta.get("resourceVersion") if isinstance(meta, dict) else None
        rv = str(found or rv)
        if etype != "BOOKMARK":
            self._guarded(obj, self._apply, {"type": etype, "object": obj})
        return rv

    def _apply(self, ev: Json) -> None:
        etype, obj = ev["type"], ev["object"]
        if etype == "DELETED":
            self._drop(key_of(obj))
        elif self._known(obj):
            return  # our own write, already cached from its response: nothing new
        else:
            old = self.get(*key_of(obj))
            obj = self.put(obj)
            if old is not None and same_but_version(old, obj):
                return  # only fields the caches do not keep changed: nothing to reconcile
        self.on_change(obj)

    def start(self) -> threading.Thread:
        """Run in a daemon thread."""
        t = threading.Thread(target=self.run, name=f"informer-{self.kind.plural}", daemon=True)
        t.start()
        return t


class WorkQueue:
    """Keys processed by one worker at a time; duplicates coalesce; delayed adds.

    Lanes by priority (0 first, ``LANES`` of them), each in arrival order. The controller puts
    in lane 0 a TrainJob whose Workflow just finished (its final status is what users and
    dashboards wait for) or that is being deleted (its Workflows are stopped before the garbage
    collector reaches their pods); in lane 1 one whose pods, Workflows or Workloads changed (a
    status count may have moved); the rest (a TrainJob created or edited: a start-up) in lane 2.
    An add in a higher lane of a key already waiting moves it there (controller-runtime's
    priority queue serves its high-priority items first the same way).

    ``settle`` seconds: a key added to lanes 1 and 2 is handed out no sooner than that after
    it was queued, so the events one engine change sets off (a pod Succeeded, its Workload
    Finished, its Workflow node) reach one reconcile instead of one each. Lane 0 goes at once;
    a key due from ``add_after`` goes to the front of the last lane.
    """

    LANES = 3

    def __init__(
        self,
        base_delay: float = 0.2,
        max_delay: float = 60.0,
        settle: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cond = threading.Condition()
        self.lanes: list[deque[Key]] = [deque() for _ in range(self.LANES)]
        self.queued: dict[Key, int] = {}  # key -> its lane
        self.ready_at: dict[Key, float] = {}  # queued key -> when it may be handed out
        self.settle, self.clock = settle, clock
        self.active: set[Key] = set()
        self.dirty: dict[Key, int] = {}  # changed while active -> the highest lane asked
        self.delayed: list[tuple[float, Key]] = []
        self.failures: dict[Key, int] = {}
        self.base, self.max = base_delay, max_delay
        self.closed = False

    def add(self, key: Key, priority: int = LANES - 1) -> None:
        """Queue ``key`` now (once), in lane ``priority`` (0 first; default the last)."""
        with self.cond:
            self._add(key, priority)

    def _add(self, key: Key, priority: int, settled: bool = False) -> None:
        if key in self.active:
            self.dirty[key] = min(priority, self.dirty.get(key, priority))
            return
        lane = self.queued.get(key)
        if lane is None:
            self.queued[key] = priority
            self.ready_at[key] = self.clock() + (0.0 if settled else self.settle)
            if settled:  # due already: ahead of keys still settling
                self.lanes[priority].appendleft(key)
            else:
                self.lanes[priority].append(key)
            self.cond.notify()
        elif priority < lane:
            self.lanes[lane].remove(key)
            self.queued[key] = priority
            self.lanes[priority].append(key)

    def add_after(self, key: Key, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds."""
        with self.cond:
            heapq.heappush(self.delayed, (self.clock() + delay, key))
            self.cond.notify()

    def retry(self, key: Key) -> float:
        """Requeue after a failure, with exponential backoff; the delay used."""
        n = self.failures.get(key, 0)
        self.failures[key] = n + 1
        delay = float(min(self.base * (2**n), self.max))
        self.add_after(key, delay)
        return delay

    def forget(self, key: Key) -> None:
        """Reset ``key``'s backoff after a success."""
        self.failures.pop(key, None)

    def __len__(self) -> int:
        with self.cond:
            return len(self.queued)

    def get(self, timeout: float | None = None) -> Key | None:
        """Block for the next key; None once closed, or after ``timeout`` seconds if given."""
        with self.cond:
            deadline = None if timeout is None else self.clock() + timeout
            while True:
                if self.closed:
                    return None
                now = self.clock()
                while self.delayed and self.delayed[0][0] <= now:
                    _, key = heapq.heappop(self.delayed)
                    self._add(key, self.LANES - 1, settled=True)
                wake = [t for t, _ in self.delayed[:1]] + ([] if deadline is None else [deadline])
                for i, lane in enumerate(self.lanes):
                    if not lane:
                        continue
                    if i == 0 or self.ready_at[lane[0]] <= now:
                        key = lane.popleft()
                        del self.queued[key], self.ready_at[key]
                        self.active.add(key)
                        return key
                    wake.append(self.ready_at[lane[0]])
                if deadline is not None and now >= deadline:
                    return None
                self.cond.wait(min(wake) - now if wake else None)

    def done(self, key: Key) -> None:
        """Finished with ``key``; requeue it if it changed meanwhile."""
        with self.cond:
            self.active.discard(key)
            priority = self.dirty.pop(key, None)
            if priority is not None:
                self._add(key, priority)

    def close(self) -> None:
        """Wake all workers; ``get`` returns None."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
