"""LIST on the fake API server: label selectors and paging. Tests only.

A first page takes a snapshot of the matching objects at the current resourceVersion; each
``continue`` token names the snapshot and the offset, so every page of one LIST is of the same
state and carries its resourceVersion, as from etcd. Only the newest snapshots are kept: a token
of a dropped one is 410 ``Expired``, as a compacted one is. Items of a custom resource carry
``apiVersion`` and ``kind``; those of a built-in kind do not (the API server leaves them out).
"""

from __future__ import annotations

import base64
import copy
import json
import uuid
from typing import TYPE_CHECKING, Any

from tests.unit.fakeapi import errors, selectors
from tests.unit.fakeapi.resources import Target

if TYPE_CHECKING:
    from tests.unit.fakeapi.server import FakeApi

Json = dict[str, Any]
SNAPSHOTS = 64


def list_page(api: FakeApi, t: Target, query: dict[str, str]) -> Json:
    """One page of a LIST."""
    res = t.resource
    limit = int(query.get("limit") or 0)
    if api.page_size is not None:
        limit = min(limit or api.page_size, api.page_size)
    token = query.get("continue", "")
    if token:
        try:
            state = json.loads(base64.urlsafe_b64decode(token))
            snap_id, start = str(state["id"]), int(state["start"])
        except (ValueError, KeyError, TypeError):
            raise errors.bad_request(f"invalid continue token {token!r}") from None
        if snap_id not in api.snapshots:
            raise errors.gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."
            )
        rv, items = api.snapshots[snap_id]
    else:
        match = selectors.parse(query.get("labelSelector", ""))
        with api.store.cond:
            rv = api.store.rv
            items = [
                copy.deepcopy(o)
                for (ns, _), o in sorted(api.store.of(res).items())
                if (not t.namespace or ns == t.namespace)
                and match((o.get("metadata") or {}).get("labels") or {})
            ]
        if res.builtin:
            for o in items:
                o.pop("apiVersion", None)
                o.pop("kind", None)
        snap_id, start = uuid.uuid4().hex, 0
    end = start + limit if limit else len(items)
    meta: Json = {"resourceVersion": str(rv)}
    if end < len(items):
        api.snapshots[snap_id] = (rv, items)
        while len(api.snapshots) > SNAPSHOTS:
            api.snapshots.pop(next(iter(api.snapshots)))
        state = json.dumps({"id": snap_id, "start": end}).encode()
        meta["continue"] = base64.urlsafe_b64encode(state).decode()
        meta["remainingItemCount"] = len(items) - end
    return {
        "apiVersion": res.kind.api_version,
        "kind": f"{res.kind.kind}List",
        "metadata": meta,
        "items": copy.deepcopy(items[start:end]),
    }
