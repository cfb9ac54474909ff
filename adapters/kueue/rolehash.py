"""Kueue's pod role hash, reproduced byte for byte. Pure.

Kueue v0.19.2 names each PodSet of a pod-group Workload by an 8-hex role hash
(``pkg/util/pod/pod.go`` ``GenerateRoleHash``/``SpecShape``/``ContainersShape``):
sha256 over Go's ``json.Marshal`` of ``{"spec": shape}``, where ``shape`` holds
the containers' and init containers' requests and ports, nodeSelector,
affinity, tolerations, runtimeClassName, priority, topologySpreadConstraints,
overhead, resourceClaims and (only when set) pod-level requests. Go sorts map
keys, writes struct fields in declaration order (``k8s.io/api/core/v1``),
drops ``omitempty`` fields, escapes ``<>&`` and prints quantities in canonical
form (``k8s.io/apimachinery/pkg/api/resource``): all of that is mirrored here.

The webhook hashes the pod as the API server admitted it, so
``admitted_pod_spec`` first applies what happens before Kueue's webhook:
Argo's ``init`` and ``wait`` executor containers, request defaulting from
limits, port protocol ``TCP``, the Priority plugin's ``priority`` and the
DefaultTolerationSeconds plugin's two tolerations.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainweave.quantity import canonical_quantity

Json = dict[str, Any]
# the pinned Argo's default executor image (workflow-controller ``executor.image``); the role hash
# does not read images (``ContainersShape``), the judged step pod does (``adapters.argo.pods``)
ARGO_EXECUTOR_IMAGE = "quay.io/argoproj/argoexec:v4.1.4"

# Go struct field order and omitempty, from k8s.io/api@v0.36.2 core/v1/types.go and
# apimachinery meta/v1/types.go: (json name, kind, omitempty).
_STRUCTS: dict[str, list[tuple[str, str, bool]]] = {
    "ContainerPort": [
        ("name", "str", True),
        ("hostPort", "int", True),
        ("containerPort", "int", False),
        ("protocol", "str", True),
        ("hostIP", "str", True),
    ],
    "Affinity": [
        ("nodeAffinity", "*NodeAffinity", True),
        ("podAffinity", "*PodAffinity", True),
        ("podAntiAffinity", "*PodAffinity", True),
    ],
    "NodeAffinity": [
        ("requiredDuringSchedulingIgnoredDuringExecution", "*NodeSelector", True),
        ("preferredDuringSchedulingIgnoredDuringExecution", "[]PreferredSchedulingTerm", True),
    ],
    "NodeSelector": [("nodeSelectorTerms", "[]NodeSelectorTerm", False)],
    "NodeSelectorTerm": [
        ("matchExpressions", "[]Requirement", True),
        ("matchFields", "[]Requirement", True),
    ],
    "Requirement": [("key", "str", False), ("operator", "str", False), ("values", "[]str", True)],
    "PreferredSchedulingTerm": [
        ("weight", "int", False),
        ("preference", "NodeSelectorTerm", False),
    ],
    "PodAffinity": [
        ("requiredDuringSchedulingIgnoredDuringExecution", "[]PodAffinityTerm", True),
        ("preferredDuringSchedulingIgnoredDuringExecution", "[]WeightedPodAffinityTerm", True),
    ],
    "PodAffinityTerm": [
        ("labelSelector", "*LabelSelector", True),
        ("namespaces", "[]str", True),
        ("topologyKey", "str", False),
        ("namespaceSelector", "*LabelSelector", True),
        ("matchLabelKeys", "[]str", True),
        ("mismatchLabelKeys", "[]str", True),
    ],
    "WeightedPodAffinityTerm": [
        ("weight", "int", False),
        ("podAffinityTerm", "PodAffinityTerm", False),
    ],
    "LabelSelector": [("matchLabels", "map", True), ("matchExpressions", "[]Requirement", True)],
    "Toleration": [
        ("key", "str", True),
        ("operator", "str", True),
        ("value", "str", True),
        ("effect", "str", True),
        ("tolerationSeconds", "*int", True),
    ],
    "TopologySpreadConstraint": [
        ("maxSkew", "int", False),
        ("topologyKey", "str", False),
        ("whenUnsatisfiable", "str", False),
        ("labelSelector", "*LabelSelector", True),
        ("minDomains", "*int", True),
        ("nodeAffinityPolicy", "*str", True),
        ("nodeTaintsPolicy", "*str", True),
        ("matchLabelKeys", "[]str", True),
    ],
    "PodResourceClaim": [
        ("name", "str", False),
        ("resourceClaimName", "*str", True),
        ("resourceClaimTemplateName", "*str", True),
    ],
}


@dataclass(frozen=True)
class PodDefaults:
    """What happens to a step pod between our template and Kueue's webhook.

    ``argo_executor``: Argo adds its ``init`` init container and ``wait``
    container (``workflow/controller/workflowpod.go``), with the
    workflow-controller config's ``executor.resources`` (none by default).
    ``priorities``: PriorityClass name -> value (Priority admission plugin;
    no class means 0). ``default_toleration_seconds``: the
    DefaultTolerationSeconds plugin (on by default, 300 s; None when disabled).
    """

    argo_executor: bool = True
    executor_resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    priorities: Mapping[str, int] = field(default_factory=dict)
    default_toleration_seconds: int | None = 300


def admitted_pod_spec(pod_spec: Mapping[str, Any], defaults: PodDefaults) -> Json:
    """``pod_spec`` as Argo creates it and the API server admits it (before webhooks)."""
    spec: Json = copy.deepcopy(dict(pod_spec))
    if defaults.argo_executor:
        spec["initContainers"] = [
            _executor("init", defaults.executor_resources),
            *spec.get("initContainers", []),
        ]
        spec["containers"] = [
            _executor("wait", defaults.executor_resources),
            *spec.get("containers", []),
        ]
    for key in ("initContainers", "containers"):
        for container in spec.get(key, []):
            _default_container(container)
    if spec.get("resources"):
        _default_requests(spec["resources"])
    if "priority" not in spec:
        spec["priority"] = defaults.priorities.get(spec.get("priorityClassName", ""), 0)
    seconds = defaults.default_toleration_seconds
    if seconds is not None:
        tolerations = list(spec.get("tolerations", []))
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(_tolerates(t, key) for t in tolerations):
                tolerations.append(
                    {
                        "key": key,
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": seconds,
                    }
                )
        spec["tolerations"] = tolerations
    return spec


def role_hash(pod_spec: Mapping[str, Any]) -> str:
    """Kueue's 8-hex role hash of an admitted pod spec (``GenerateRoleHash``)."""
    return hashlib.sha256(shape_json(pod_spec)).hexdigest()[:8]


