"""Kueue queue objects: ResourceFlavor, ClusterQueue, LocalQueue, Topology (v1beta2 and v1beta1).

Our own pydantic models of the ``spec`` fields Kueue v0.19.2 serves
(``config/components/crd/bases/kueue.x-k8s.io_{resourceflavors,clusterqueues,
localqueues}.yaml``; types in ``apis/kueue/v1beta2``). Unknown fields are
errors naming the file and field path. v1beta1 differs only in ClusterQueue:
``cohort`` (v1beta2 ``cohortName``), the flat ``admissionChecks`` list, no
``concurrentAdmissionPolicy``, and the extra fungibility values ``Borrow`` and
``Preempt``. Quantities are checked with the CRD's quantity pattern. The CRD's
CEL rules that matter for quota (borrowingLimit needs a cohort, one quota per
covered resource in order) are checked too. A Topology
(``kueue.x-k8s.io_topologies.yaml``, the same in both versions) lists the node
labels of its levels; a ResourceFlavor's ``topologyName`` makes it a TAS flavor. ``v1`` Nodes
(alone or in a ``List``) give a TAS plan the nodes' labels, taints and allocatable. ``parse_queues`` gathers the
objects of several files into a ``QueueSet``; ``adapters.kueue.workloads.plan`` reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)
from pydantic.alias_generators import to_camel

from trainweave.errors import InputError, InputErrors
from trainweave.k8s_names import is_dns1123_subdomain
from trainweave.labels import Reason
from trainweave.quantity import crd_quantity, parse
from trainweave.topology import Node, Topology
from trainweave.wire import ObjectMeta, Wire, validate_model

GROUP = "kueue.x-k8s.io"
VERSIONS = ("v1beta2", "v1beta1")
KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue", "Topology")
Json = dict[str, Any]


def _name(value: str) -> str:
    if not is_dns1123_subdomain(value):
        raise ValueError(f"{value!r} must be a DNS subdomain (lower case, at most 253 characters)")
    return value


Quantity = Annotated[str, BeforeValidator(crd_quantity)]
Name = Annotated[str, AfterValidator(_name)]


class _Model(Wire):
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=False, frozen=True
    )


# --- ResourceFlavor ------------------------------------------------------------------


class Taint(_Model):
    key: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    value: str | None = None
    time_added: str | None = None


class Toleration(_Model):
    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class ResourceFlavorSpec(_Model):
    node_labels: dict[str, str] = Field(default_factory=dict, max_length=8)
    node_taints: list[Taint] = Field(default_factory=list, max_length=8)
    tolerations: list[Toleration] = Field(default_factory=list, max_length=8)
    topology_name: Name | None = None


class ResourceFlavor(Wire):
    """A ResourceFlavor: node labels and taints a flavor stands for."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: str = Field(alias="apiVersion")
    kind: Literal["ResourceFlavor"]
    metadata: ObjectMeta
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)
    status: Json | None = None


# --- ClusterQueue ----------------------------------------------------------------------


class ResourceQuota(_Model):
    """Quota of one resource in one flavor (``nominalQuota`` etc.)."""

    name: str = Field(min_length=1)
    nominal_quota: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None


class FlavorQuotas(_Model):
    name: Name
    resources: list[ResourceQuota] = Field(max_length=64)


class ResourceGroup(_Model):
    covered_resources: list[str] = Field(max_length=64)
    flavors: list[FlavorQuotas] = Field(max_length=64)

    @model_validator(mode="after")
    def _same_resources(self) -> ResourceGroup:
        for flavor in self.flavors:
            names = [r.name for r in flavor.resources]
            if names != self.covered_resources:
                raise ValueError(
                    f"flavor {flavor.name!r} must list the coveredResources "
                    f"{self.covered_resources} in order, got {names}"
                )
        return self


class FlavorFungibility(_Model):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = "TryNextFlavor"
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class FlavorFungibilityV1Beta1(FlavorFungibility):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor", "Borrow"] = "MayStopSearch"  # type: ignore[assignment]
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor", "Preempt"] = "TryNextFlavor"  # type: ignore[assignment]


class BorrowWithinCohort(_Model):
    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = None


class Preemption(_Model):
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = "Never"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Never"
    borrow_within_cohort: BorrowWithinCohort | None = None


class AdmissionCheckStrategyRule(_Model):
    name: str = Field(max_length=316)
    on_flavors: list[Name] = Field(default_factory=list, max_length=64)


class AdmissionChecksStrategy(_Model):
    admission_checks: list[AdmissionCheckStrategyRule] = Field(max_length=64)


class AdmissionScope(_Model):
    admission_mode: Literal["UsageBasedAdmissionFairSharing", "NoAdmissionFairSharing"]


