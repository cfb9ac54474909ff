"""Kubernetes strategic merge patch for pod specs, as ``runtimePatches`` are applied upstream.

Pure. Trainer v2.3.0 merges each runtimePatch into the runtime's JobSet spec with
``strategicpatch.StrategicMergePatch`` (k8s.io/apimachinery), which follows the
``patchStrategy``/``patchMergeKey`` tags of k8s.io/api core/v1 types:

- objects merge key by key, recursively; a ``null`` in the patch deletes the key;
- lists with a merge key merge item by item (``containers``/``initContainers``/``volumes``/
  ``imagePullSecrets``/``schedulingGates`` by ``name``; a container's ``env`` by ``name``,
  ``volumeMounts`` by ``mountPath``, ``ports`` by ``containerPort``); a merged volume keeps only
  the keys its patch names (``retainKeys``);
- every other list (``tolerations``, ``args``, ...) is replaced whole.
"""

from __future__ import annotations

import copy
from typing import Any

Json = dict[str, Any]

_CONTAINER_KEYS = {"env": "name", "volumeMounts": "mountPath", "ports": "containerPort"}
_POD_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
}
_RETAIN_KEYS = {"volumes"}


def merge_pod_spec(base: Json, patch: Json) -> Json:
    """``base`` with ``patch`` applied as a strategic merge patch of a core/v1 PodSpec."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif key in _POD_KEYS and isinstance(value, list):
            item_keys = _CONTAINER_KEYS if key in ("containers", "initContainers") else {}
            out[key] = _merge_list(
                out.get(key) or [], value, _POD_KEYS[key], item_keys, key in _RETAIN_KEYS
            )
        else:
            out[key] = _merge_value(out.get(key), value)
    return out


def _merge_list(
    base: list[Any], patch: list[Any], key: str, item_keys: dict[str, str], retain: bool
) -> list[Any]:
    out = copy.deepcopy(base)
    for item in patch:
        index = next((i for i, old in enumerate(out) if old.get(key) == item.get(key)), None)
        if index is None:
            out.append(copy.deepcopy(item))
            continue
        old = out[index]
        if retain:
            old = {k: v for k, v in old.items() if k in item}
        out[index] = _merge_object(old, item, item_keys)
    return out


def _merge_object(base: Json, patch: Json, list_keys: dict[str, str]) -> Json:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif key in list_keys and isinstance(value, list):
            out[key] = _merge_list(out.get(key) or [], value, list_keys[key], {}, False)
        else:
            out[key] = _merge_value(out.get(key), value)
    return out


def _merge_value(base: Any, patch: Any) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        return _merge_object(base, patch, {})
    return copy.deepcopy(patch)
