"""The PATCH flavours the API server takes, applied to a wire dict. Pure; tests only.

- ``merge``: JSON merge patch (RFC 7386): maps merge, ``null`` removes, anything else replaces;
- ``strategic``: strategic merge patch as built-in kinds take it, in its common part: maps merge,
  ``null`` removes, a list of maps that all have a merge key (``name``, or ``type`` for
  conditions, ``uid`` for ownerReferences, ``containerPort`` for ports) merges item by item,
  ``$patch: delete`` in such an item removes it, ``$patch: replace`` in a map replaces it; other
  lists replace (the real server knows each field's strategy from the Go types);
- ``json_patch``: JSON patch (RFC 6902): add, remove, replace, move, copy, test;
- ``owned_paths`` / ``apply``: server-side apply, modelled on the fields one manager sets: apply
  sets every field the configuration gives (lists as whole values), removes the fields the
  manager set before and no longer gives, and a field another manager applied with another value
  is a conflict unless forced.
"""

from __future__ import annotations

import copy
from typing import Any

Json = dict[str, Any]
Path = tuple[str, ...]
MERGE_KEYS = ("name", "type", "uid", "containerPort", "mountPath", "devicePath", "ip")


class PatchError(ValueError):
    """A patch that cannot be applied (a JSON patch op on a missing path, a failed test)."""


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 merge patch of ``target`` (not modified) by ``patch``."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def _merge_key(items: list[Any]) -> str | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    return next((k for k in MERGE_KEYS if all(k in i or "$patch" in i for i in items)), None)


def strategic(target: Any, patch: Any) -> Any:
    """Strategic merge patch of ``target`` (not modified) by ``patch`` (see the module doc)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = _strategic_list(out[key], value)
        else:
            out[key] = strategic(out.get(key), value)
    return out


def _strategic_list(old: list[Any], new: list[Any]) -> list[Any]:
    key = _merge_key(new)
    if key is None or (_merge_key(old) != key and old):
        return copy.deepcopy(new)
    out = [copy.deepcopy(i) for i in old]
    for item in new:
        at = next((n for n, o in enumerate(out) if o.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if at is not None:
                del out[at]
        elif at is None:
            out.append(copy.deepcopy(item))
        else:
            out[at] = strategic(out[at], item)
    return out


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise PatchError(f"path not found: /{'/'.join(parts)}")
    return doc


def _remove(doc: Any, parts: list[str]) -> Any:
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent.pop(int(last))
    raise PatchError(f"path not found: /{'/'.join(parts)}")


def _add(doc: Any, parts: list[str], value: Any) -> Any:
    if not parts:
        return value
    parent, last = _walk(doc, parts[:-1]), parts[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list) and (
        last == "-" or (last.isdigit() and int(last) <= len(parent))
    ):
        parent.insert(len(parent) if last == "-" else int(last), value)
    else:
        raise PatchError(f"cannot add at /{'/'.join(parts)}")
    return doc


def json_patch(target: Json, ops: list[Json]) -> Json:
    """RFC 6902 JSON patch of ``target`` (not modified)."""
    doc: Any = copy.deepcopy(target)
    for op in ops:
        name, parts = op.get("op"), _pointer(str(op.get("path", "")))
        if name == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif name == "remove":
            _remove(doc, parts)
        elif name == "replace":
            _walk(doc, parts)
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif name in ("move", "copy"):
            source = _pointer(str(op.get("from", "")))
            value = _remove(doc, source) if name == "move" else copy.deepcopy(_walk(doc, source))
            doc = _add(doc, parts, value)
        elif name == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError(f"test failed at {op.get('path')}")
        else:
            raise PatchError(f"unknown op {name!r}")
    if not isinstance(doc, dict):
        raise PatchError("the patched document is no object")
    return doc


def owned_paths(config: Json, prefix: Path = ()) -> set[Path]:
    """The leaf paths an apply configuration sets (a list or scalar is one leaf; an empty map
    sets nothing)."""
    out: set[Path] = set()
    for key, value in config.items():
        if isinstance(value, dict):
            out |= owned_paths(value, (*prefix, key))
        else:
            out.add((*prefix, key))
    return out


def get_path(doc: Json, path: Path) -> Any:
    """The value at ``path`` (None when absent)."""
    cur: Any = doc
    for key in path:
        cur = cur.get(key) if isinstance(cur, dict) else None
    return cur


def _set_path(doc: Json, path: Path, value: Any) -> None:
    cur = doc
    for key in path[:-1]:
        nxt = cur.get(key)
        if not isinstance(nxt, dict):
            nxt = cur[key] = {}
        cur = nxt
    cur[path[-1]] = copy.deepcopy(value)


def _drop_path(doc: Json, path: Path) -> None:
    cur: Any = doc
    for key in path[:-1]:
        cur = cur.get(key) if isinstance(cur, dict) else None
    if isinstance(cur, dict):
        cur.pop(path[-1], None)


def apply(
    live: Json, config: Json, manager: str, managers: dict[str, set[Path]], force: bool
) -> tuple[Json, dict[str, set[Path]], list[Path]]:
    """Server-side apply of ``config`` by ``manager`` to ``live`` (not modified): the new
    object, the managers' field sets after it, and the conflicting paths (empty when forced or
    none: with conflicts the object is not to be written)."""
    mine = owned_paths(config)
    conflicts = sorted(
        p
        for other, paths in managers.items()
        if other != manager
        for p in paths & mine
        if get_path(live, p) != get_path(config, p)
    )
    if conflicts and not force:
        return live, managers, conflicts
    out = copy.deepcopy(live)
    others = set().union(*(p for m, p in managers.items() if m != manager))
    for path in managers.get(manager, set()) - mine - others:
        _drop_path(out, path)
    for path in mine:
        _set_path(out, path, get_path(config, path))
    after = {m: (p - mine if m != manager else p) for m, p in managers.items()}
    after[manager] = mine
    return out, {m: p for m, p in after.items() if p}, []
