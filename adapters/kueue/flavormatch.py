"""Does a pod fit a ResourceFlavor's nodes? Pure.

Mirrors kueue v0.19.2 ``checkFlavorForPodSets`` and ``flavorSelector``
(``pkg/scheduler/flavorassigner/flavorassigner.go``): the flavor's NoSchedule
and NoExecute ``nodeTaints`` must be tolerated by the pod's tolerations plus
the flavor's own; the pod's ``nodeSelector`` and required node affinity,
restricted to the flavor's ``nodeLabels`` keys, must match a node carrying
exactly those labels (a term left with no expressions matches anything).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainweave.queues import ResourceFlavor


def matches_flavor(flavor: ResourceFlavor, pod_spec: Mapping[str, Any]) -> bool:
    """True when pods with ``pod_spec`` may be assigned ``flavor``."""
    tolerations = [*pod_spec.get("tolerations", []), *_dump(flavor.spec.tolerations)]
    for taint in flavor.spec.node_taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not any(
            tolerates(t, taint.key, taint.value or "", taint.effect) for t in tolerations
        ):
            return False
    labels = flavor.spec.node_labels
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if key in labels and labels[key] != value:
            return False
    node_affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = []
    for term in required.get("nodeSelectorTerms") or []:
        kept = [e for e in term.get("matchExpressions") or [] if e.get("key") in labels]
        if not kept:
            return True  # an empty term matches every flavor
        terms.append(kept)
    return not terms or any(all(_requirement(e, labels) for e in term) for term in terms)


def _dump(tolerations: list[Any]) -> list[dict[str, Any]]:
    return [t.model_dump(by_alias=True, exclude_none=True) for t in tolerations]


def tolerates(toleration: Mapping[str, Any], key: str, value: str, effect: str) -> bool:
    """``Toleration.ToleratesTaint`` from k8s.io/api core/v1."""
    if toleration.get("effect") and toleration["effect"] != effect:
        return False
    if toleration.get("key") and toleration["key"] != key:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return bool(toleration.get("key")) and (toleration.get("value") or "") == value


def _requirement(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, op, values = expr["key"], expr.get("operator"), list(expr.get("values") or [])
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False
