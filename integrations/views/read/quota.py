"""Quota accounting from Kueue Workloads (``kueue.x-k8s.io/v1beta2``). Pure.

One ``StepQuota`` per step Workload (a step's pod group: Workload name = group
name, kueue ``pod_controller.go``): its LocalQueue (``spec.queueName``),
ClusterQueue and flavors (``status.admission``), ``resourceUsage`` (summed over
``podSetAssignments``), waiting time (creation -> ``QuotaReserved=True``),
holding time (``QuotaReserved=True`` -> ``Finished=True``, else ``now``) and
resource-seconds (usage x holding), and what an admission check does to the step
(``checks.capacity``: the check that holds its reserved quota while a ProvisioningRequest is
provisioned, or that evicted it, and the request). Condition types and reasons are Kueue's
(``apis/kueue/v1beta2/workload_types.go``). The TrainJob keeps the summary in
the ``trainweave.io/quota`` annotation, which also remembers Workloads that are
gone (released or garbage-collected): their last record stays, marked
``Released``.
"""

from __future__ import annotations

import enum
import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from trainweave import codecs, labels
from trainweave.integrations.views.read import checks
from trainweave.integrations.views.read.bodies import Meta, WorkloadBody, condition
from trainweave.integrations.views.read.times import parse_time
from trainweave.quantity import QuantityError, is_gpu, parse
from trainweave.states import CheckState, KueueCondition

Json = dict[str, Any]


class QuotaState(enum.StrEnum):
    """Where a step Workload stands with its quota: its Kueue condition that is True (in the
    order Finished, Admitted, QuotaReserved, Evicted: ``states.KueueCondition``), else
    Pending; Released once the Workload is gone (its record kept in the
    ``trainweave.io/quota`` annotation)."""

    PENDING = "Pending"
    RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    FINISHED = "Finished"
    RELEASED = "Released"


PENDING, RESERVED, ADMITTED = QuotaState.PENDING, QuotaState.RESERVED, QuotaState.ADMITTED
EVICTED, FINISHED, RELEASED = QuotaState.EVICTED, QuotaState.FINISHED, QuotaState.RELEASED
HOLDING = frozenset({RESERVED, ADMITTED})
WAITING = frozenset({PENDING, EVICTED})
# Waits that no amount of waiting ends: the LocalQueue or ClusterQueue is missing or inactive,
# or the request exceeds what the ClusterQueue (and cohort) can ever lend. Kueue v0.19.2 says so
# with reason ``Inadmissible`` ("LocalQueue nope doesn't exist"), or reason ``Pending`` and a
# message ending "> maximum capacity (16)" (found on the engines, tests/e2e/test_hostile.py); its
# API also declares ``ExceedsMaxQuota``, ``NoMatchingFlavor`` and ``Misconfigured`` for this,
# which newer versions set. The step keeps waiting, as Kueue keeps the Workload (an admin may
# raise a quota or make the queue), but the Event is a Warning.
NEEDS_ADMIN = frozenset({"Inadmissible", "ExceedsMaxQuota", "NoMatchingFlavor", "Misconfigured"})
BEYOND_CAPACITY = "> maximum capacity"


def needs_admin(q: StepQuota) -> bool:
    """``q`` waits for something only an admin can give (see NEEDS_ADMIN), or for its
    deactivated Workload to be made active again (``checks``: a Rejected admission check)."""
    return q.reason in NEEDS_ADMIN or BEYOND_CAPACITY in q.message or q.deactivated


DONE = frozenset({FINISHED, RELEASED})


