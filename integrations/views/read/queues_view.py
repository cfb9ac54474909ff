"""``trainweave queues``: the Kueue admin's view, per ClusterQueue and namespace. Pure.

Maps what one read of the cluster shows onto, per ClusterQueue (Kueue v1beta2
``clusterqueues``: ``spec.resourceGroups`` nominal quota, ``status.flavorsReservation``,
``status.admittedWorkloads`` / ``pendingWorkloads``) and per namespace, the
pipelines (TrainJobs) with a step holding its quota or waiting for it. A Workload's
ClusterQueue is ``status.admission.clusterQueue``, else its LocalQueue's
``spec.clusterQueue`` (``<namespace>/<spec.queueName>``). Step facts are the
controller's own (``observed.quota_records`` -> ``quota.StepQuota``): state and
Kueue's ``QuotaReserved=False`` reason, wait (creation -> ``QuotaReserved``, or -> now
while waiting), holding time and GPU-hours, and what an admission check does to it
(``capacity``: a step holding its quota while a ProvisioningRequest is provisioned is counted
per ClusterQueue as waiting for capacity, apart from the steps waiting for quota); a pipeline's
GPU-hours also count its steps that are gone (the ``trainweave.io/quota`` annotation,
``quota.merge``).
Workloads that are no TrainJob's step are counted as ``other``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainweave import labels
from trainweave.integrations.views.read import capacity, quota
from trainweave.integrations.views.read.bodies import (
    ClusterQueueBody,
    LocalQueueBody,
    Meta,
    TrainJobBody,
    WorkloadBody,
    list_at,
    state_of,
)
from trainweave.integrations.views.read.observed import Observed, quota_records
from trainweave.integrations.views.read.times import format_time, parse_time
from trainweave.labels import TrainJobState

Json = dict[str, Any]
UNKNOWN = ""  # the ClusterQueue of a waiting Workload whose LocalQueue is missing


@dataclass(frozen=True)
class Cluster:
    """One read of the cluster (wire dicts, any namespaces)."""

    cluster_queues: tuple[Json, ...] = ()
    local_queues: tuple[Json, ...] = ()
    workloads: tuple[Json, ...] = ()
    trainjobs: tuple[Json, ...] = ()
    workflows: tuple[Json, ...] = ()


@dataclass(frozen=True)
class StepRow:
    """One step Workload holding quota or waiting for it."""

    quota: quota.StepQuota
    waited_seconds: float | None  # creation -> QuotaReserved, or -> now while waiting

    @property
    def waiting(self) -> bool:
        """No quota yet (Pending, or Evicted and requeued)."""
        return self.quota.state in quota.WAITING


@dataclass(frozen=True)
class PipelineRow:
    """A TrainJob with steps in one ClusterQueue."""

    trainjob: str
    state: TrainJobState
    gpu_hours: float  # all its steps, gone ones included
    steps: tuple[StepRow, ...]


@dataclass(frozen=True)
class NamespaceRow:
    """One namespace's use of one ClusterQueue."""

    namespace: str
    local_queues: tuple[str, ...] = ()
    pipelines: tuple[PipelineRow, ...] = ()
    other_admitted: int = 0
    other_pending: int = 0


@dataclass(frozen=True)
class QuotaLine:
    """Reserved / nominal of one flavor's resource (quantity strings as Kueue writes them)."""

    flavor: str
    resource: str
    nominal: str
    reserved: str


@dataclass(frozen=True)
class QueueRow:
    """One ClusterQueue: its quota and the namespaces using it."""

    name: str
    cohort: str = ""
    admitted: int = 0
    pending: int = 0
    quota: tuple[QuotaLine, ...] = ()
    namespaces: tuple[NamespaceRow, ...] = field(default_factory=tuple)

    @property
    def waiting_for_capacity(self) -> int:
        """Steps shown here that hold this ClusterQueue's quota and wait for capacity."""
        return sum(
            s.quota.waiting_for_capacity
            for ns in self.namespaces
            for p in ns.pipelines
            for s in p.steps
        )


