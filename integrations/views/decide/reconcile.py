"""One reconcile of one TrainJob, decided as a pure function: ``actions(observed, now)``.

The actions are a list of ``Request`` values (sent in order by ``executor``), at
most one ``Start`` (render + create the children of an attempt/segment), the
Prometheus observations owed, and when to look again. Lifecycle (docs/controller.md):

- start: attempt 0 segment 0 when the TrainJob has no Workflow; a restart before the
  cache shows it re-creates the same deterministic name (a 409 the executor accepts);
- suspend: a Workflow with no pods yet gets Argo ``spec.suspend``; a running one
  is stopped (``spec.shutdown: Stop``) and its step Workloads deleted, so Kueue
  deletes the pods and frees the quota; resume starts the next segment
  ``<wf>-s<j>`` without the steps that already succeeded, its steps' pod groups named
  for the segment (``names.group_name``), so Kueue never counts a stopped segment's pods;
- failure with budget left (JobSet ``failurePolicy.maxRestarts``): a fresh
  attempt ``<tj>-r<k>``, like KubeRay's RayJob backoffLimit; never after a deadline;
- clean-up: a step pod group that is done for good gets
  ``retriable-in-group: "false"`` on a pod (pods kept for logs), or its Workload
  deleted while pods still run; Workloads of a deleted TrainJob are deleted; the
  running Workflows of a TrainJob being deleted (foreground) are stopped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainweave import codecs, labels
from trainweave.codecs import Stop
from trainweave.integrations.views.decide import kept, leftovers, stranded
from trainweave.integrations.views.decide import verdict as judging
from trainweave.integrations.views.decide.rollup import is_finished, rollup
from trainweave.integrations.views.read import capacity, checks, disruption, quota
from trainweave.integrations.views.read.argo_nodes import workflow_of
from trainweave.integrations.views.read.argo_view import FAILED, WorkflowView
from trainweave.integrations.views.read.bodies import (
    Meta,
    PodBody,
    TrainJobBody,
    WorkloadBody,
    state_of,
)
from trainweave.integrations.views.read.observed import (
    AttemptState,
    Observed,
    Progress,
    group_of,
    quota_records,
)
from trainweave.integrations.views.read.times import format_time
from trainweave.integrations.views.requests import api
from trainweave.integrations.views.requests.event import event
from trainweave.labels import (
    ConditionType,
    EventReason,
    EventType,
    StoppedFor,
    TrainJobState,
)
from trainweave.states import CheckState, PodPhase

Json = dict[str, Any]
FOREGROUND = "foregroundDeletion"  # the GC's finalizer on an owner deleted in foreground


@dataclass(frozen=True)
class Start:
    """Render and create the children of one attempt segment."""

    attempt: int
    segment: int = 0
    skip_steps: frozenset[str] = frozenset()
    suspend: bool = False


@dataclass
class Actions:
    """What one reconcile does."""

    requests: list[api.Request] = field(default_factory=list)
    start: Start | None = None
    after_start: list[api.Request] = field(default_factory=list)
    metrics: list[quota.MetricEvent] = field(default_factory=list)
    requeue_after: float | None = None
    state: TrainJobState | None = None  # for the gauge (None: another controller's)
    waiting: tuple[quota.StepQuota, ...] = ()  # step Workloads waiting for quota (gauge)
    leaked: tuple[quota.StepQuota, ...] = ()  # holding quota though done for good (gauge)
    holding: tuple[quota.StepQuota, ...] = ()  # holding quota now (counter series made at 0)


def actions(obs: Observed, now: datetime) -> Actions:
    """Everything to do for ``obs.trainjob``. Pure."""
    tj = obs.trainjob
    body = TrainJobBody.of(tj)
    meta = body.meta
    ns = meta.namespace
    if body.managed_by not in ("", labels.TRAINER_MANAGED_BY):
        return Actions()  # another controller's (e.g. MultiKueue's), as Trainer leaves it alone
    if meta.deletion_timestamp:
        return Actions(requests=_stop_when_deleted(ns, obs))
    current = body.conditions
    desired = rollup(obs, now)
    prog = obs.progress
    suspend = body.suspend
    out = Actions(state=state_of(desired.conditions, suspend))
    finished = is_finished(desired.conditions)
    latest = prog.latest
    done_for_good = done_groups(obs, stop_all=finished)
    if finished and latest and not latest.terminal and not latest.shutdown:
        out.requests.append(_stop(ns, latest, Stop(StoppedFor.FINISHED)))
    out.requests += releases(obs, done_for_good)
    if not finished:
        _lifecycle(obs, prog, suspend, out, now)
        _kept(obs, out, now)
    records = quota_records(obs, now)
    _quota(obs, records, now, out)
    done = {group for group, _, _ in done_for_good}
    out.waiting = tuple(q for q in records if q.state in quota.WAITING)
    out.leaked = tuple(q for q in records if q.state in quota.HOLDING and q.workload in done)
    out.holding = tuple(q for q in records if q.state in quota.HOLDING)
    want = desired.wire()
    have = {k: body.status.get(k) for k in want}
    if want and want != have:
        out.after_start.append(
            api.merge_patch(api.TRAINJOB, ns, meta.name, {"status": want}, "status")
        )
    for cond in desired.conditions:
        if (
            cond not in current
            and cond.get("status") == "True"
            and cond["type"] != ConditionType.SUSPENDED
        ):
            failed = cond["type"] == ConditionType.FAILED.value
            kind = EventType.WARNING if failed else EventType.NORMAL
            out.after_start.append(event(tj, kind, cond["reason"], cond["message"], now))
    if desired.deadline is not None and not finished:
        deadline = max(0.0, (desired.deadline - now).total_seconds()) + 0.05
        kept_at = out.requeue_after
        out.requeue_after = deadline if kept_at is None else min(deadline, kept_at)
    return out


def _kept(obs: Observed, out: Actions, now: datetime) -> None:
    """Kept queue positions (``kept.actions``): gates lifted, positions given up."""
    todo = kept.actions(obs, now)
    out.requests += todo.requests
    out.after_start += [
        event(obs.trainjob, EventType.NORMAL, r, m, now) for r, m in kept.messages(todo)
    ]
    out.requeue_after = todo.requeue_after


def _lifecycle(obs: Observed, prog: Progress, suspend: bool, out: Actions, now: datetime) -> None:
    meta = Meta.of(obs.trainjob)
    ns, name = meta.namespace, meta.name
    latest = prog.latest
    if latest is None:  # no Workflow of this attempt yet (attempt 0 writes no annotation)
        waits = leftovers.waiting(obs, now)
        if waits:  # an earlier TrainJob of this name: its names are still taken
            out.requests += waits
            return
        out.start = Start(prog.attempt, 0, frozenset(), suspend)
        return
    wf_pods = [p for p in obs.pods if workflow_of(p) == latest.name]
    if suspend:
        if latest.terminal or latest.stopped_for:
            return
        if wf_pods:
            out.requests.append(_stop(ns, latest, Stop(StoppedFor.SUSPEND)))
        elif not latest.suspend:
            out.requests.append(_patch_wf(ns, latest.name, {"spec": {"suspend": True}}))
        return
    if latest.suspend and not latest.shutdown:
        out.requests.append(_patch_wf(ns, latest.name, {"spec": {"suspend": None}}))
    if latest.stopped_for == Stop(StoppedFor.SUSPEND):
        live = _live_groups(obs, latest)
        if latest.terminal and not live and all(PodBody.of(p).terminal for p in wf_pods):
            out.start = Start(prog.attempt, latest.segment + 1, prog.done_steps, False)
        return
    if judging.state(prog) == AttemptState.FAILED and not prog.exhausted:
        out.requests.append(_attempts(ns, name, prog.attempt + 2))
        out.start = Start(prog.attempt + 1, 0, frozenset(), False)
        return
    if latest.terminal or latest.shutdown:
        return
    raw = next((w for w in obs.workflows if Meta.of(w).name == latest.name), None)
    ends = stranded.patch(raw, format_time(now)) if raw is not None else None
    if ends is not None:  # else Argo starts an attempt Kueue never admits (stranded.py)
        out.requests.append(_patch_wf(ns, latest.name, ends))
    latest = _disruptions(obs, latest, wf_pods, out, now)
    verdict = judging.first(latest)
    if verdict:
        out.requests.append(_stop(ns, latest, Stop(StoppedFor.JOB_FAILED, verdict.job)))


def _disruptions(
    obs: Observed, wf: WorkflowView, pods: list[Json], out: Actions, now: datetime
) -> WorkflowView:
    """``wf`` judged with the disruptions its pods show now (``disruption.observe``), which are
    recorded on the Workflow first (Kueue deletes a stopped pod once it is replaced), with an
    Event per new one (saying which capacity request failed when an admission check evicted the
    step: ``_capacity_cause``)."""
    tj = obs.trainjob
    record = disruption.observe(wf.disruptions, wf.name, pods)
    if record == wf.disruptions:
        return wf
    patch = {"metadata": {"annotations": {disruption.ANNOTATION: disruption.encode(record)}}}
    out.requests.append(_patch_wf(Meta.of(tj).namespace, wf.name, patch))
    for step, mark in disruption.new_marks(wf.disruptions, record):
        msg = (
            f"step {step}: pods {', '.join(mark.pods)} {mark.type} ({mark.reason}): they and"
            " the gang peers that fail after them do not count against the step's retries"
        )
        if checks.EVICTED_RETRY in mark.reason:  # WorkloadEvictedDueTo[DeactivatedDueTo]Adm..
            msg += _capacity_cause(obs, wf, step, pods, now)
        out.after_start.append(event(tj, EventType.NORMAL, EventReason.STEP_DISRUPTED, msg, now))
    return dataclasses.replace(wf, disruptions=record)


def _capacity_cause(
    obs: Observed, wf: WorkflowView, step: str, pods: list[Json], now: datetime
) -> str:
    """``; <why>`` when an admission check evicted ``step``'s Workload (``capacity.lost``), the
    request named from the stopped pods' consume annotation when the Workload no longer says;
    "" otherwise."""
    groups = {g for g, info in wf.groups.items() if info.step == step}
    wl = next((w for w in obs.workloads if Meta.of(w).name in groups), None)
    q = quota.step_quota(wl, {"step": step}, now) if wl is not None else None
    if q is None or not q.evicted_by_check:
        return ""
    if not q.request:
        named = {Meta.of(p).annotation(checks.CONSUME) for p in pods if group_of(p) in groups}
        q = dataclasses.replace(q, request=max(named - {""}, default=""))
    return f"; {capacity.lost(q)}"


def _live_groups(obs: Observed, wf: WorkflowView) -> list[str]:
    """The Workloads of ``wf``'s pod groups that Kueue has not finished."""
    groups = set(wf.groups)
    names = (Meta.of(wl).name for wl in obs.workloads if not WorkloadBody.of(wl).finished)
    return [name for name in names if name in groups]