@dataclass(frozen=True)
class StepQuota:
    """Quota facts of one step Workload (one attempt)."""

    workload: str
    step: str = ""
    role: str = ""
    attempt: int = 0
    queue: str = ""
    cluster_queue: str = ""
    state: QuotaState = PENDING
    reason: str = ""  # Kueue's QuotaReserved=False reason while waiting
    message: str = ""
    flavors: dict[str, str] = field(default_factory=dict)
    usage: dict[str, str] = field(default_factory=dict)
    created: str = ""
    reserved_at: str = ""
    finished_at: str = ""
    wait_seconds: float | None = None
    hold_seconds: float = 0.0
    resource_seconds: dict[str, float] = field(default_factory=dict)
    # Kueue's ``status.schedulingStats.evictions``: count per reason (PodsReadyTimeout, Preempted..)
    evictions: dict[str, int] = field(default_factory=dict)
    # the admission check that holds the step, let it through or evicted it (``checks.capacity``):
    # its name, state (``CheckState``) and message, the ProvisioningRequest; when it held the
    # step, ``Admitted=True`` (the end of the wait for capacity); a Workload Kueue deactivated
    check: str = ""
    check_state: str = ""
    check_message: str = ""
    request: str = ""
    admitted_at: str = ""
    deactivated: bool = False

    @property
    def gpu_hours(self) -> float:
        """Reserved GPU-hours (any resource whose name contains ``gpu``)."""
        return sum(v for k, v in self.resource_seconds.items() if is_gpu(k)) / 3600

    @property
    def waiting_for_capacity(self) -> bool:
        """The step holds its quota while an admission check is not Ready (not admitted yet)."""
        return self.state == RESERVED and bool(self.check) and self.check_state in checks.WAITING

    @property
    def evicted_by_check(self) -> bool:
        """An admission check took the step's quota back: Retry (Kueue makes a new request) or
        Rejected (the Workload deactivated)."""
        failed = self.check_state in (CheckState.RETRY, CheckState.REJECTED)
        return self.state in WAITING and bool(self.check) and failed

    @property
    def capacity_key(self) -> str:
        """What a change of the check's doing compares: its state and request ("" when none)."""
        return f"{self.check_state}/{self.request}" if self.check else ""


def _true(cond: Json | None) -> bool:
    return cond is not None and cond.get("status") == "True"


def _since(cond: Json | None) -> str:
    """lastTransitionTime of a True condition, else ""."""
    if cond is None or cond.get("status") != "True":
        return ""
    return str(cond.get("lastTransitionTime") or "")


def step_quota(workload: Json, info: Mapping[str, Any], now: datetime) -> StepQuota:
    """Quota facts of one Workload; ``info`` is ``{step, role, attempt}`` of its group."""
    meta = workload.get("metadata") or {}
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    conds = WorkloadBody.of(workload).conditions
    reserved = condition(conds, KueueCondition.QUOTA_RESERVED)
    finished = condition(conds, KueueCondition.FINISHED)
    admitted = condition(conds, KueueCondition.ADMITTED)
    evicted = condition(conds, KueueCondition.EVICTED)
    flavors: dict[str, str] = {}
    usage: dict[str, Any] = {}
    for psa in admission.get("podSetAssignments") or []:
        flavors.update(psa.get("flavors") or {})
        for res, qty in (psa.get("resourceUsage") or {}).items():
            usage[res] = usage.get(res, 0) + _num(qty)
    if _true(finished):
        state = FINISHED
    elif _true(admitted):
        state = ADMITTED
    elif _true(reserved):
        state = RESERVED
    elif _true(evicted):
        state = EVICTED
    else:
        state = PENDING
    created = str(meta.get("creationTimestamp") or "")
    reserved_at = _since(reserved)
    finished_at = _since(finished)
    if state == FINISHED and not reserved_at and admission:
        # Kueue keeps QuotaReserved=True on a Finished Workload; be lenient if not.
        reserved_at = finished_at
    wait = _seconds(created, reserved_at) if reserved_at else None
    end = parse_time(finished_at) or now
    start = parse_time(reserved_at)
    hold = max(0.0, (end - start).total_seconds()) if start else 0.0
    waiting = state in (PENDING, EVICTED) and reserved is not None
    cap = checks.capacity(workload)
    return StepQuota(
        workload=str(meta.get("name", "")),
        step=str(info.get("step", "")),
        role=str(info.get("role", "")),
        attempt=int(info.get("attempt", 0)),
        queue=str((workload.get("spec") or {}).get("queueName") or ""),
        cluster_queue=str(admission.get("clusterQueue") or ""),
        state=state,
        reason=str(reserved.get("reason", "")) if waiting and reserved is not None else "",
        message=str(reserved.get("message", "")) if waiting and reserved is not None else "",
        flavors=dict(sorted(flavors.items())),
        usage={k: _fmt(v) for k, v in sorted(usage.items())},
        created=created,
        reserved_at=reserved_at,
        finished_at=finished_at,
        wait_seconds=wait,
        hold_seconds=round(hold, 3),
        resource_seconds={k: round(float(v) * hold, 3) for k, v in sorted(usage.items())},
        evictions=_evictions(status),
        check=cap.check if cap else "",
        check_state=cap.state if cap else "",
        check_message=cap.message if cap else "",
        request=cap.request if cap else "",
        admitted_at=_since(admitted) if cap else "",
        deactivated=not checks.active(workload),
    )


