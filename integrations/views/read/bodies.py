"""Typed, read-only views over the wire dicts the controller reads (as kopf's typed bodies). Pure.

The dicts stay the data (``Observed``, the informer caches and the slim transforms keep them
as the API sent them); a view is built where a field is read, ``PodBody.of(pod).phase``, and
reads through to the dict, so an absent or ``null`` field gives the default written below
(``""``, ``False``, ``0``, ``None``, an empty mapping or tuple) instead of a
chain of ``.get`` calls each defaulted with ``or {}``. ``obj_at`` / ``list_at`` walk any other
path the same way (a Workflow template's ``dag.tasks``, a task's ``arguments.parameters``).

Wire field -> attribute (``Body`` gives the first group on every view):

- ``metadata`` -> ``Body.meta`` (a ``Meta``), ``spec`` / ``status`` -> ``Body.spec`` /
  ``Body.status`` (``{}`` when absent), ``status.conditions`` -> ``Body.conditions``
  (a list of the condition dicts, ``[]`` when absent)
- ``Meta``: ``metadata.name`` / ``namespace`` / ``uid`` / ``resourceVersion`` /
  ``creationTimestamp`` / ``deletionTimestamp`` -> ``name`` / ``namespace`` / ``uid`` /
  ``resource_version`` / ``creation_timestamp`` / ``deletion_timestamp`` (``""`` when
  absent), a list's ``metadata.continue`` -> ``continue_token`` (``""``); ``labels`` / ``annotations`` -> mappings (``{}``); ``label(key)`` /
  ``annotation(key)`` -> the value as a string, ``default`` (``""``) when the key is absent;
  ``ownerReferences`` -> ``owner_references`` (tuple of dicts), their uids -> ``owner_uids``,
  a controller reference to a uid -> ``controlled_by(uid)``; ``finalizers`` -> a tuple
- ``TrainJobBody``: ``spec.suspend`` -> ``suspend`` (bool), ``spec.managedBy`` ->
  ``managed_by`` (``""``), ``spec.activeDeadlineSeconds`` -> ``active_deadline_seconds``
  (int, None when absent or 0), ``spec.runtimeRef`` -> ``runtime_ref`` (``{}``),
  ``status.jobsStatus`` -> ``jobs_status`` (``[]``)
- ``PodBody``: ``status.phase`` -> ``phase`` (``""``), phase Succeeded/Failed ->
  ``terminal``, the ``Ready`` condition True -> ``ready``, ``spec.schedulingGates[].name`` ->
  ``scheduling_gates``, Kueue's admission gate among them -> ``gated``, a
  ``deletionTimestamp`` -> ``deleting``
- ``WorkflowBody``: ``status.phase`` -> ``phase``, ``spec.templates`` -> ``templates``
  (a tuple of the template dicts); a template's own ``metadata`` reads with ``Meta.of``
- ``WorkloadBody`` (Kueue): ``spec.queueName`` -> ``queue_name``,
  ``status.admission.clusterQueue`` -> ``cluster_queue`` (``""``), the ``Finished``
  condition True -> ``finished``
- ``LocalQueueBody``: ``spec.clusterQueue`` -> ``cluster_queue``
- ``ClusterQueueBody``: ``spec.cohortName`` -> ``cohort``, ``spec.resourceGroups`` ->
  ``resource_groups``, ``status.flavorsReservation`` -> ``flavors_reservation``,
  ``status.admittedWorkloads`` / ``pendingWorkloads`` -> ``admitted_workloads`` /
  ``pending_workloads`` (0)

Workflows and Workloads are parsed further by ``argo_view.view`` (``WorkflowView``) and
``quota.step_quota`` (``StepQuota``); these bodies only read the fields the rest of the code
reads directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

from trainweave import labels
from trainweave.labels import ConditionType, TrainJobState
from trainweave.states import KueueCondition, PodPhase

Json = dict[str, Any]
_EMPTY: Json = {}


def obj_at(obj: Mapping[str, Any] | None, *path: str) -> Json:
    """The mapping at ``path`` in ``obj``; ``{}`` where any step is absent, null or no mapping.
    Read only: the result may be ``obj``'s own dict."""
    cur: Any = obj
    for key in path:
        # a dict first: the ABC check of ``Mapping`` is the slow path (a reconcile reads ~100k)
        cur = cur.get(key) if type(cur) is dict or isinstance(cur, Mapping) else None
    return cur if isinstance(cur, dict) else {}


