"""TrainJob status as a pure fold of what the cluster shows: ``rollup(observed, now)``.

Maps Workflows, step pods and Kueue Workloads onto Trainer v2.3.0's status
(``pkg/apis/trainer/v1alpha1/trainjob_types.go``): condition types only
``Suspended``/``Complete``/``Failed`` with JobSet-compatible reasons, and
``jobsStatus`` (``jobs_status``). Trainer's rules kept as upstream
(``pkg/controller/trainjob_controller.go``): a Suspended condition only once a
job was suspended; the deadline clock starts at creation and restarts at
``Suspended=False``; it does not run while suspended; a finished TrainJob
(Complete or Failed True) is left alone. Conditions keep their order (the
``State`` printcolumn shows the last one) and ``lastTransitionTime`` unless
their status flips. The one writer of conditions: a start the executor refused
(``Observed.refused``: input errors, the API server's refusals) is ``Failed``
here, with every error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainweave.integrations.views.decide import verdict
from trainweave.integrations.views.decide.jobs_status import jobs_status
from trainweave.integrations.views.read.bodies import TrainJobBody, condition, condition_true
from trainweave.integrations.views.read.observed import AttemptState, Observed, Progress
from trainweave.integrations.views.read.times import format_time, parse_time
from trainweave.labels import ConditionType, Reason

Json = dict[str, Any]

MSG_SUSPENDED = "TrainJob is suspended"
MSG_RESUMED = "TrainJob is resumed"
MSG_DEADLINE = "TrainJob exceeded its active deadline"
# JobSet v0.12.0's condition messages (pkg/constants), which Trainer copies onto the TrainJob; a
# failure names the first failed Job as JobSet does, ``<trainjob>-<job>-<replica>``, and then says
# which pod and exit code (docs/fidelity.md, the dynamic oracle).
MSG_COMPLETE = "jobset completed successfully"
MSG_FAILED_JOBS = "jobset failed due to one or more job failures"
MSG_MAX_RESTARTS = "jobset failed due to reaching max number of restarts"


@dataclass(frozen=True)
class Status:
    """The desired ``status`` (conditions, jobsStatus) and when to look again."""

    conditions: list[Json] = field(default_factory=list)
    jobs_status: list[Json] = field(default_factory=list)
    deadline: datetime | None = None

    def wire(self) -> Json:
        """The status as the API takes it (MinProperties=1: never ``{}``)."""
        out: Json = {}
        if self.conditions:
            out["conditions"] = self.conditions
        if self.jobs_status:
            out["jobsStatus"] = self.jobs_status
        return out


def is_finished(conds: list[Json]) -> bool:
    """Complete or Failed is True (Trainer's IsTrainJobFinished)."""
    return condition_true(conds, ConditionType.COMPLETE) or condition_true(
        conds, ConditionType.FAILED
    )


# Trainer's CRD caps a condition message at 32768 characters (status.conditions[].message
# maxLength); a status patch over it is refused, and the TrainJob would never show its failure.
# An error quoting a hostile value (a 1 MiB quantity string) is clipped well below.
MAX_MESSAGE = 4096


def clip(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message``, or its head and how much was cut when longer than ``limit``."""
    if len(message) <= limit:
        return message
    kept = limit - 40  # room for the tail
    return f"{message[:kept]}... ({len(message) - kept} more characters)"


def set_condition(
    conds: list[Json], ctype: ConditionType, status: bool, reason: Reason, message: str, now: str
) -> list[Json]:
    """meta.SetStatusCondition: update in place, append if new, keep time unless flipped; the
    message clipped to MAX_MESSAGE."""
    value = "True" if status else "False"
    message = clip(message)
    out = []
    found = False
    for c in conds:
        if c.get("type") == ctype.value:
            found = True
            same = c.get("status") == value
            c = {
                "type": ctype.value,
                "status": value,
                "reason": reason.value,
                "message": message,
                "lastTransitionTime": c.get("lastTransitionTime", now) if same else now,
            }
        out.append(c)
    if not found:
        out.append(
            {
                "type": ctype.value,
                "status": value,
                "reason": reason.value,
                "message": message,
                "lastTransitionTime": now,
            }
        )
    return out


def deadline(trainjob: Json, conds: list[Json]) -> datetime | None:
    """When activeDeadlineSeconds runs out (None: no deadline, or suspended)."""
    tj = TrainJobBody.of(trainjob)
    seconds = tj.active_deadline_seconds
    if not seconds or tj.suspend:
        return None
    start = parse_time(tj.meta.creation_timestamp)
    susp = condition(conds, ConditionType.SUSPENDED)
    if susp is not None and susp.get("status") == "False":
        start = parse_time(str(susp.get("lastTransitionTime") or "")) or start
    if start is None:
        return None
    try:
        return start + timedelta(seconds=seconds)
    except OverflowError:  # int64 allows deadlines past the year 9999: they never run out
        return None


def rollup(obs: Observed, now: datetime) -> Status:
    """The whole desired status. Pure."""
    tj = obs.trainjob
    body = TrainJobBody.of(tj)
    current = [dict(c) for c in body.conditions]
    jobs = jobs_status(obs)
    if is_finished(current):
        return Status(current, jobs or body.jobs_status)
    stamp = format_time(now)
    conds = current
    susp = condition(conds, ConditionType.SUSPENDED)
    if body.suspend:
        conds = set_condition(
            conds, ConditionType.SUSPENDED, True, Reason.SUSPENDED, MSG_SUSPENDED, stamp
        )
    elif susp is not None and susp.get("status") == "True":
        conds = set_condition(
            conds, ConditionType.SUSPENDED, False, Reason.RESUMED, MSG_RESUMED, stamp
        )
    if obs.refused is not None:  # the start this reconcile tried: nothing was created
        conds = set_condition(
            conds, ConditionType.FAILED, True, obs.refused.reason, obs.refused.message, stamp
        )
        return Status(conds, jobs)
    due = deadline(tj, conds)
    prog = obs.progress
    state = verdict.state(prog)
    if due is not None and now >= due:
        conds = set_condition(
            conds, ConditionType.FAILED, True, Reason.DEADLINE_EXCEEDED, MSG_DEADLINE, stamp
        )
        due = None
    elif state == AttemptState.SUCCEEDED:
        conds = set_condition(
            conds, ConditionType.COMPLETE, True, Reason.ALL_JOBS_COMPLETED, MSG_COMPLETE, stamp
        )
    elif state == AttemptState.FAILED and body.active_deadline_seconds and argo_deadline(prog):
        conds = set_condition(
            conds, ConditionType.FAILED, True, Reason.DEADLINE_EXCEEDED, MSG_DEADLINE, stamp
        )
        due = None
    elif state == AttemptState.FAILED and prog.exhausted and not body.suspend:
        _, detail = verdict.failure(prog.latest) if prog.latest else ("", "")
        job = verdict.failed_job(body.meta.name, prog.latest) if prog.latest else ""
        first = f" (first failed job: {job})" if job else ""
        if prog.max_restarts > 0:
            reason, head = Reason.REACHED_MAX_RESTARTS, MSG_MAX_RESTARTS
            detail = f"{detail}; reached maxRestarts={prog.max_restarts}"
        else:
            reason, head = Reason.FAILED_JOBS, MSG_FAILED_JOBS
        message = f"{head}{first}: {detail}"
        conds = set_condition(conds, ConditionType.FAILED, True, reason, message, stamp)
    return Status(conds, jobs, due)


def argo_deadline(prog: Progress) -> bool:
    """Argo failed the Workflow on its own deadline (operator.go messages)."""
    wf = prog.latest
    if wf is None:
        return False
    texts = [wf.message] + [s.message for s in wf.steps.values()]
    return any("exceeded its deadline" in t or "exceeded workflow deadline" in t for t in texts)
