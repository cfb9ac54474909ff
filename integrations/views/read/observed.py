"""What one reconcile sees of a TrainJob, and where its current attempt stands. Pure.

``Observed`` is the TrainJob with the Workflows, pods (label ``trainweave.io/trainjob``) and step
Workloads (one per Kueue pod group the Workflows or pods name); the controller assembles it from
its caches and ``trainweave status`` from API reads, both through ``observed``, which reads each
Workflow once (``argo_view.view``): every reader of a reconcile takes the ``WorkflowView`` from
``Observed.views``. ``Progress`` is the current whole-pipeline attempt: its Workflows by resume
segment and the steps done.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from trainweave import codecs, labels
from trainweave.codecs import Stop
from trainweave.integrations.views.read import quota
from trainweave.integrations.views.read.argo_nodes import workflow_of
from trainweave.integrations.views.read.argo_view import FAILED, WorkflowView, view
from trainweave.integrations.views.read.bodies import Meta, PodBody
from trainweave.integrations.views.read.quota import held
from trainweave.labels import Reason, StoppedFor
from trainweave.states import ArgoPhase, PodPhase

Json = dict[str, Any]


@dataclass(frozen=True)
class StartRefusal:
    """A start the executor refused, observed by the reconcile that tried it: the input errors,
    or the API server's refusals of its dry runs, one line each. ``rollup`` writes it as the one
    ``Failed`` condition."""

    reason: Reason
    errors: tuple[str, ...]

    @property
    def message(self) -> str:
        """Every error, in order, on one line."""
        return "; ".join(self.errors)


class AttemptState(enum.StrEnum):
    """``Progress.state``: the latest Workflow segment of the current attempt."""

    NONE = "none"  # nothing started yet
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"  # the controller stopped it (suspend, deletion, a failed Job)


@dataclass(frozen=True)
class Observed:
    """Everything one reconcile reads: a TrainJob and its children (wire dicts), and each
    Workflow read once (``views``, in the order of ``workflows``; read here when not given), and
    a start refused in this reconcile (``refused``, ``executor.Executor.start``)."""

    trainjob: Json
    workflows: tuple[Json, ...] = ()
    pods: tuple[Json, ...] = ()
    workloads: tuple[Json, ...] = ()
    views: tuple[WorkflowView, ...] = ()
    refused: StartRefusal | None = None

    def __post_init__(self) -> None:
        if len(self.views) != len(self.workflows):
            object.__setattr__(self, "views", tuple(view(w) for w in self.workflows))

    @cached_property
    def owned_views(self) -> tuple[WorkflowView, ...]:
        """The views of the Workflows this TrainJob controls (``owned``)."""
        uid = Meta.of(self.trainjob).uid
        pairs = zip(self.workflows, self.views, strict=True)
        return tuple(v for w, v in pairs if Meta.of(w).controlled_by(uid))

    @cached_property
    def progress(self) -> Progress:
        """The current attempt (``progress``), worked out once per Observed."""
        return progress(self)


@dataclass(frozen=True)
class Progress:
    """Where the current whole-pipeline attempt stands."""

    attempt: int
    views: tuple[WorkflowView, ...] = ()  # this attempt's Workflows by segment
    done_steps: frozenset[str] = frozenset()

    @property
    def latest(self) -> WorkflowView | None:
        """The newest segment of this attempt."""
        return self.views[-1] if self.views else None

    @property
    def state(self) -> AttemptState:
        """Where the latest segment of this attempt stands."""
        wf = self.latest
        if wf is None:
            return AttemptState.NONE
        if wf.backoff_job:  # the controller stopped it: a step's shared backoffLimit is spent
            return AttemptState.FAILED if wf.terminal else AttemptState.RUNNING
        if wf.stopped_for:
            # a suspend that landed once every step of the segment had done its work stopped
            # nothing: the pipeline is done (as a JobSet that completed before it is Complete),
            # and a resumed segment would have no step to run (Argo refuses an empty DAG)
            stopped_done = wf.terminal and bool(wf.steps) and set(wf.steps) <= self.done_steps
            if wf.stopped_for == Stop(StoppedFor.SUSPEND) and stopped_done:
                return AttemptState.SUCCEEDED
            return AttemptState.STOPPED
        if wf.phase == ArgoPhase.SUCCEEDED:
            return AttemptState.SUCCEEDED
        if wf.phase in FAILED:
            return AttemptState.FAILED
        return AttemptState.RUNNING

    @property
    def max_restarts(self) -> int:
        """JobSet failurePolicy.maxRestarts recorded on the Workflow."""
        return self.latest.max_restarts if self.latest else 0

    @property
    def exhausted(self) -> bool:
        """No whole-pipeline retry left after this attempt."""
        return self.attempt >= self.max_restarts


def owned(trainjob: Json, objs: tuple[Json, ...]) -> tuple[Json, ...]:
    """The objects whose controller ownerReference is this TrainJob (by UID)."""
    uid = Meta.of(trainjob).uid
    return tuple(o for o in objs if Meta.of(o).controlled_by(uid))


def attempts_started(trainjob: Json) -> int:
    """The ``trainweave.io/attempts`` annotation (0 when never started)."""
    return max(0, codecs.decode_int(Meta.of(trainjob).annotation(labels.ATTEMPTS_ANNOTATION)))


def progress(obs: Observed) -> Progress:
    """The current attempt: its Workflows (all segments) and finished steps."""
    views = obs.owned_views
    started = attempts_started(obs.trainjob)
    attempt = max([started - 1] + [v.attempt for v in views] + [0])
    mine = sorted((v for v in views if v.attempt == attempt), key=lambda v: v.segment)
    done: set[str] = set()
    for v in mine:
        done |= v.succeeded_steps | stopped_steps_that_succeeded(v, obs.pods)
    return Progress(attempt, tuple(mine), frozenset(done))


def stopped_steps_that_succeeded(wf: WorkflowView, pods: tuple[Json, ...]) -> frozenset[str]:
    """The steps of a stopped segment whose pods all succeeded although Argo marked them failed
    by the stop (``workflow shutdown with strategy: Stop``): the pods ended before the stop
    reached them. They count as done, as Kueue counts them: it finishes a group once
    ``pod-group-total-count`` of its pods succeeded (v0.19.2 ``pod_controller.go`` ``Finished``),
    and the work they did is not done twice. A step with a pod missing or failed is re-run by
    the next segment under the segment's own group name (``names.group_name``)."""
    if not wf.stopped_for:
        return frozenset()
    by_step: dict[str, list[bool]] = {}
    for group, info in wf.groups.items():
        mine = [p for p in pods if group_of(p) == group and workflow_of(p) == wf.name]
        totals = {Meta.of(p).annotation(labels.KUEUE_POD_GROUP_TOTAL_COUNT) for p in mine}
        total = codecs.decode_int(totals.pop()) if len(totals) == 1 else -1
        succeeded = all(PodBody.of(p).phase == PodPhase.SUCCEEDED for p in mine)
        by_step.setdefault(info.step, []).append(total > 0 and len(mine) == total and succeeded)
    return frozenset(step for step, groups in by_step.items() if all(groups))