def list_at(obj: Mapping[str, Any] | None, *path: str) -> list[Any]:
    """The list at ``path`` in ``obj``; ``[]`` where any step is absent or null."""
    *head, last = path
    found = obj_at(obj, *head).get(last) if path else None
    return list(found) if found else []


def condition(conds: Iterable[Json], ctype: str) -> Json | None:
    """The first condition of type ``ctype`` in a ``status.conditions`` list, if any."""
    return next((c for c in conds if c.get("type") == ctype), None)


def condition_true(conds: Iterable[Json], ctype: str) -> bool:
    """The condition of type ``ctype`` is there and True."""
    found = condition(conds, ctype)
    return found is not None and found.get("status") == "True"


def state_of(conds: list[Json], suspended: bool) -> TrainJobState:
    """The TrainJob's state: Complete or Failed when True, else Suspended or Running."""
    if condition_true(conds, ConditionType.COMPLETE):
        return TrainJobState.COMPLETE
    if condition_true(conds, ConditionType.FAILED):
        return TrainJobState.FAILED
    return TrainJobState.SUSPENDED if suspended else TrainJobState.RUNNING


def _str(value: Any) -> str:
    return "" if value is None else str(value)


@dataclass(frozen=True, slots=True)
class Meta:
    """An object's ``metadata``."""

    raw: Json

    @classmethod
    def of(cls, obj: Mapping[str, Any] | None) -> Meta:
        """The metadata of ``obj`` (a whole object, or a Workflow template)."""
        return cls(obj_at(obj, "metadata"))

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return _str(self.raw.get("name"))

    @property
    def namespace(self) -> str:
        """``metadata.namespace``."""
        return _str(self.raw.get("namespace"))

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        return _str(self.raw.get("uid"))

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``."""
        return _str(self.raw.get("resourceVersion"))

    @property
    def creation_timestamp(self) -> str:
        """``metadata.creationTimestamp`` (RFC 3339 as sent)."""
        return _str(self.raw.get("creationTimestamp"))

    @property
    def deletion_timestamp(self) -> str:
        """``metadata.deletionTimestamp`` (``""``: not being deleted)."""
        return _str(self.raw.get("deletionTimestamp"))

    @property
    def continue_token(self) -> str:
        """``metadata.continue`` of a list (``""``: the last page)."""
        return _str(self.raw.get("continue"))

    @property
    def labels(self) -> Mapping[str, Any]:
        """``metadata.labels``."""
        return obj_at(self.raw, "labels")

    @property
    def annotations(self) -> Mapping[str, Any]:
        """``metadata.annotations``."""
        return obj_at(self.raw, "annotations")

    def label(self, key: str, default: str = "") -> str:
        """The label ``key``, ``default`` when absent."""
        value = self.labels.get(key)
        return default if value is None else str(value)

    def annotation(self, key: str, default: str = "") -> str:
        """The annotation ``key``, ``default`` when absent."""
        value = self.annotations.get(key)
        return default if value is None else str(value)

    @property
    def owner_references(self) -> tuple[Json, ...]:
        """``metadata.ownerReferences``."""
        return tuple(list_at(self.raw, "ownerReferences"))

    @property
    def owner_uids(self) -> frozenset[str]:
        """The uids of ``metadata.ownerReferences``."""
        return frozenset(_str(r.get("uid")) for r in self.owner_references)

    def controlled_by(self, uid: str) -> bool:
        """A controller ownerReference names ``uid``."""
        return any(
            _str(r.get("uid")) == uid and bool(r.get("controller")) for r in self.owner_references
        )

    @property
    def finalizers(self) -> tuple[str, ...]:
        """``metadata.finalizers``."""
        return tuple(str(f) for f in list_at(self.raw, "finalizers"))


@dataclass(frozen=True, slots=True)
class Body:
    """Any object: its metadata, spec, status and conditions."""

    raw: Json

    @classmethod
    def of(cls, obj: Mapping[str, Any] | None) -> Self:
        """A view of ``obj`` (None: an empty object)."""
        return cls(obj if isinstance(obj, dict) else dict(obj or _EMPTY))

    @property
    def meta(self) -> Meta:
        """``metadata``."""
        return Meta.of(self.raw)

    @property
    def spec(self) -> Json:
        """``spec`` (``{}`` when absent)."""
        return obj_at(self.raw, "spec")

    @property
    def status(self) -> Json:
        """``status`` (``{}`` when absent)."""
        return obj_at(self.raw, "status")

    @property
    def conditions(self) -> list[Json]:
        """``status.conditions`` (a new list of the condition dicts)."""
        return list_at(self.raw, "status", "conditions")

    def condition_true(self, ctype: str) -> bool:
        """The condition of type ``ctype`` is there and True."""
        return condition_true(self.conditions, ctype)


@dataclass(frozen=True, slots=True)
class TrainJobBody(Body):
    """A Kubeflow Trainer TrainJob."""

    @property
    def suspend(self) -> bool:
        """``spec.suspend``."""
        return bool(self.spec.get("suspend"))

    @property
    def managed_by(self) -> str:
        """``spec.managedBy``."""
        return _str(self.spec.get("managedBy"))

    @property
    def active_deadline_seconds(self) -> int | None:
        """``spec.activeDeadlineSeconds`` (None when absent or 0)."""
        value = self.spec.get("activeDeadlineSeconds")
        # the CRD's type is integer; anything else is the render's input error, not a deadline
        return value if isinstance(value, int) and not isinstance(value, bool) and value else None

    @property
    def runtime_ref(self) -> Json:
        """``spec.runtimeRef``."""
        return obj_at(self.spec, "runtimeRef")

    @property
    def jobs_status(self) -> list[Json]:
        """``status.jobsStatus``."""
        return list_at(self.status, "jobsStatus")


@dataclass(frozen=True, slots=True)
class PodBody(Body):
    """A core/v1 Pod."""

    @property
    def phase(self) -> str:
        """``status.phase``."""
        return _str(self.status.get("phase"))

    @property
    def terminal(self) -> bool:
        """The phase is Succeeded or Failed."""
        return self.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)

    @property
    def ready(self) -> bool:
        """The first ``Ready`` condition is True."""
        for cond in self.conditions:
            if cond.get("type") == "Ready":
                return bool(cond.get("status") == "True")
        return False

    @property
    def scheduling_gates(self) -> tuple[str, ...]:
        """``spec.schedulingGates[].name``."""
        return tuple(_str(g.get("name")) for g in list_at(self.spec, "schedulingGates"))

    @property
    def gated(self) -> bool:
        """Kueue's admission gate holds the pod."""
        return labels.KUEUE_ADMISSION_GATE in self.scheduling_gates

    @property
    def deleting(self) -> bool:
        """``metadata.deletionTimestamp`` is set."""
        return bool(self.meta.deletion_timestamp)