def _quota_lines(cq: Json) -> tuple[QuotaLine, ...]:
    body = ClusterQueueBody.of(cq)
    nominal: dict[tuple[str, str], str] = {}
    for group in body.resource_groups:
        for flavor in list_at(group, "flavors"):
            for res in list_at(flavor, "resources"):
                nominal[(str(flavor.get("name")), str(res.get("name")))] = str(
                    res.get("nominalQuota", "0")
                )
    reserved: dict[tuple[str, str], str] = {}
    for flavor in body.flavors_reservation:
        for res in list_at(flavor, "resources"):
            reserved[(str(flavor.get("name")), str(res.get("name")))] = str(res.get("total", "0"))
    keys = list(nominal) + [k for k in reserved if k not in nominal]
    return tuple(
        QuotaLine(f, r, nominal.get((f, r), "0"), reserved.get((f, r), "0")) for f, r in keys
    )


def _records(
    cluster: Cluster, now: datetime
) -> dict[tuple[str, str], tuple[Json, quota.StepQuota]]:
    """(namespace, Workload name) -> (TrainJob, its StepQuota) for every step Workload."""
    by_ns: dict[str, list[Json]] = defaultdict(list)
    for wl in cluster.workloads:
        by_ns[Meta.of(wl).namespace].append(wl)
    wfs: dict[tuple[str, str], list[Json]] = defaultdict(list)
    for wf in cluster.workflows:
        meta = Meta.of(wf)
        wfs[(meta.namespace, meta.label(labels.TRAINJOB))].append(wf)
    out = {}
    for tj in cluster.trainjobs:
        meta = Meta.of(tj)
        ns, name = meta.namespace, meta.name
        obs = Observed(tj, tuple(wfs[(ns, name)]), (), tuple(by_ns[ns]))
        for q in quota_records(obs, now):
            out[(ns, q.workload)] = (tj, q)
    return out


def _state(tj: Json) -> TrainJobState:
    body = TrainJobBody.of(tj)
    return state_of(body.conditions, body.suspend)


def queues_view(
    cluster: Cluster, now: datetime, namespace: str = "", cluster_queue: str = ""
) -> tuple[QueueRow, ...]:
    """Per ClusterQueue (by name; a missing LocalQueue's Workloads last, under ``UNKNOWN``),
    per namespace: pipelines holding or waiting for its quota and other Workloads. With
    ``namespace`` / ``cluster_queue``, only those. Pure."""
    lq_cq = {
        (lqb.meta.namespace, lqb.meta.name): lqb.cluster_queue
        for lqb in map(LocalQueueBody.of, cluster.local_queues)
    }
    records = _records(cluster, now)
    live: dict[tuple[str, str], list[quota.StepQuota]] = defaultdict(list)
    for (ns, _), (tj, q) in records.items():
        live[(ns, Meta.of(tj).name)].append(q)
    # (cq, ns) -> trainjob name -> rows; (cq, ns) -> [admitted, pending] of other Workloads
    steps: dict[tuple[str, str], dict[str, list[StepRow]]] = defaultdict(lambda: defaultdict(list))
    tjs: dict[tuple[str, str], Json] = {}
    others: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for wl in cluster.workloads:
        wlb = WorkloadBody.of(wl)
        ns, name = wlb.meta.namespace, wlb.meta.name
        cq = wlb.cluster_queue or lq_cq.get((ns, wlb.queue_name), UNKNOWN)
        found = records.get((ns, name))
        if found is None:
            q = quota.step_quota(wl, {}, now)
            if q.state in quota.HOLDING:
                others[(cq, ns)][0] += 1
            elif q.state in quota.WAITING:
                others[(cq, ns)][1] += 1
            continue
        tj, q = found
        if q.state in quota.WAITING:
            created = parse_time(q.created)
            waited = max(0.0, (now - created).total_seconds()) if created else None
        elif q.state in quota.HOLDING:
            waited = q.wait_seconds
        else:
            continue  # finished: holds nothing
        tj_name = Meta.of(tj).name
        steps[(cq, ns)][tj_name].append(StepRow(q, waited))
        tjs[(ns, tj_name)] = tj
    cqs = {Meta.of(c).name: c for c in cluster.cluster_queues}
    names = sorted(set(cqs) | {cq for cq, _ in steps} | {cq for cq, _ in others} - {UNKNOWN})
    if UNKNOWN in {cq for cq, _ in steps} | {cq for cq, _ in others}:
        names.append(UNKNOWN)
    out = []
    for cq_name in names:
        if cluster_queue and cq_name != cluster_queue:
            continue
        namespaces = sorted(
            {lns for (lns, _), c in lq_cq.items() if c == cq_name}
            | {ns for c, ns in steps if c == cq_name}
            | {ns for c, ns in others if c == cq_name}
        )
        rows = []
        for ns in namespaces:
            if namespace and ns != namespace:
                continue
            by_tj = steps.get((cq_name, ns), {})
            pipelines = []
            for tj_name in sorted(by_tj):
                tj = tjs[(ns, tj_name)]
                ann = Meta.of(tj).annotation(labels.QUOTA_ANNOTATION)
                merged = quota.merge(quota.decode(ann), live[(ns, tj_name)])
                total = float(quota.totals(merged)["gpuHours"])
                ordered = sorted(by_tj[tj_name], key=lambda r: (r.waiting, r.quota.step))
                pipelines.append(PipelineRow(tj_name, _state(tj), total, tuple(ordered)))
            lqs = tuple(sorted(n for (lns, n), c in lq_cq.items() if lns == ns and c == cq_name))
            admitted, pending = others.get((cq_name, ns), [0, 0])
            rows.append(NamespaceRow(ns, lqs, tuple(pipelines), admitted, pending))
        if namespace and not rows:
            continue
        cq_obj = cqs.get(cq_name, {})
        cqb = ClusterQueueBody.of(cq_obj)
        out.append(
            QueueRow(
                name=cq_name,
                cohort=cqb.cohort,
                admitted=cqb.admitted_workloads,
                pending=cqb.pending_workloads,
                quota=_quota_lines(cq_obj),
                namespaces=tuple(rows),
            )
        )
    return tuple(out)


