"""The values of the ProvisioningRequest stand-in (hack/provisioner.py): what
hack/provisioner_core.py decides on (the requests, nodes and pods it sees, its configuration
and memory) and the actions it returns. Pure data; the names and messages are
cluster-autoscaler's (``provisioningrequest/conditions/conditions.go`` at the tag
cluster-autoscaler-1.36.1 of kubernetes/autoscaler; docs/provisioning.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from provisioner_fit import NodeShape, PodShape

CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
ACCEPTED, PROVISIONED, FAILED = "Accepted", "Provisioned", "Failed"
BOOKING_EXPIRED, CAPACITY_REVOKED = "BookingExpired", "CapacityRevoked"
# conditions.go:28-59 (CA master adds CapacityBookingConsumed, conditions.go:55-58)
MESSAGES = {
    "Accepted": "ProvisioningRequest is accepted by ClusterAutoscaler",
    "CapacityIsFound": "Capacity is found in the cluster",
    "CapacityIsProvisioned": "Capacity is found in the cluster",
    "CapacityIsNotFound": "Capacity is not found, CA will try to find it later.",
    "CapacityReservationTimeExpired": "Capacity reservation time is expired",
    "CapacityBookingConsumed": "Capacity booking consumed: all pods scheduled",
    "Expired": "ProvisioningRequest is expired",
}
EXPIRATION_SECONDS = 7 * 24 * 3600.0  # processor.go:41 defaultExpirationTime


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" or "False"
    reason: str
    message: str
    at: float  # lastTransitionTime, seconds since the epoch


@dataclass(frozen=True)
class Plan:
    """A scale-up: ``nodes`` new nodes asked for at ``at`` (kept on the request)."""

    nodes: int
    at: float


@dataclass(frozen=True)
class Request:
    """A ProvisioningRequest; ``pods``: one shape per pod of its PodSets, None when a
    PodTemplate it names is missing; ``count``: the sum of its PodSets' counts."""

    namespace: str
    name: str
    class_name: str
    created: float
    count: int
    pods: tuple[PodShape, ...] | None
    conditions: tuple[Condition, ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)
    plan: Plan | None = None
    revoke: bool = False

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def condition(self, ctype: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == ctype), None)

    def true(self, ctype: str) -> bool:
        c = self.condition(ctype)
        return c is not None and c.status == "True"


@dataclass(frozen=True)
class Node:
    shape: NodeShape
    owner: str | None = None  # the key of the request it was made for; None: not ours


@dataclass(frozen=True)
class Pod:
    """A pod that is not terminal; ``node``: where it is bound ("" if nowhere)."""

    namespace: str
    name: str
    node: str
    shape: PodShape
    consumes: str | None = None  # the request named by its consume annotation


@dataclass(frozen=True)
class World:
    requests: tuple[Request, ...] = ()
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()


@dataclass(frozen=True)
class Config:
    """Times in seconds (already scaled); ``template``: the node a scale-up adds."""

    template: NodeShape
    prefix: str = "provisioned"
    max_nodes: int = 16  # the node group's maximum size
    booking_seconds: float = 600.0  # processor.go:40 defaultReservationTime
    provision_delay_seconds: float = 30.0
    scale_down_unneeded_seconds: float = 600.0  # config/const.go:46
    retry_initial_seconds: float = 60.0  # flags.go:224
    retry_max_seconds: float = 600.0  # flags.go:225
    consumed_ends_booking: bool = True  # CA master; False: CA <= 1.36.1 (time only)
    wait_for_nodes: bool = False  # Provisioned only once the nodes exist (not CA's rule)


@dataclass(frozen=True)
class Memory:
    """What the loop carries from one tick to the next."""

    fail_next: int = 0
    revoke: frozenset[str] = frozenset()  # request keys or names to revoke once provisioned
    backoff: Mapping[str, float] = field(default_factory=dict)  # injector.go:61-69
    empty_since: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SetConditions:
    namespace: str
    name: str
    conditions: tuple[Condition, ...]  # the whole list, as the status is written


@dataclass(frozen=True)
class RecordPlan:
    namespace: str
    name: str
    plan: Plan


@dataclass(frozen=True)
class CreateNode:
    name: str
    owner: str


@dataclass(frozen=True)
class DeleteNode:
    name: str


Action = SetConditions | RecordPlan | CreateNode | DeleteNode


@dataclass(frozen=True)
class Decision:
    actions: tuple[Action, ...]
    memory: Memory


def node_name(prefix: str, key: str, index: int) -> str:
    """The ``index``-th node made for request ``key``: deterministic, so never made twice."""
    return f"{prefix}-{hashlib.sha256(key.encode()).hexdigest()[:10]}-{index}"


def with_condition(conditions: tuple[Condition, ...], new: Condition) -> tuple[Condition, ...]:
    """``conditions.AddOrUpdateCondition`` (conditions.go:75-106): the condition of that type
    replaced in place, else appended."""
    if any(c.type == new.type for c in conditions):
        return tuple(new if c.type == new.type else c for c in conditions)
    return (*conditions, new)