def shape_json(pod_spec: Mapping[str, Any]) -> bytes:
    """The exact bytes Kueue hashes: Go ``json.Marshal({"spec": SpecShape(spec)})``."""
    shape: Json = {
        "initContainers": _containers(pod_spec.get("initContainers")),
        "containers": _containers(pod_spec.get("containers")),
        "nodeSelector": pod_spec.get("nodeSelector") or None,
        "affinity": _struct("Affinity", pod_spec.get("affinity")),
        "tolerations": _list("Toleration", pod_spec.get("tolerations")),
        "runtimeClassName": pod_spec.get("runtimeClassName"),
        "priority": pod_spec.get("priority"),
        "topologySpreadConstraints": _list(
            "TopologySpreadConstraint", pod_spec.get("topologySpreadConstraints")
        ),
        "overhead": _resource_list(pod_spec.get("overhead")),
        "resourceClaims": _list("PodResourceClaim", pod_spec.get("resourceClaims")),
    }
    if pod_spec.get("resources"):
        shape["resources"] = _resource_list(pod_spec["resources"].get("requests"))
    return _go_json({"spec": shape})


def _executor(name: str, resources: Mapping[str, Mapping[str, str]]) -> Json:
    container: Json = {"name": name, "image": ARGO_EXECUTOR_IMAGE}
    if resources:
        container["resources"] = {k: dict(v) for k, v in resources.items()}
    return container


def _default_container(container: Json) -> None:
    if container.get("resources"):
        _default_requests(container["resources"])
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")


def _default_requests(resources: Json) -> None:
    requests = dict(resources.get("requests") or {})
    for name, value in (resources.get("limits") or {}).items():
        requests.setdefault(name, value)
    if requests:
        resources["requests"] = requests


def _tolerates(toleration: Mapping[str, Any], key: str) -> bool:
    """DefaultTolerationSeconds skips a taint the pod already tolerates (any operator)."""
    if toleration.get("effect") not in (None, "", "NoExecute"):
        return False
    return toleration.get("key") in (None, "", key)


def _containers(containers: list[Json] | None) -> list[Json] | None:
    if not containers:
        return None
    return [
        {
            "resources": {"requests": _resource_list((c.get("resources") or {}).get("requests"))},
            "ports": _list("ContainerPort", c.get("ports")),
        }
        for c in containers
    ]


def _resource_list(resources: Mapping[str, Any] | None) -> dict[str, str] | None:
    if not resources:
        return None
    return {name: canonical_quantity(value) for name, value in resources.items()}


def _list(kind: str, items: list[Any] | None) -> list[Any] | None:
    return [_struct(kind, item) for item in items] if items else None


def _struct(kind: str, value: Mapping[str, Any] | None) -> _Ordered | None:
    if value is None:
        return None
    fields: list[tuple[str, Any]] = []
    for name, ftype, omitempty in _STRUCTS[kind]:
        item = value.get(name)
        if ftype.startswith("*"):
            inner = ftype[1:]
            encoded = item if inner in ("int", "str") else _struct(inner, item)
            if item is None and omitempty:
                continue
        elif ftype.startswith("[]"):
            inner = ftype[2:]
            if not item:
                if omitempty:
                    continue
                encoded = None
            else:
                encoded = list(item) if inner == "str" else [_struct(inner, i) for i in item]
        elif ftype == "map":
            if not item and omitempty:
                continue
            encoded = dict(item) if item else None
        elif ftype in ("str", "int"):
            zero: Any = "" if ftype == "str" else 0
            if not item and omitempty:
                continue
            encoded = item if item else zero
        else:
            encoded = _struct(ftype, item or {})
        fields.append((name, encoded))
    return _Ordered(fields)


class _Ordered(list[tuple[str, Any]]):
    """A Go struct: fields in declaration order, not sorted like a map."""


def _go_json(value: Any) -> bytes:
    return _encode(value).encode()


def _encode(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            text = text.replace(char, escape)
        return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if isinstance(value, _Ordered):
        return "{" + ",".join(f"{_encode(k)}:{_encode(v)}" for k, v in value) + "}"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_encode(k)}:{_encode(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode(v) for v in value) + "]"
    raise TypeError(f"cannot encode {value!r}")