def to_json(view: tuple[QueueRow, ...], now: datetime) -> Json:
    """The ``-o json`` document (camelCase, seconds, GPU-hours)."""

    def step(r: StepRow) -> Json:
        q = r.quota
        return {
            "step": q.step,
            "role": q.role,
            "workload": q.workload,
            "queue": q.queue,
            "state": q.state,
            "reason": q.reason,
            "message": q.message,
            "waitedSeconds": r.waited_seconds,
            "heldSeconds": q.hold_seconds,
            "gpuHours": round(q.gpu_hours, 6),
            "usage": q.usage,
        } | ({"capacity": _capacity(q)} if capacity.note(q) else {})

    return {
        "now": format_time(now),
        "clusterQueues": [
            {
                "name": cq.name,
                "cohort": cq.cohort,
                "admittedWorkloads": cq.admitted,
                "pendingWorkloads": cq.pending,
                "waitingForCapacity": cq.waiting_for_capacity,
                "quota": [
                    {
                        "flavor": x.flavor,
                        "resource": x.resource,
                        "nominal": x.nominal,
                        "reserved": x.reserved,
                    }
                    for x in cq.quota
                ],
                "namespaces": [
                    {
                        "namespace": ns.namespace,
                        "localQueues": list(ns.local_queues),
                        "pipelines": [
                            {
                                "trainjob": p.trainjob,
                                "state": p.state.value,
                                "gpuHours": p.gpu_hours,
                                "steps": [step(s) for s in p.steps],
                            }
                            for p in ns.pipelines
                        ],
                        "otherWorkloads": {
                            "admitted": ns.other_admitted,
                            "pending": ns.other_pending,
                        },
                    }
                    for ns in cq.namespaces
                ],
            }
            for cq in view
        ],
    }


def _capacity(q: quota.StepQuota) -> Json:
    """A step's admission check in ``-o json``: only on a step it holds or evicted."""
    return {
        "check": q.check,
        "state": q.check_state,
        "message": q.check_message,
        "request": q.request,
        "waiting": q.waiting_for_capacity,
        "note": capacity.note(q),
    }