class FairSharing(_Model):
    weight: Quantity = "1"


class MigrationConstraints(_Model):
    last_acceptable_flavor_name: Name | None = None


class Migration(_Model):
    mode: Literal["TryPreferredFlavors", "RetainFirstAdmission"]
    constraints: MigrationConstraints | None = None


class ConcurrentAdmissionPolicy(_Model):
    migration: Migration


class _ClusterQueueSpecBase(_Model):
    resource_groups: list[ResourceGroup] = Field(default_factory=list, max_length=16)
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = "BestEffortFIFO"
    namespace_selector: Json | None = None
    preemption: Preemption = Field(default_factory=Preemption)
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    admission_scope: AdmissionScope | None = None
    fair_sharing: FairSharing | None = None
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = "None"

    @property
    def cohort(self) -> str | None:
        """The cohort this ClusterQueue borrows from and lends to, if any."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _limits_need_cohort(self) -> _ClusterQueueSpecBase:
        if self.cohort:
            return self
        for group in self.resource_groups:
            for flavor in group.flavors:
                for res in flavor.resources:
                    if res.borrowing_limit is not None:
                        raise ValueError(
                            f"borrowingLimit of {res.name!r} in flavor {flavor.name!r} "
                            "must be nil when cohort is empty"
                        )
        return self


class ClusterQueueSpec(_ClusterQueueSpecBase):
    """``kueue.x-k8s.io/v1beta2`` ClusterQueue spec."""

    cohort_name: Name | None = None
    flavor_fungibility: FlavorFungibility = Field(default_factory=FlavorFungibility)
    concurrent_admission_policy: ConcurrentAdmissionPolicy | None = None

    @property
    def cohort(self) -> str | None:
        return self.cohort_name


class ClusterQueueSpecV1Beta1(_ClusterQueueSpecBase):
    """``kueue.x-k8s.io/v1beta1`` ClusterQueue spec: ``cohort``, flat ``admissionChecks``."""

    cohort_: Name | None = Field(default=None, alias="cohort")
    flavor_fungibility: FlavorFungibilityV1Beta1 = Field(default_factory=FlavorFungibilityV1Beta1)
    admission_checks: list[Annotated[str, Field(max_length=316)]] = Field(default_factory=list)

    @property
    def cohort(self) -> str | None:
        return self.cohort_


class ClusterQueue(Wire):
    """A ClusterQueue in either served version; ``spec.cohort`` reads both spellings."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: str = Field(alias="apiVersion")
    kind: Literal["ClusterQueue"]
    metadata: ObjectMeta
    spec: ClusterQueueSpec | ClusterQueueSpecV1Beta1
    status: Json | None = None


class ClusterQueueV1Beta1(ClusterQueue):
    spec: ClusterQueueSpecV1Beta1 = Field(default_factory=ClusterQueueSpecV1Beta1)


class ClusterQueueV1Beta2(ClusterQueue):
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)


# --- LocalQueue ------------------------------------------------------------------------


class LocalQueueSpec(_Model):
    cluster_queue: Name | None = None
    stop_policy: Literal["None", "Hold", "HoldAndDrain"] = "None"
    fair_sharing: FairSharing | None = None