def group_of(pod: Json) -> str:
    """The pod's Kueue group (annotation first, as Kueue reads it)."""
    meta = Meta.of(pod)
    return meta.annotation(labels.KUEUE_POD_GROUP_NAME) or meta.label(labels.KUEUE_POD_GROUP_NAME)


def observed(
    trainjob: Json,
    workflows: Iterable[Json],
    pods: Iterable[Json],
    workload_of: Callable[[str], Json | None],
    view_of: Callable[[Json], WorkflowView] = view,
) -> Observed:
    """An ``Observed`` of ``trainjob``: its Workflows and pods, and the Workload of every pod group
    they name (``workload_of(group)``, None when there is none); each Workflow read by
    ``view_of`` (``argo_view.view``; the controller's keeps the view of an unchanged Workflow)."""
    workflows, pods = tuple(workflows), tuple(pods)
    views = tuple(view_of(w) for w in workflows)
    groups = {g for v in views for g in v.groups} | {group_of(p) for p in pods}
    found = (workload_of(g) for g in sorted(groups - {""}))
    return Observed(trainjob, workflows, pods, tuple(w for w in found if w is not None), views)


def quota_records(obs: Observed, now: datetime) -> list[quota.StepQuota]:
    """StepQuota of each step Workload of this TrainJob's Workflows."""
    info: dict[str, Json] = {}
    for v in obs.owned_views:
        for group, g in v.groups.items():
            info[group] = {"step": g.step, "role": g.role, "attempt": v.attempt}
    return [
        quota.step_quota(wl, info[name], now)
        for wl in obs.workloads
        if (name := Meta.of(wl).name) in info and not held(wl)
    ]
