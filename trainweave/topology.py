"""Kueue's Topology (``kueue.x-k8s.io_topologies.yaml``, the same in v1beta2 and v1beta1) and
the core v1 Node fields a TAS plan reads (labels, taints, allocatable), as queue files give them.

A Topology lists the node labels of its levels, highest (e.g. block) first; a ResourceFlavor's
``topologyName`` (``trainweave.queues``) makes it a TAS flavor. Nodes are optional: with them
``adapters.kueue.tasplan`` can say when no domain could ever hold a step.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from trainweave.k8s_names import QUALIFIED_NAME
from trainweave.quantity import crd_quantity, parse
from trainweave.wire import ObjectMeta, Wire

Json = dict[str, Any]
Quantity = Annotated[str, BeforeValidator(crd_quantity)]


class _Model(Wire):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=False, frozen=True
    )


HOSTNAME = "kubernetes.io/hostname"


def _node_label(value: str) -> str:
    if not 1 <= len(value) <= 316 or not QUALIFIED_NAME.match(value):
        raise ValueError(f"{value!r} must be a node label name ([prefix/]name)")
    return value


class TopologyLevel(_Model):
    node_label: Annotated[str, AfterValidator(_node_label)]


class TopologySpec(_Model):
    levels: list[TopologyLevel] = Field(min_length=1, max_length=16)

    @field_validator("levels")
    @classmethod
    def _levels(cls, levels: list[TopologyLevel]) -> list[TopologyLevel]:
        """The CRD's CEL rules: unique levels, hostname only as the lowest."""
        labels = [level.node_label for level in levels]
        if len(set(labels)) != len(labels):
            raise ValueError(f"levels must be unique, got {labels}")
        if HOSTNAME in labels[:-1]:
            raise ValueError(
                f"the {HOSTNAME} label can only be used at the lowest level of topology"
            )
        return levels


class Topology(Wire):
    """A Topology: the node labels of its levels, highest (e.g. block) first."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: str = Field(alias="apiVersion")
    kind: Literal["Topology"]
    metadata: ObjectMeta
    spec: TopologySpec
    status: Json | None = None

    @property
    def levels(self) -> list[str]:
        """Node labels of the levels, highest first."""
        return [level.node_label for level in self.spec.levels]


# --- Node (core v1) -------------------------------------------------------------------------


class _Loose(Wire):
    """A real Node carries many fields the plan does not read: they are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class NodeTaint(_Loose):
    key: str
    effect: str
    value: str = ""


class NodeSpec(_Loose):
    taints: list[NodeTaint] = Field(default_factory=list)
    unschedulable: bool = False


class NodeStatus(_Loose):
    allocatable: dict[str, Quantity] = Field(default_factory=dict)


class Node(_Loose):
    """A Node (``kubectl get nodes -o yaml``): labels, taints, allocatable; what Kueue's TAS
    snapshot reads of it."""

    api_version: Literal["v1"] = Field(alias="apiVersion")
    kind: Literal["Node"]
    metadata: ObjectMeta
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)

    def allocatable(self) -> dict[str, Decimal]:
        """``status.allocatable`` as numbers."""
        return {k: parse(v) for k, v in self.status.allocatable.items()}