class LocalQueue(Wire):
    """A LocalQueue: a namespaced name pointing at a ClusterQueue."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: str = Field(alias="apiVersion")
    kind: Literal["LocalQueue"]
    metadata: ObjectMeta
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    status: Json | None = None


def _expand(docs: Iterable[tuple[Json, str]]) -> Iterator[tuple[Json, str]]:
    """The documents, a ``v1`` ``List`` (``kubectl get nodes -o yaml``) as its items."""
    for doc, source in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and doc.get("apiVersion") == "v1":
            yield from ((item, source) for item in doc.get("items") or [])
        else:
            yield doc, source


def v1beta1_note(docs: Iterable[tuple[Json, str]]) -> str | None:
    """One line for ``plan --queues`` when a file holds ``kueue.x-k8s.io/v1beta1`` objects: they
    are read as before, but Kueue 0.20 stops serving that version and 0.21 removes it; None
    when no file does."""
    sources = list(
        dict.fromkeys(
            source
            for doc, source in _expand(docs)
            if isinstance(doc, dict) and doc.get("apiVersion") == f"{GROUP}/v1beta1"
        )
    )
    if not sources:
        return None
    return (
        f"note: {', '.join(sources)}: {GROUP}/v1beta1 is read here, but Kueue 0.20+ no longer"
        " serves it (0.21 removes it); write these objects as v1beta2 (ClusterQueue:"
        " cohort -> cohortName, admissionChecks -> admissionChecksStrategy)"
    )


# --- the set -----------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueSet:
    """Queue objects by name; LocalQueues by ``(namespace, name)``.

    A LocalQueue without ``metadata.namespace`` is stored under ``""`` and
    matches any namespace (``kubectl apply -n`` decides it at apply time).
    """

    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    local_queues: Mapping[tuple[str, str], LocalQueue] = field(default_factory=dict)
    topologies: Mapping[str, Topology] = field(default_factory=dict)
    nodes: tuple[Node, ...] = ()

    def local_queue(self, namespace: str, name: str) -> LocalQueue | None:
        """The LocalQueue ``name`` as seen from ``namespace``."""
        return self.local_queues.get((namespace, name)) or self.local_queues.get(("", name))

    def cohort_members(self, cohort: str) -> list[ClusterQueue]:
        """ClusterQueues in ``cohort``, in name order."""
        return [cq for _, cq in sorted(self.cluster_queues.items()) if cq.spec.cohort == cohort]


def parse_queues(docs: Iterable[tuple[Json, str]]) -> QueueSet:
    """A QueueSet from ``(document, source file)`` pairs; raises InputErrors naming each."""
    errors: list[InputError] = []
    flavors: dict[str, ResourceFlavor] = {}
    cqs: dict[str, ClusterQueue] = {}
    lqs: dict[tuple[str, str], LocalQueue] = {}
    topologies: dict[str, Topology] = {}
    nodes: list[Node] = []
    seen: dict[tuple[str, str, str], str] = {}
    for doc, source in _expand(docs):
        try:
            if isinstance(doc, dict) and doc.get("kind") == "Node":
                nodes.append(validate_model(Node, doc, source, Reason.INVALID_QUEUES))
                continue
            obj = parse_queue(doc, source)
        except InputErrors as exc:
            errors += exc.errors
            continue
        ns = obj.metadata.namespace if isinstance(obj, LocalQueue) else ""
        key = (obj.kind, ns, obj.metadata.name)
        if key in seen:
            errors.append(
                InputError(
                    "metadata.name",
                    f"duplicate {obj.kind} {obj.metadata.name!r} (first in {seen[key]})",
                    source,
                )
            )
            continue
        seen[key] = source
        if isinstance(obj, ResourceFlavor):
            flavors[obj.metadata.name] = obj
        elif isinstance(obj, ClusterQueue):
            cqs[obj.metadata.name] = obj
        elif isinstance(obj, Topology):
            topologies[obj.metadata.name] = obj
        else:
            lqs[(ns, obj.metadata.name)] = obj
    if errors:
        raise InputErrors(errors)
    return QueueSet(flavors, cqs, lqs, topologies, tuple(nodes))


def parse_queue(
    doc: Json, source: str = ""
) -> ResourceFlavor | ClusterQueue | LocalQueue | Topology:
    """One Kueue queue object from a wire dict; InputErrors name every problem."""
    if not isinstance(doc, dict):
        raise InputErrors([InputError("(document)", "expected a mapping", source)])
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    allowed = f"{GROUP}/{VERSIONS[0]} or {GROUP}/{VERSIONS[1]}"
    if kind not in KINDS:
        raise InputErrors(
            [
                InputError(
                    "kind",
                    f"expected a Kueue {', '.join(KINDS[:-1])} or {KINDS[-1]} "
                    f"({allowed}), got {api_version or '?'} {kind or '?'}",
                    source,
                )
            ]
        )
    if api_version not in [f"{GROUP}/{v}" for v in VERSIONS]:
        raise InputErrors(
            [InputError("apiVersion", f"expected {allowed}, got {api_version!r}", source)]
        )
    obj: ResourceFlavor | ClusterQueue | LocalQueue | Topology
    if kind == "Topology":
        obj = validate_model(Topology, doc, source, Reason.INVALID_QUEUES)
    elif kind == "ResourceFlavor":
        obj = validate_model(ResourceFlavor, doc, source, Reason.INVALID_QUEUES)
    elif kind == "LocalQueue":
        obj = validate_model(LocalQueue, doc, source, Reason.INVALID_QUEUES)
    elif api_version == f"{GROUP}/v1beta1":
        obj = validate_model(ClusterQueueV1Beta1, doc, source, Reason.INVALID_QUEUES)
    else:
        obj = validate_model(ClusterQueueV1Beta2, doc, source, Reason.INVALID_QUEUES)
    if not obj.metadata.name:
        raise InputErrors([InputError("metadata.name", "required field is missing", source)])
    return obj


def quota_amount(value: str | int | None) -> Decimal | None:
    """A validated quota quantity as a number (None stays None)."""
    return None if value is None else parse(value)
