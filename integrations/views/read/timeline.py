"""A TrainJob's step timeline: per step Workload (one step of one attempt), when it waited for
quota, held it and ran, from what the controller already records. Pure (``now`` passed in).
Sources:

- the live Workloads (Kueue v1beta2 ``apis/kueue/v1beta2/workload_types.go``): creation,
  ``QuotaReserved`` (its False reason/message while waiting), ``Admitted``, ``Evicted``,
  ``Finished``; the ``trainweave.io/quota`` annotation (``quota.StepQuota``) for Workloads that are
  gone, so a finished TrainJob keeps its waits and holds;
- Kueue's own Events on a Workload (``pkg/scheduler/scheduler.go requeueAndUpdate``: a Warning
  whose reason is the ``QuotaReserved=False`` reason and whose message is the one the condition
  had): the reason a step waited for once the condition says ``QuotaReserved`` again; Events
  expire (kube-apiserver ``--event-ttl``, 1 h by default), the times do not;
- the pods' container start/finish (``status.containerStatuses``, Argo's ``wait`` sidecar
  skipped), else their Argo Pod nodes (``status.nodes``): a node's ``startedAt`` is its creation
  (argo ``workflow/controller/operator.go initializeNode``), before Kueue ungates the pod, so it is
  clipped to the quota reservation; ``finishedAt`` is the last container's finish
  (``getLatestFinishedAt``).

Held GPU-seconds: the Workload's reserved GPUs x (quota reserved -> finished, evicted, released,
else ``now``); used GPU-seconds: each pod's GPUs x its running time.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainweave import labels
from trainweave.integrations.views.read import argo_nodes, quota
from trainweave.integrations.views.read.bodies import Meta, TrainJobBody, WorkloadBody, condition
from trainweave.integrations.views.read.observed import Observed, group_of, quota_records
from trainweave.integrations.views.read.times import parse_time
from trainweave.labels import ConditionType
from trainweave.quantity import QuantityError, is_gpu, parse
from trainweave.states import KueueCondition

Json = dict[str, Any]
_SIDECARS = frozenset({"wait", "init"})  # Argo's executor containers
# TrainJob conditions that end the pipeline
_TERMINAL = (ConditionType.COMPLETE, ConditionType.FAILED)


class SpanKind(enum.StrEnum):
    """What a step was doing: waiting for quota, holding it without a pod running, running."""

    WAIT = "waiting"
    HELD = "held"
    RUN = "running"


@dataclass(frozen=True)
class Span:
    """One phase of a row, from ``start`` to ``end``."""

    kind: SpanKind
    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds())


@dataclass(frozen=True)
class Row:
    """One step Workload (a step of one attempt; a re-created Workload is a row of its own)."""

    step: str
    role: str
    attempt: int
    workload: str
    queue: str
    cluster_queue: str
    state: str  # quota.QuotaState
    reason: str  # why it waited (Kueue's QuotaReserved=False reason), "" if not known
    message: str
    created: datetime | None
    reserved: datetime | None  # QuotaReserved=True
    admitted: datetime | None
    running: datetime | None  # its first pod started
    ended: datetime | None  # finished, evicted or released; None while it holds or waits
    evicted: str  # the Evicted reason, if Kueue evicted it
    spans: tuple[Span, ...]
    gpus: float  # GPUs the Workload reserves
    gpu_seconds_held: float
    gpu_seconds_used: float

    def seconds(self, kind: SpanKind) -> float:
        """Seconds spent in spans of ``kind``."""
        return sum((s.seconds for s in self.spans if s.kind == kind), 0.0)


@dataclass(frozen=True)
class Timeline:
    """Every row of one TrainJob, on a common axis ``start`` -> ``end``."""

    namespace: str
    name: str
    state: str
    now: datetime
    start: datetime
    end: datetime
    rows: tuple[Row, ...]
    progress: int | None  # status.trainerStatus.progressPercentage (Trainer v2.3.0)
    remaining_seconds: int | None  # status.trainerStatus.estimatedRemainingSeconds


@dataclass(frozen=True)
class _Interval:
    group: str
    slot: str
    start: datetime
    end: datetime | None
    gpus: float | None  # from the pod spec; None when only the node is left


def timeline(obs: Observed, now: datetime, events: Iterable[Json] = ()) -> Timeline:
    """The timeline of ``obs`` at ``now``; ``events`` are Events of its namespace (any)."""
    tj = obs.trainjob
    body = TrainJobBody.of(tj)
    conds = body.conditions
    state = conds[-1]["type"] if conds else "Created"
    horizon = now
    for c in conds:
        if c.get("type") in _TERMINAL and c.get("status") == "True":
            horizon = parse_time(str(c.get("lastTransitionTime") or "")) or now
    records = quota.merge(
        quota.decode(body.meta.annotation(labels.QUOTA_ANNOTATION)), quota_records(obs, now)
    )
    live = {(Meta.of(w).name, Meta.of(w).creation_timestamp): w for w in obs.workloads}
    intervals = _intervals(obs)
    created_of: dict[str, list[datetime]] = {}
    for q in records:
        created_of.setdefault(q.workload, []).append(parse_time(q.created) or horizon)
    mine: dict[tuple[str, int], list[_Interval]] = {}
    for iv in intervals:
        starts = sorted(created_of.get(iv.group, []))
        idx = max([0] + [i for i, c in enumerate(starts) if c <= iv.start])
        mine.setdefault((iv.group, idx), []).append(iv)
    warnings = _waits(events)
    rows = []
    for q in records:
        starts = sorted(created_of[q.workload])
        idx = starts.index(parse_time(q.created) or horizon)
        rows.append(
            _row(
                q,
                live.get((q.workload, q.created)),
                mine.get((q.workload, idx), []),
                warnings,
                now,
                horizon,
            )
        )
    rows.sort(key=lambda r: (r.attempt, r.created or horizon, r.workload))
    times = [t for r in rows for s in r.spans for t in (s.start, s.end)]
    start = min(times, default=parse_time(body.meta.creation_timestamp) or horizon)
    trainer = (tj.get("status") or {}).get("trainerStatus") or {}
    return Timeline(
        namespace=body.meta.namespace,
        name=body.meta.name,
        state=state,
        now=now,
        start=start,
        end=max([*times, start]),
        rows=tuple(rows),
        progress=_int(trainer.get("progressPercentage")),
        remaining_seconds=_int(trainer.get("estimatedRemainingSeconds")),
    )


def _row(
    q: quota.StepQuota,
    wl: Json | None,
    ivs: list[_Interval],
    warnings: Mapping[str, list[tuple[datetime, str, str]]],
    now: datetime,
    horizon: datetime,
) -> Row:
    created = parse_time(q.created)
    reserved = parse_time(q.reserved_at)
    finished = parse_time(q.finished_at)
    conds = WorkloadBody.of(wl).conditions if wl is not None else []
    admitted = _since(condition(conds, KueueCondition.ADMITTED)) or reserved
    ev = condition(conds, KueueCondition.EVICTED)
    evicted_at = _since(ev)
    gpus = sum(_num(v) for k, v in q.usage.items() if is_gpu(k)) or _requested_gpus(wl)
    if q.state == quota.RELEASED and reserved is not None:
        # gone before Kueue said Finished: the last time known, the record's or its pods'
        last = [iv.end for iv in ivs if iv.end is not None]
        hold_end: datetime | None = max([reserved + timedelta(seconds=q.hold_seconds), *last])
    elif reserved is not None:
        hold_end = finished or (horizon if horizon < now else None)
    else:
        hold_end = None
    until = hold_end or (evicted_at if reserved is None else None) or now
    runs = _runs(ivs, reserved, gpus, until)
    first_run = min((s for s, _, _ in runs), default=None)
    spans: list[Span] = []
    if reserved is not None:
        if created is not None:
            spans.append(Span(SpanKind.WAIT, created, max(created, reserved)))
        spans += _held_and_run(reserved, max(reserved, hold_end or now), runs)
    elif evicted_at is not None and first_run is not None:
        # Kueue evicted it and it waits again: it held quota from (at the latest) its first
        # pod's start until the eviction; the reservation time itself is not kept
        if created is not None:
            spans.append(Span(SpanKind.WAIT, created, max(created, first_run)))
        spans += _held_and_run(first_run, max(first_run, evicted_at), runs)
        spans.append(Span(SpanKind.WAIT, evicted_at, finished or now))
    elif created is not None:
        end = finished or (horizon if q.state == quota.RELEASED else now)
        spans.append(Span(SpanKind.WAIT, created, max(created, end)))
    reason, message = q.reason, q.message
    if not reason:
        reason, message = _reason(warnings.get(q.workload, []), created, reserved)
    ended = finished or (hold_end if q.state == quota.RELEASED else None)
    spans = [s for s in spans if s.seconds > 0]
    held_secs = sum(s.seconds for s in spans if s.kind != SpanKind.WAIT)
    return Row(
        step=q.step,
        role=q.role,
        attempt=q.attempt,
        workload=q.workload,
        queue=q.queue,
        cluster_queue=q.cluster_queue,
        state=str(q.state),
        reason=reason,
        message=message,
        created=created,
        reserved=reserved,
        admitted=admitted,
        running=first_run,
        ended=ended,
        evicted=str(ev.get("reason", "")) if ev is not None and evicted_at else "",
        spans=tuple(spans),
        gpus=gpus,
        gpu_seconds_held=round(gpus * held_secs, 3),
        gpu_seconds_used=round(sum(((e - s).total_seconds() * g for s, e, g in runs), 0.0), 3),
    )


def _held_and_run(
    start: datetime, end: datetime, runs: list[tuple[datetime, datetime, float]]
) -> list[Span]:
    """The hold ``start`` -> ``end`` cut into running (any pod running) and held (none)."""
    out: list[Span] = []
    cursor = start
    merged: list[tuple[datetime, datetime]] = []
    for s, e, _ in sorted(runs):
        s, e = max(s, start), min(e, end)
        if e <= s:
            continue
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    for s, e in merged:
        if s > cursor:
            out.append(Span(SpanKind.HELD, cursor, s))
        out.append(Span(SpanKind.RUN, s, e))
        cursor = e
    if end > cursor or not out:
        out.append(Span(SpanKind.HELD, cursor, max(cursor, end)))
    return out


def _runs(
    ivs: list[_Interval], reserved: datetime | None, gpus: float, until: datetime
) -> list[tuple[datetime, datetime, float]]:
    """(start, end, GPUs) of each pod; a pod still running ends ``until`` (the end of the hold,
    else now). A node's start is its pod's creation: clipped to the reservation, and without one
    (Kueue took it back) the node tells nothing."""
    slots = {iv.slot for iv in ivs} or {""}
    out = []
    for iv in ivs:
        if iv.gpus is None and reserved is None:
            continue
        start = max(iv.start, reserved) if reserved and iv.gpus is None else iv.start
        end = min(iv.end or until, until)
        per_pod = iv.gpus if iv.gpus is not None else gpus / len(slots)
        if end > start:
            out.append((start, end, per_pod))
    return out


def _requested_gpus(wl: Json | None) -> float:
    """GPUs a Workload without admission asks for (``status.resourceRequests``: per pod set,
    the total of its pods)."""
    reqs = ((wl or {}).get("status") or {}).get("resourceRequests") or []
    return sum(_num(v) for r in reqs for k, v in (r.get("resources") or {}).items() if is_gpu(k))


def _intervals(obs: Observed) -> list[_Interval]:
    """Pod running intervals by pod group: the live pods', else their Argo Pod nodes'."""
    out: dict[str, _Interval] = {}
    uid = Meta.of(obs.trainjob).uid
    for wf, v in zip(obs.workflows, obs.views, strict=True):
        if not Meta.of(wf).controlled_by(uid):
            continue
        groups = {g.step: grp for grp, g in v.groups.items()}
        for node in (argo_nodes.decode_nodes(wf.get("status") or {}) or {}).values():
            name = str(node.get("name") or "")
            m = argo_nodes.pod_node(name)
            start = parse_time(str(node.get("startedAt") or ""))
            if node.get("type") != "Pod" or not m or m.attempt is None or start is None:
                continue
            if m.workflow != v.name or m.step not in groups:
                continue
            end = parse_time(str(node.get("finishedAt") or ""))
            out[name] = _Interval(groups[m.step], m.slot, start, end, None)
    for pod in obs.pods:
        meta = Meta.of(pod)
        key = argo_nodes.node_of_pod(pod) or meta.name
        m = argo_nodes.pod_node(key)
        started, finished = _container_times(pod)
        if not group_of(pod) or started is None:
            continue
        slot = m.slot if m and m.attempt is not None else meta.name
        out[key] = _Interval(group_of(pod), slot, started, finished, _pod_gpus(pod))
    return sorted(out.values(), key=lambda iv: (iv.group, iv.start, iv.slot))


def _container_times(pod: Json) -> tuple[datetime | None, datetime | None]:
    """First container start and, when all have terminated, last finish (sidecars skipped)."""
    starts: list[datetime] = []
    ends: list[datetime] = []
    running = False
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") in _SIDECARS:
            continue
        state = cs.get("state") or {}
        for key in ("running", "terminated"):
            t = parse_time(str((state.get(key) or {}).get("startedAt") or ""))
            if t is not None:
                starts.append(t)
        end = parse_time(str((state.get("terminated") or {}).get("finishedAt") or ""))
        if end is None:
            running = True
        else:
            ends.append(end)
    if not starts:
        return None, None
    return min(starts), (None if running or not ends else max(ends))


def _pod_gpus(pod: Json) -> float:
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        total += sum(_num(v) for k, v in asked.items() if is_gpu(k))
    return total


def _waits(events: Iterable[Json]) -> dict[str, list[tuple[datetime, str, str]]]:
    """Kueue's Warning Events on Workloads: name -> [(time, reason, message)]."""
    out: dict[str, list[tuple[datetime, str, str]]] = {}
    for e in events:
        obj = e.get("involvedObject") or e.get("regarding") or {}
        if obj.get("kind") != "Workload" or e.get("type") != "Warning":
            continue
        series = e.get("series") or {}
        when = series.get("lastObservedTime") or e.get("lastTimestamp") or e.get("eventTime")
        at = parse_time(str(when or ""))
        if at is not None:
            item = (at, str(e.get("reason", "")), str(e.get("message") or e.get("note") or ""))
            out.setdefault(str(obj.get("name", "")), []).append(item)
    return out


def _reason(
    found: list[tuple[datetime, str, str]], created: datetime | None, reserved: datetime | None
) -> tuple[str, str]:
    """The last Kueue wait reason of a Workload between its creation and its reservation."""
    inside = [
        f
        for f in found
        if (created is None or f[0] >= created) and (reserved is None or f[0] <= reserved)
    ]
    return max(inside)[1:] if inside else ("", "")


def _since(cond: Json | None) -> datetime | None:
    if cond is None or cond.get("status") != "True":
        return None
    return parse_time(str(cond.get("lastTransitionTime") or ""))


def _num(value: object) -> float:
    try:
        return float(parse(str(value)))
    except (QuantityError, ValueError, TypeError):
        return 0.0


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