def _evictions(status: Json) -> dict[str, int]:
    """Evictions per reason, summed over Kueue's ``schedulingStats.evictions`` entries (one per
    reason and underlying cause)."""
    out: dict[str, int] = {}
    for ev in (status.get("schedulingStats") or {}).get("evictions") or []:
        reason = str(ev.get("reason") or "")
        out[reason] = out.get(reason, 0) + int(ev.get("count") or 0)
    return dict(sorted(out.items()))


def merge(previous: Iterable[StepQuota], current: Iterable[StepQuota]) -> list[StepQuota]:
    """Current records, plus previous ones whose Workload is gone (marked Released). A current
    record of an admission check that no longer names its ProvisioningRequest (a Workload Kueue
    deactivated, ``checks``) keeps the request its previous record named."""
    now = {(q.workload, q.created): q for q in current}
    merged = dict(now)
    for old in previous:
        key = (old.workload, old.created)
        if key in now:
            q = now[key]
            if q.check and not q.request and old.request and old.check == q.check:
                merged[key] = replace(q, request=old.request)
            continue
        merged[key] = old if old.state in DONE else replace(old, state=RELEASED)
    return sorted(merged.values(), key=lambda q: (q.attempt, q.created, q.workload))


def signature(records: Iterable[StepQuota]) -> list[tuple[str, str, str, str, str]]:
    """What "a step changed state" compares: (workload, created, state, waiting reason, what its
    admission check does: ``capacity_key``).

    A Workload re-created under the same name (a resumed step) is a new record; Kueue's
    ``QuotaReserved=False`` reason arriving after creation is a change (it is what
    ``trainweave status`` and the waiting Event show), and so is a check's new state or request
    (a new attempt: the Event that says the step waits for capacity, or why it lost it).
    """
    return sorted((q.workload, q.created, q.state, q.reason, q.capacity_key) for q in records)


def changed(previous: Iterable[StepQuota], merged: Iterable[StepQuota]) -> bool:
    """Whether ``merged`` is worth writing over ``previous``: their signatures differ, not
    counting a Workload first seen plain Pending (no reason yet: Kueue has not looked at it,
    and its live Workload tells every reader as much), which saves a write per step."""
    old = signature(previous)
    seen = {(s[0], s[1]) for s in old}
    new = [s for s in signature(merged) if (s[0], s[1]) in seen or s[2] != PENDING or s[3]]
    return new != old