def done_groups(obs: Observed, stop_all: bool) -> list[tuple[str, Json, WorkflowView]]:
    """(group, Workload, Workflow view) of step pod groups done for good whose Workload Kueue
    has not finished: the Workflow is terminal or stopped, the step failed, or ``stop_all``."""
    by_name = {Meta.of(w).name: w for w in obs.workloads}
    mine = obs.owned_views
    out = []
    for v in mine:
        for group, info in v.groups.items():
            wl = by_name.get(group)
            if wl is None or WorkloadBody.of(wl).finished:
                continue
            if workload_workflow(wl, obs.pods, mine, group) != v.name:
                continue  # a later segment reused the name (made before per-segment names)
            step = v.steps.get(info.step)
            stopped = bool(v.stopped_for or v.shutdown)
            if v.terminal or stop_all or stopped or (step is not None and step.phase in FAILED):
                out.append((group, wl, v))
    return out


def releases(obs: Observed, done: list[tuple[str, Json, WorkflowView]]) -> list[api.Request]:
    """Free the quota of the step pod groups ``done`` (``done_groups``: done for good), so
    none leaks."""
    ns = Meta.of(obs.trainjob).namespace
    out: list[api.Request] = []
    for group, wl, v in done:
        if Meta.of(wl).deletion_timestamp:
            continue
        pods = [p for p in obs.pods if group_of(p) == group]
        ended = all(PodBody.of(p).terminal for p in pods)
        step = v.steps.get(v.groups[group].step)
        # every pod succeeded by our pod cache, or by Argo's status while that cache is behind
        succeeded = {PodBody.of(p).phase for p in pods} == {PodPhase.SUCCEEDED} or (
            not ended and step is not None and step.pods_succeeded
        )
        if pods and succeeded:
            continue  # Kueue finishes a fully succeeded group itself
        uid = Meta.of(wl).uid
        rerun = bool(v.stopped_for) and not v.backoff_job  # a failed Job's step is not re-run
        if rerun or not pods or not ended:
            # a stopped step is re-run by the next segment: its quota is freed now
            out.append(api.delete(api.WORKLOAD, ns, group, uid))
            continue
        retriable = [Meta.of(p).annotation(labels.KUEUE_RETRIABLE_IN_GROUP) for p in pods]
        if "false" not in retriable:
            first = min(Meta.of(p).name for p in pods)
            patch = {"metadata": {"annotations": {labels.KUEUE_RETRIABLE_IN_GROUP: "false"}}}
            out.append(api.merge_patch(api.POD, ns, first, patch))
    return out


