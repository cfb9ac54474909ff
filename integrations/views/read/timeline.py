"""A TrainJob's step timeline: per step Workload (one step of one attempt), when it waited for
quota, held it waiting for capacity, held it and ran, from what the controller already records.
Pure (``now`` passed in). Sources:

- the live Workloads (Kueue v1beta2 ``apis/kueue/v1beta2/workload_types.go``): creation,
  ``QuotaReserved`` (its False reason/message while waiting), ``Admitted``, ``Evicted``,
  ``Finished``; the ``trainweave.io/quota`` annotation (``quota.StepQuota``) for Workloads that are
  gone, so a finished TrainJob keeps its waits and holds; an admission check that holds the
  reserved quota until ``Admitted`` (``checks``: a ProvisioningRequest being provisioned) makes
  that part of the hold "waiting for capacity";
- Kueue's own Events on a Workload (``pkg/scheduler/scheduler.go requeueAndUpdate``: a Warning
  whose reason is the ``QuotaReserved=False`` reason and whose message is the one the condition
  had): the reason a step waited for once the condition says ``QuotaReserved`` again; Events
  expire (kube-apiserver ``--event-ttl``, 1 h by default), the times do not;
- when the pods ran (``pod_times``), a pod node's start clipped to the quota reservation.

Held GPU-seconds: the Workload's reserved GPUs x (quota reserved -> finished, evicted, released,
else ``now``), the wait for capacity included; used GPU-seconds: each pod's GPUs x its running
time.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from trainweave import labels
from trainweave.integrations.views.read import capacity, checks, quota
from trainweave.integrations.views.read.bodies import Meta, TrainJobBody, WorkloadBody, condition
from trainweave.integrations.views.read.observed import Observed, quota_records
from trainweave.integrations.views.read.pod_times import Interval, intervals, num
from trainweave.integrations.views.read.times import parse_time
from trainweave.labels import ConditionType
from trainweave.quantity import is_gpu
from trainweave.states import KueueCondition

Json = dict[str, Any]
# TrainJob conditions that end the pipeline
_TERMINAL = (ConditionType.COMPLETE, ConditionType.FAILED)


class SpanKind(enum.StrEnum):
    """What a step was doing: waiting for quota, holding it while an admission check provisions
    capacity, holding it without a pod running, running."""

    WAIT = "waiting"
    CAPACITY = "capacity"
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
    check: str = ""  # the admission check that held it (``quota.StepQuota.check``)
    request: str = ""  # its ProvisioningRequest
    capacity: str = ""  # what the check does to it now (``capacity.note``), "" if nothing

    def seconds(self, kind: SpanKind) -> float:
        """Seconds spent in spans of ``kind``."""
        return sum((s.seconds for s in self.spans if s.kind == kind), 0.0)

    @property
    def held_seconds(self) -> float:
        """Seconds holding quota: waiting for capacity, held and running."""
        return sum((s.seconds for s in self.spans if s.kind != SpanKind.WAIT), 0.0)


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
    pod_runs = intervals(obs)
    created_of: dict[str, list[datetime]] = {}
    for q in records:
        created_of.setdefault(q.workload, []).append(parse_time(q.created) or horizon)
    mine: dict[tuple[str, int], list[Interval]] = {}
    for iv in pod_runs:
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
    ivs: list[Interval],
    warnings: Mapping[str, list[tuple[datetime, str, str]]],
    now: datetime,
    horizon: datetime,
) -> Row:
    created = parse_time(q.created)
    reserved = parse_time(q.reserved_at)
    finished = parse_time(q.finished_at)
    conds = WorkloadBody.of(wl).conditions if wl is not None else []
    admitted = (
        _since(condition(conds, KueueCondition.ADMITTED)) or parse_time(q.admitted_at) or reserved
    )
    ev = condition(conds, KueueCondition.EVICTED)
    evicted_at = _since(ev)
    gpus = sum(num(v) for k, v in q.usage.items() if is_gpu(k)) or _requested_gpus(wl)
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
        hold_until = max(reserved, hold_end or now)
        ready = _capacity_end(q, reserved, hold_until)
        if ready > reserved:
            spans.append(Span(SpanKind.CAPACITY, reserved, ready))
        spans += _held_and_run(ready, hold_until, runs)
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
        check=q.check,
        request=q.request,
        capacity=capacity.note(q),
    )


def _capacity_end(q: quota.StepQuota, reserved: datetime, until: datetime) -> datetime:
    """When the step's admission check let it through (``Admitted``), or ``until`` (the end of
    the hold) while it still holds the step; ``reserved`` when no check held it."""
    if not q.check:
        return reserved
    if q.check_state in checks.WAITING and not q.admitted_at:
        return until
    admitted = parse_time(q.admitted_at)
    return min(max(reserved, admitted), until) if admitted else reserved


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
    ivs: list[Interval], reserved: datetime | None, gpus: float, until: datetime
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
    return sum(num(v) for r in reqs for k, v in (r.get("resources") or {}).items() if is_gpu(k))


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


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
