"""WATCH on the fake API server: the events of one resource after a resourceVersion, filtered by
namespace and label selector, then each new one as it is committed. Tests only.

As the API server: ``resourceVersion`` "" or "0" starts with a synthetic ADDED per existing
object; a version older than the history kept is an ``ERROR`` event with a 410 ``Expired``
Status, then the end of the stream; an object that stops matching the selector is a DELETED
event, one that starts matching an ADDED; the stream ends after ``timeoutSeconds``. No
bookmarks are sent (``allowWatchBookmarks`` only allows them).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

from tests.unit.fakeapi import errors, selectors
from tests.unit.fakeapi.resources import Target
from tests.unit.fakeapi.store import Event, Store, Watcher

Json = dict[str, Any]


def _matches(obj: Json | None, namespace: str, match: selectors.Match) -> bool:
    if obj is None:
        return False
    meta = obj.get("metadata") or {}
    if namespace and meta.get("namespace") != namespace:
        return False
    return match(meta.get("labels") or {})


def _seen_as(event: Event, namespace: str, match: selectors.Match) -> Json | None:
    """The event as this watch sees it: a transition in or out of its selector is ADDED or
    DELETED; None when it concerns no object the watch covers."""
    now = event.type != "DELETED" and _matches(event.obj, namespace, match)
    before = _matches(event.old, namespace, match) if event.type != "ADDED" else False
    if event.type == "DELETED":
        before = _matches(event.obj, namespace, match)
    if now and before:
        etype = "MODIFIED"
    elif now:
        etype = "ADDED"
    elif before:
        etype = "DELETED"
    else:
        return None
    return {"type": etype, "object": copy.deepcopy(event.obj)}


def stream(
    store: Store,
    target: Target,
    query: dict[str, str],
    alive: Callable[[], bool],
    owner: object = None,
) -> Iterator[Json]:
    """The watch's events, until its timeout, ``alive()`` turns False or the watch is closed
    (``Store.close_watches``); ``owner``: who reads it (``Store.quiet``)."""
    res, ns = target.resource, target.namespace
    match = selectors.parse(query.get("labelSelector", ""))
    deadline = time.monotonic() + float(query.get("timeoutSeconds") or 1800)
    start = query.get("resourceVersion", "")
    with store.cond:
        rv = store.rv if start in ("", "0") else int(start)
        initial = (
            [copy.deepcopy(o) for _, o in sorted(store.of(res).items())]
            if start in ("", "0")
            else []
        )
        watcher = Watcher(res, rv, owner)
        store.watchers.append(watcher)
    try:
        for obj in initial:
            if _matches(obj, ns, match):
                yield {"type": "ADDED", "object": obj}
        while alive() and not watcher.closed:
            with store.cond:
                found = store.since(res, watcher.rv)
                too_old = f"too old resource version: {watcher.rv} ({store.compacted})"
                if found is not None and not found:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return
                    watcher.idle = True
                    store.cond.wait(min(left, 1.0))  # 1 s: ``alive`` is looked at again
                    watcher.idle = False
                    continue
            if found is None:
                yield {"type": "ERROR", "object": errors.gone(too_old).body}
                return
            for event in found:
                watcher.rv = event.rv
                seen = _seen_as(event, ns, match)
                if seen is not None:
                    yield seen
    finally:
        with store.cond:
            watcher.closed = True
            store.watchers.remove(watcher)
