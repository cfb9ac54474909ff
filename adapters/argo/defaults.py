"""The workflow-controller's defaults merged into what a step pod is built from, as Argo merges
them: ``strategicpatch.StrategicMergePatch(defaults, ours, <Go type>)``, the defaults the
original and ours the patch. Pure.

Two merges of argo-workflows v4.1.4 (v4.0.7 the same) use it:

- ``mainContainer`` under each main container (``workflow/controller/workflowpod.go:415-443``,
  v4.0.7 ``:143-166``), schema ``apiv1.Container`` (``CONTAINER``);
- ``workflowDefaults`` under the Workflow (``workflow/util/merge.go:192-231`` ``MergeTo``, called
  by ``workflow/controller/controller.go:1503-1505`` ``setWorkflowDefaults``), schema
  ``wfv1.Workflow``; only the spec fields a pod is built from are merged here
  (``WORKFLOW_POD_FIELDS``, ``WORKFLOW_SPEC``).

The rules are k8s.io/apimachinery v0.35.4's (argo-workflows v4.1.4's go.mod),
``pkg/util/strategicpatch/patch.go``:

- maps merge key by key, recursively (``mergeMap``, :1322); a key only in ours is ours; a scalar,
  or a list of a field without ``patchStrategy:"merge"``, replaces the default's (``command``,
  ``args``, ``securityContext.capabilities.drop``, ...);
- a list with ``patchStrategy:"merge"`` merges item by item on its ``patchMergeKey``
  (``mergeSliceWithoutSpecialElements``, :1606): an item of ours whose key the defaults have is
  merged into that item, ours winning; the others are added. The order is
  ``normalizeElementOrder`` (:404, ``normalizeSliceOrder`` :521, ``mergeSortedSlice`` :428):
  ours in our order, the default-only items in the defaults' order (each by the first index of
  its key), a default-only item going first only when the defaults list it before the item of
  ours it meets (an item of ours the defaults lack goes first). The Container's merge lists
  (k8s.io/api v0.35.4 core/v1/types.go:2953-3028): ``ports`` by ``containerPort``, ``env`` by
  ``name``, ``volumeMounts`` by ``mountPath``, ``volumeDevices`` by ``devicePath``;
- both sides are Go structs marshalled with ``json.Marshal`` first (workflowpod.go:425-433,
  merge.go:206-216), so what ``omitempty`` drops is on neither side (``_GO``): a ``null``; a
  container's empty ``image``, ``args``, ``env``, an env var's empty ``value``, a mount's
  ``readOnly: false``; quantities canonical. An empty value of ours keeps the default's.

Checked against apimachinery itself: ``main_container`` and ``workflow_spec`` gave Go's
``StrategicMergePatch`` result (after the same ``json.Marshal`` round trips) on 15000 generated
cases each, duplicate merge keys included.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainweave.quantity import canonical_quantity

Json = dict[str, Any]


@dataclass(frozen=True)
class Schema:
    """The ``patchStrategy``/``patchMergeKey`` tags of one Go struct: each merge list's key
    and the schema of its items; the schema of each nested struct that has such lists."""

    lists: Mapping[str, tuple[str, Schema]] = field(default_factory=dict)
    structs: Mapping[str, Schema] = field(default_factory=dict)


LEAF = Schema()
CONTAINER = Schema(
    lists={
        "ports": ("containerPort", LEAF),
        "env": ("name", LEAF),
        "volumeMounts": ("mountPath", LEAF),
        "volumeDevices": ("devicePath", LEAF),
    }
)
# wfv1.WorkflowSpec's merge lists (pkg/apis/workflow/v1alpha1/workflow_types.go:308-418);
# templates are not merged here (WORKFLOW_POD_FIELDS)
WORKFLOW_SPEC = Schema(
    lists={
        "volumes": ("name", LEAF),
        "tolerations": ("key", LEAF),
        "imagePullSecrets": ("name", LEAF),
        "hostAliases": ("ip", LEAF),
    }
)
# the WorkflowSpec fields createWorkflowPod builds a pod from (workflowpod.go:497-513
# imagePullSecrets, hostNetwork; :1337-1346 dnsPolicy, dnsConfig; :1348-1406 nodeSelector,
# affinity, tolerations, schedulerName, podPriorityClassName, hostAliases, securityContext;
# :1325-1335 podMetadata; :1824-1840 serviceAccountName, automountServiceAccountToken;
# :581-588 podResources; :299-323 podSpecPatch; operator.go retryStrategy (the node name)
WORKFLOW_POD_FIELDS = (
    "imagePullSecrets",
    "hostNetwork",
    "dnsPolicy",
    "dnsConfig",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulerName",
    "podPriorityClassName",
    "hostAliases",
    "securityContext",
    "podMetadata",
    "serviceAccountName",
    "automountServiceAccountToken",
    "podResources",
    "podSpecPatch",
    "retryStrategy",
)
# json.Marshal of apiv1.Container (k8s.io/api v0.35.4 core/v1/types.go): per struct, its
# ``omitempty`` fields that are not pointers (dropped when empty: "", 0, false, [], {}), and
# the struct of each nested field (an object, or a list of objects); a pointer is dropped when
# nil (null) only. ``name`` has no omitempty; ``resources`` is a struct, always written.
_GO: dict[str, tuple[frozenset[str], Mapping[str, str]]] = {
    "Container": (
        frozenset(
            {
                "image",
                "command",
                "args",
                "workingDir",
                "ports",
                "envFrom",
                "env",
                "resizePolicy",
                "restartPolicyRules",
                "volumeMounts",
                "volumeDevices",
                "terminationMessagePath",
                "terminationMessagePolicy",
                "imagePullPolicy",
                "stdin",
                "stdinOnce",
                "tty",
            }
        ),
        {
            "ports": "ContainerPort",
            "env": "EnvVar",
            "envFrom": "EnvFromSource",
            "volumeMounts": "VolumeMount",
            "resources": "ResourceRequirements",
            "securityContext": "SecurityContext",
            "livenessProbe": "Probe",
            "readinessProbe": "Probe",
            "startupProbe": "Probe",
        },
    ),
    "ContainerPort": (frozenset({"name", "hostPort", "protocol", "hostIP"}), {}),
    "EnvVar": (frozenset({"value"}), {}),
    "EnvFromSource": (frozenset({"prefix"}), {}),
    "VolumeMount": (frozenset({"readOnly", "subPath", "subPathExpr"}), {}),
    "ResourceRequirements": (frozenset({"limits", "requests", "claims"}), {}),
    "SecurityContext": (
        frozenset(),
        {"capabilities": "Capabilities", "seLinuxOptions": "SELinuxOptions"},
    ),
    "Capabilities": (frozenset({"add", "drop"}), {}),
    "SELinuxOptions": (frozenset({"user", "role", "type", "level"}), {}),
    "WorkflowSpec": (
        frozenset(
            {
                "serviceAccountName",
                "nodeSelector",
                "tolerations",
                "imagePullSecrets",
                "schedulerName",
                "podPriorityClassName",
                "hostAliases",
                "podSpecPatch",
            }
        ),
        {"tolerations": "Toleration", "hostAliases": "HostAlias", "podMetadata": "Metadata"},
    ),
    "Toleration": (frozenset({"key", "operator", "value", "effect"}), {}),
    "HostAlias": (frozenset({"hostnames"}), {}),
    "Metadata": (frozenset({"annotations", "labels"}), {}),
    "Probe": (
        frozenset(
            {
                "initialDelaySeconds",
                "timeoutSeconds",
                "periodSeconds",
                "successThreshold",
                "failureThreshold",
            }
        ),
        {},
    ),
}


def merge(defaults: Json, ours: Json, schema: Schema) -> Json:
    """``ours`` as a strategic merge patch of ``defaults`` (neither is changed)."""
    return _merge_map(copy.deepcopy(defaults), copy.deepcopy(ours), schema)


def main_container(defaults: Json, container: Json) -> Json:
    """A main container with the ``mainContainer`` defaults under it (workflowpod.go:422-443)."""
    return go_container(merge(go_container(defaults), go_container(container), CONTAINER))


def workflow_spec(defaults: Json, ours: Json) -> Json:
    """The pod-level fields (``WORKFLOW_POD_FIELDS``) of the Workflow spec ``ours`` with the
    ``workflowDefaults`` spec under it (``MergeTo``, workflow/util/merge.go:192-231), both
    as json.Marshal writes them."""
    under, over = (
        as_go({k: v for k, v in spec.items() if k in WORKFLOW_POD_FIELDS}, "WorkflowSpec")
        for spec in (defaults, ours)
    )
    return merge(under, over, WORKFLOW_SPEC)


def go_container(container: Json) -> Json:
    """``container`` as ``json.Marshal`` writes the ``apiv1.Container`` it decodes to (no null,
    no empty ``omitempty`` field, quantities canonical: ``_GO``), ``name`` and ``resources``
    always there."""
    out: Json = as_go(container, "Container")
    out.setdefault("name", "")
    out["resources"] = go_resources(out.get("resources") or {})
    return out


def go_resources(resources: Json) -> Json:
    """``limits`` and ``requests`` quantities as ``resource.Quantity`` marshals them (a YAML
    number, too); a value that is no quantity is kept for the API server to refuse."""
    out = dict(resources)
    for key in ("limits", "requests"):
        if isinstance(out.get(key), dict):
            out[key] = {k: _quantity(v) for k, v in out[key].items()}
    return out


def _quantity(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return value
    try:
        return canonical_quantity(value if isinstance(value, str | int) else repr(value))
    except ValueError:
        return value


def _empty(value: Any) -> bool:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value == 0
    return value in ("", [], {})


def as_go(value: Any, struct: str) -> Any:
    """``value`` (an object of Go type ``struct``, or a list of them) as json.Marshal writes it."""
    if isinstance(value, list):
        return [as_go(v, struct) for v in value]
    if not isinstance(value, dict):
        return value
    omit, nested = _GO.get(struct, (frozenset(), {}))
    out = {}
    for key, item in value.items():
        if item is None or (key in omit and _empty(item)):
            continue
        out[key] = as_go(item, nested[key]) if key in nested else _no_nulls(item)
    return out


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _merge_map(original: Json, patch: Json, schema: Schema) -> Json:
    """``mergeMap`` (patch.go:1322): ``original`` changed in place and returned."""
    for key, value in patch.items():
        old = original.get(key)
        if value is None:
            original.pop(key, None)
        elif isinstance(old, dict) and isinstance(value, dict):
            original[key] = _merge_map(old, value, schema.structs.get(key, LEAF))
        elif isinstance(old, list) and isinstance(value, list) and key in schema.lists:
            merge_key, items = schema.lists[key]
            original[key] = _merge_list(old, value, merge_key, items)
        else:
            original[key] = value
    return original


def _index(items: list[Any], key: str, item: Any) -> int:
    """``index`` (patch.go:471): where an item with ``item``'s merge key value is, or -1."""
    wanted = item.get(key) if isinstance(item, dict) else None
    return next(
        (i for i, v in enumerate(items) if isinstance(v, dict) and v.get(key) == wanted), -1
    )