def workload_workflow(
    wl: Json, pods: tuple[Json, ...], views: tuple[WorkflowView, ...], group: str
) -> str:
    """Which Workflow a group Workload serves: its owner pods' Workflow, else the newest one."""
    uids = Meta.of(wl).owner_uids
    names = {workflow_of(p) for p in pods if Meta.of(p).uid in uids}
    if len(names) == 1:
        return names.pop()
    having = [v for v in views if group in v.groups]
    if not having:
        return ""
    newest = max(having, key=lambda v: (v.attempt, v.segment))
    return newest.name if not names or newest.name in names else sorted(names)[-1]


def _quota(obs: Observed, records: list[quota.StepQuota], now: datetime, out: Actions) -> None:
    tj = obs.trainjob
    meta = Meta.of(tj)
    old = quota.decode(meta.annotation(labels.QUOTA_ANNOTATION))
    merged = quota.merge(old, records)
    if not quota.changed(old, merged):
        return
    patch = {"metadata": {"annotations": {labels.QUOTA_ANNOTATION: quota.encode(merged)}}}
    out.after_start.append(api.merge_patch(api.TRAINJOB, meta.namespace, meta.name, patch))
    out.metrics += quota.transitions(old, merged)
    before = {(q.workload, q.created): (q.state, q.reason, q.capacity_key) for q in old}
    for q in merged:
        state, reason, cap = before.get((q.workload, q.created), ("", "", ""))
        if (state, reason, cap) == (q.state, q.reason, q.capacity_key):
            continue
        if q.state == quota.PENDING and q.reason and (state, reason) != (q.state, q.reason):
            msg = f"step {q.step} waits in queue {q.queue}: {q.reason}: {q.message}"
            kind = EventType.WARNING if quota.needs_admin(q) else EventType.NORMAL
            out.after_start.append(event(tj, kind, EventReason.STEP_WAITING_FOR_QUOTA, msg, now))
        elif q.state == quota.ADMITTED and state != q.state:
            msg = f"step {q.step} admitted by ClusterQueue {q.cluster_queue}"
            out.after_start.append(event(tj, EventType.NORMAL, EventReason.STEP_ADMITTED, msg, now))
        elif q.waiting_for_capacity or q.evicted_by_check:
            out.after_start.append(_capacity_event(tj, q, now))