@dataclass(frozen=True, slots=True)
class WorkflowBody(Body):
    """An Argo Workflow (fields read outside ``argo_view.view``)."""

    @property
    def phase(self) -> str:
        """``status.phase``."""
        return _str(self.status.get("phase"))

    @property
    def templates(self) -> tuple[Json, ...]:
        """``spec.templates``."""
        return tuple(list_at(self.spec, "templates"))


@dataclass(frozen=True, slots=True)
class WorkloadBody(Body):
    """A Kueue Workload (fields read outside ``quota.step_quota``)."""

    @property
    def queue_name(self) -> str:
        """``spec.queueName`` (the LocalQueue)."""
        return _str(self.spec.get("queueName"))

    @property
    def cluster_queue(self) -> str:
        """``status.admission.clusterQueue`` (``""``: not admitted)."""
        return _str(obj_at(self.status, "admission").get("clusterQueue"))

    @property
    def finished(self) -> bool:
        """Kueue marked the Workload Finished."""
        return self.condition_true(KueueCondition.FINISHED)


@dataclass(frozen=True, slots=True)
class LocalQueueBody(Body):
    """A Kueue LocalQueue."""

    @property
    def cluster_queue(self) -> str:
        """``spec.clusterQueue``."""
        return _str(self.spec.get("clusterQueue"))


@dataclass(frozen=True, slots=True)
class ClusterQueueBody(Body):
    """A Kueue ClusterQueue."""

    @property
    def cohort(self) -> str:
        """``spec.cohortName``."""
        return _str(self.spec.get("cohortName"))

    @property
    def resource_groups(self) -> list[Json]:
        """``spec.resourceGroups``."""
        return list_at(self.spec, "resourceGroups")

    @property
    def flavors_reservation(self) -> list[Json]:
        """``status.flavorsReservation``."""
        return list_at(self.status, "flavorsReservation")

    @property
    def admitted_workloads(self) -> int:
        """``status.admittedWorkloads``."""
        return int(self.status.get("admittedWorkloads") or 0)

    @property
    def pending_workloads(self) -> int:
        """``status.pendingWorkloads``."""
        return int(self.status.get("pendingWorkloads") or 0)
