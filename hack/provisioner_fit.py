"""Where pods fit, for hack/provisioner_core.py: nodes, taints, tolerations, free capacity and
bin packing onto new nodes of one template. Pure; no API server.

The rules are the scheduler's predicates cluster-autoscaler simulates (``TrySchedulePods`` of
``simulator/scheduling``), reduced to what the e2e pools use: ``nodeSelector`` (NodeAffinity),
taints with effect NoSchedule or NoExecute against tolerations (TaintToleration,
k8s.io/api core/v1 ``Toleration.ToleratesTaint``), requests against free allocatable
(NodeResourcesFit, one ``pods`` slot each when the node declares ``pods``). Required node
affinity, pod (anti-)affinity, topology spread and volumes are not simulated
(docs/provisioning.md says what the stand-in does not do).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

Resources = Mapping[str, Decimal]
# Taint effects that keep a pod off a node unless tolerated (PreferNoSchedule does not).
BLOCKING = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 ``Toleration.ToleratesTaint``: an empty effect matches every effect, an
        empty key with ``Exists`` every key; ``Exists`` ignores the value."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return bool(self.key) and self.value == taint.value


@dataclass(frozen=True)
class PodShape:
    """One pod as the simulation sees it: per-pod requests and where it may go."""

    requests: Resources
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()


@dataclass(frozen=True)
class NodeShape:
    """A node as the simulation sees it; ``schedulable``: Ready and not cordoned."""

    name: str
    labels: Mapping[str, str]
    allocatable: Resources
    taints: tuple[Taint, ...] = ()
    schedulable: bool = True


def admits(node: NodeShape, pod: PodShape) -> bool:
    """The pod may go to the node, capacity aside: selector, taints, schedulable."""
    if not node.schedulable:
        return False
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    return all(
        any(t.tolerates(taint) for t in pod.tolerations)
        for taint in node.taints
        if taint.effect in BLOCKING
    )


def need(node: NodeShape, pod: PodShape) -> dict[str, Decimal]:
    """What the pod takes of the node: its requests, and one ``pods`` slot if counted."""
    out = {k: v for k, v in pod.requests.items() if v}
    if "pods" in node.allocatable:
        out["pods"] = out.get("pods", Decimal(0)) + 1
    return out


class Snapshot:
    """Free capacity per node, in insertion order; first fit, like a scheduling simulation."""

    def __init__(self, nodes: Iterable[NodeShape] = ()) -> None:
        self.nodes: dict[str, NodeShape] = {}
        self.free: dict[str, dict[str, Decimal]] = {}
        for node in nodes:
            self.add(node)

    def add(self, node: NodeShape) -> None:
        self.nodes[node.name] = node
        self.free[node.name] = dict(node.allocatable)

    def fork(self) -> Snapshot:
        """A copy to try something on (the simulator's Fork/Revert)."""
        out = Snapshot()
        out.nodes = dict(self.nodes)
        out.free = {name: dict(free) for name, free in self.free.items()}
        return out

    def take(self, name: str, pod: PodShape) -> None:
        """A pod bound to ``name`` uses its share (free may go below zero: bound is bound)."""
        if name in self.nodes:
            free = self.free[name]
            for k, v in need(self.nodes[name], pod).items():
                free[k] = free.get(k, Decimal(0)) - v

    def fits(self, name: str, pod: PodShape) -> bool:
        node, free = self.nodes[name], self.free[name]
        return admits(node, pod) and all(
            free.get(k, Decimal(0)) >= v for k, v in need(node, pod).items()
        )

    def place(self, pod: PodShape) -> str | None:
        """The first node the pod fits on, taken; None if none."""
        for name in self.nodes:
            if self.fits(name, pod):
                self.take(name, pod)
                return name
        return None

    def place_all(self, pods: Iterable[PodShape]) -> list[PodShape]:
        """Place each pod in turn; the ones that fit nowhere."""
        return [pod for pod in pods if self.place(pod) is None]


def pack(pods: Iterable[PodShape], template: NodeShape) -> int | None:
    """New nodes of ``template`` that hold ``pods`` (first fit, as the binpacking estimator of
    ``estimator/binpacking_estimator.go`` opens a node when no opened one fits); None when
    some pod does not fit an empty template node at all."""
    opened = Snapshot()
    for pod in pods:
        if opened.place(pod) is not None:
            continue
        node = NodeShape(
            f"new-{len(opened.nodes)}", template.labels, template.allocatable, template.taints
        )
        opened.add(node)
        if opened.place(pod) is None:
            return None
    return len(opened.nodes)