def _capacity_event(tj: Json, q: quota.StepQuota, now: datetime) -> api.Request:
    """The Event of a step's admission check (``capacity.event``): it waits for capacity, or
    the check took its quota back (Retry), or Kueue deactivated its Workload (Rejected: a
    Warning, as a wait only an admin ends)."""
    if q.waiting_for_capacity:
        kind, why = EventType.NORMAL, EventReason.STEP_WAITING_FOR_CAPACITY
    elif q.check_state == CheckState.REJECTED:
        kind, why = EventType.WARNING, EventReason.STEP_CAPACITY_REJECTED
    else:
        kind, why = EventType.NORMAL, EventReason.STEP_CAPACITY_RETRY
    return event(tj, kind, why, capacity.event(q), now)


def _stop_when_deleted(ns: str, obs: Observed) -> list[api.Request]:
    """A TrainJob deleted in foreground stays until the GC has deleted its Workflows, which Argo
    keeps operating meanwhile: its retryStrategy would replace the pods the GC deletes. Stopping
    each running Workflow first ends that; then each stopped or ended group is released, as for a
    suspend: Kueue keeps its finalizer on a pod the stop failed while the Workload waits for a
    replacement, which would hold the pod, Workflow and TrainJob for good (docs/engines.md).
    In the background the Workflows go after the TrainJob (``leftovers.orphan_releases``); with
    ``orphan`` they are meant to keep running."""
    if FOREGROUND not in Meta.of(obs.trainjob).finalizers:
        return []
    views = obs.owned_views
    stops = [
        _stop(ns, v, Stop(StoppedFor.DELETED)) for v in views if not v.terminal and not v.shutdown
    ]
    return stops + releases(obs, done_groups(obs, stop_all=False))


def _attempts(ns: str, name: str, n: int) -> api.Request:
    patch = {"metadata": {"annotations": {labels.ATTEMPTS_ANNOTATION: codecs.encode_int(n)}}}
    return api.merge_patch(api.TRAINJOB, ns, name, patch)


def _patch_wf(ns: str, name: str, patch: Json) -> api.Request:
    return api.merge_patch(api.WORKFLOW, ns, name, patch)


def _stop(ns: str, wf: WorkflowView, why: Stop) -> api.Request:
    """Argo's ``shutdown: Stop``, annotated with why (``codecs.encode_stop``)."""
    ann = {labels.STOPPED_FOR: codecs.encode_stop(why)}
    patch = {"metadata": {"annotations": ann}, "spec": {"shutdown": "Stop"}}
    return _patch_wf(ns, wf.name, patch)