def totals(records: Iterable[StepQuota]) -> Json:
    """Sums per TrainJob and per ClusterQueue."""
    wait = 0.0
    gpu_hours = 0.0
    by_cq: dict[str, dict[str, float]] = {}
    for q in records:
        wait += q.wait_seconds or 0.0
        gpu_hours += q.gpu_hours
        cq = by_cq.setdefault(q.cluster_queue or q.queue, {})
        for res, secs in q.resource_seconds.items():
            cq[res] = round(cq.get(res, 0.0) + secs, 3)
    return {
        "waitSeconds": round(wait, 3),
        "gpuHours": round(gpu_hours, 6),
        "resourceSeconds": by_cq,
    }


def encode(records: Iterable[StepQuota]) -> str:
    """The ``trainweave.io/quota`` annotation value: compact JSON."""
    recs = list(records)
    steps = [
        {_camel(k): v for k, v in asdict(q).items() if v not in ("", {}, None) and v is not False}
        for q in recs
    ]
    doc = {"v": 1, "steps": steps, "totals": totals(recs)}
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)


def decode(value: str | None) -> list[StepQuota]:
    """Records from an annotation value; [] when absent or unreadable."""
    if not value:
        return []
    try:
        doc = json.loads(value)
        fields = {f for f in StepQuota.__dataclass_fields__}
        out = []
        for raw in doc.get("steps") or []:
            kw = {f: v for k, v in raw.items() if (f := _snake(k)) in fields}
            try:
                kw["state"] = QuotaState(kw.get("state", PENDING))
            except ValueError:
                continue  # a state this version does not know (a newer writer): not counted
            out.append(StepQuota(**kw))
        return out
    except (ValueError, TypeError, AttributeError):
        return []


@dataclass(frozen=True)
class MetricEvent:
    """A Prometheus observation due to a state change (applied once, after the write)."""

    kind: str  # "wait" | "reserved"
    labels: tuple[tuple[str, str], ...]
    value: float


def transitions(previous: Iterable[StepQuota], current: Iterable[StepQuota]) -> list[MetricEvent]:
    """Observations owed between two annotation states.

    ``wait``: the step got quota (admission wait, by queue and role).
    ``reserved``: the step stopped holding quota (resource-seconds by
    ClusterQueue, flavor, resource).
    """
    old = {(q.workload, q.created): q for q in previous}
    events: list[MetricEvent] = []
    for q in current:
        before = old.get((q.workload, q.created))
        had_quota = before is not None and (before.state in HOLDING or before.state in DONE)
        if q.wait_seconds is not None and not had_quota:
            events.append(
                MetricEvent("wait", (("queue", q.queue), ("role", q.role)), q.wait_seconds)
            )
        was_done = before is not None and before.state in DONE
        if q.state in DONE and not was_done and q.reserved_at:
            for res, secs in q.resource_seconds.items():
                lbl = (
                    ("cluster_queue", q.cluster_queue),
                    ("flavor", q.flavors.get(res, "")),
                    ("resource", res),
                )
                events.append(MetricEvent("reserved", lbl, secs))
    return events


def format_duration(seconds: float | None) -> str:
    """``1h05m`` from an hour on, else ``4m05s``; ``-`` for unknown."""
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _seconds(start: str, end: str) -> float | None:
    a, b = parse_time(start), parse_time(end)
    if a is None or b is None:
        return None
    return round(max(0.0, (b - a).total_seconds()), 3)


def _num(value: object) -> Any:
    try:
        return parse(str(value))
    except QuantityError:
        return 0


def _fmt(value: object) -> str:
    text = format(value, "f") if not isinstance(value, int) else str(value)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


@functools.lru_cache(maxsize=256)  # the few field names, decoded on every reconcile
def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def gates(wl: Json) -> list[str]:
    """The Workload's admission gates (``kueue.x-k8s.io/admission-gated-by``, comma-separated)."""
    return codecs.decode_names(Meta.of(wl).annotation(labels.KUEUE_ADMISSION_GATED_BY))


def held(wl: Json) -> bool:
    """``wl`` is a kept Workload still held by our gate: in no queue yet (so no quota record)."""
    return labels.KEPT_GATE in gates(wl)
