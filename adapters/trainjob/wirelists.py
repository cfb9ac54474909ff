"""Name-keyed edits of pod-spec wire lists (env, volumes, volumeMounts, ports). Pure.

As upstream's apply configurations do (``apply.UpsertEnvVars`` and friends in
kubeflow/trainer@v2.3.0 ``pkg/apply``): an entry replaces the one of the same name in place,
else it is appended, so the list order stays the runtime's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Json = dict[str, Any]


def upsert_env(container: Json, env: Iterable[Json]) -> None:
    """Set each variable in ``container.env``, replacing one of the same name in place."""
    env = list(env)
    if not env:
        return
    current: list[Json] = container.setdefault("env", [])
    for var in env:
        for i, existing in enumerate(current):
            if existing.get("name") == var["name"]:
                current[i] = dict(var)
                break
        else:
            current.append(dict(var))


def upsert_by_name(items: list[Json], new: Iterable[Json]) -> None:
    """Replace-or-append list entries keyed by ``name`` (volumes, mounts, ports)."""
    for item in new:
        key = "name" if "name" in item else "containerPort"
        for i, existing in enumerate(items):
            if existing.get(key) == item[key]:
                items[i] = dict(item)
                break
        else:
            items.append(dict(item))