def _merge_list(original: list[Any], patch: list[Any], key: str, schema: Schema) -> list[Any]:
    """``mergeSlice`` (patch.go:1495) of a list of objects with merge key ``key``."""
    if not all(isinstance(v, dict) for v in [*original, *patch]):
        return patch  # apimachinery refuses it (Argo fails the pod); ours, as a replace
    merged = list(original)
    for item in patch:
        at = _index(merged, key, item)
        if at < 0:
            merged.append(item)
        else:
            merged[at] = _merge_map(merged[at], item, schema)
    # normalizeSliceOrder (:521): a stable sort by the first index of each item's key
    ours = sorted(
        (v for v in merged if _index(patch, key, v) >= 0), key=lambda v: _index(patch, key, v)
    )
    theirs = sorted(
        (v for v in merged if _index(patch, key, v) < 0), key=lambda v: _index(original, key, v)
    )
    return _merge_sorted(theirs, ours, original, key)


def _merge_sorted(left: list[Any], right: list[Any], order: list[Any], key: str) -> list[Any]:
    """``mergeSortedSlice`` (patch.go:428): ``left`` (default-only items) placed into
    ``right`` (ours) by their place in ``order`` (the defaults' list)."""
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li, ri = _index(order, key, left[i]), _index(order, key, right[j])
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out
