"""The fake API server's storage: objects per resource, one resourceVersion counter, and the
history of changes that watches replay (bounded: older versions are compacted, as etcd's are).
Tests only.

Every change goes through ``Store.commit`` under ``Store.cond``: the resourceVersion goes up by
one, the event joins the history and waiting watches are woken.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tests.unit.fakeapi.patches import Path
from tests.unit.fakeapi.resources import Resource

Json = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)
FIRST_RV = 1000


@dataclass(frozen=True)
class Event:
    """One change: its resourceVersion, the object after it (for DELETED: as it was last) and
    before it (None for ADDED)."""

    rv: int
    resource: Resource
    type: str  # ADDED, MODIFIED, DELETED
    obj: Json
    old: Json | None


@dataclass
class Watcher:
    """An open watch: where it has got to, and whether it waits with nothing left to send
    (everything it was sent has been taken by its reader)."""

    resource: Resource
    rv: int
    owner: object = None
    idle: bool = False
    closed: bool = False


@dataclass
class Store:
    """Objects, the change history and the open watches."""

    history: int = 10000  # events kept for watches; older resourceVersions are 410 Gone
    cond: threading.Condition = field(default_factory=threading.Condition)
    rv: int = FIRST_RV
    compacted: int = FIRST_RV  # watches from before this are too old
    objects: dict[Resource, dict[Key, Json]] = field(default_factory=dict)
    managers: dict[tuple[Resource, Key], dict[str, set[Path]]] = field(default_factory=dict)
    events: deque[Event] = field(default_factory=deque)
    watchers: list[Watcher] = field(default_factory=list)
    uids: int = 0

    def of(self, res: Resource) -> dict[Key, Json]:
        """The objects of one resource (live, under ``cond``)."""
        return self.objects.setdefault(res, {})

    def get(self, res: Resource, key: Key) -> Json | None:
        """A copy of the stored object, or None."""
        with self.cond:
            found = self.of(res).get(key)
            return copy.deepcopy(found) if found is not None else None

    def new_uid(self) -> str:
        """A UUID-shaped uid, counted (deterministic runs)."""
        with self.cond:
            self.uids += 1
            n = self.uids
        return f"00000000-0000-4000-8000-{n:012x}"

    def commit(self, res: Resource, etype: str, obj: Json, old: Json | None) -> Json:
        """Store (or, for DELETED, remove) ``obj`` at the next resourceVersion; a copy of it."""
        with self.cond:
            self.rv += 1
            meta = obj["metadata"]
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            if etype == "DELETED":
                last = copy.deepcopy(obj)
                self.of(res).pop(key, None)
                self.managers.pop((res, key), None)
                obj = copy.deepcopy(obj)
                obj["metadata"]["resourceVersion"] = str(self.rv)
                self._record(Event(self.rv, res, etype, obj, old))
                return last
            meta["resourceVersion"] = str(self.rv)
            self.of(res)[key] = obj
            self._record(Event(self.rv, res, etype, copy.deepcopy(obj), old))
            return copy.deepcopy(obj)

    def _record(self, event: Event) -> None:
        self.events.append(event)
        while len(self.events) > self.history:
            self.compacted = self.events.popleft().rv
        self.cond.notify_all()

    def since(self, res: Resource, rv: int) -> list[Event] | None:
        """The events of ``res`` after ``rv`` (under ``cond``); None when ``rv`` is older than
        the history kept."""
        if rv < self.compacted:
            return None
        return [e for e in self.events if e.rv > rv and e.resource == res]

    def quiet(self, owner: object, watches: int) -> bool:
        """``owner`` has ``watches`` watches open, each read to the end and waiting for news."""
        with self.cond:
            mine = [w for w in self.watchers if w.owner is owner and not w.closed]
            return len(mine) == watches and all(w.idle for w in mine)

    def close_watches(self, owner: object = None) -> None:
        """End the open watches (of ``owner``; all when None), as a server restart does: a
        reader resumes from its last resourceVersion."""
        with self.cond:
            for w in self.watchers:
                if owner is None or w.owner is owner:
                    w.closed = True
            self.cond.notify_all()
