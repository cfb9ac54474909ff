"""TrainJob status as a pure fold of what the cluster shows: ``rollup(observed, now)``.

Maps Workflows, step pods and Kueue Workloads onto Trainer v2.3.0's status
(``pkg/apis/trainer/v1alpha1/trainjob_types.go``): condition types only
``Suspended``/``Complete``/``Failed`` with JobSet-compatible reasons, and
``jobsStatus`` one entry per replicatedJob counting its Jobs as JobSet does,
each Job read from its pods (the last attempt of each pod). Trainer's rules kept as upstream
(``pkg/controller/trainjob_controller.go``): a Suspended condition only once a
job was suspended; the deadline clock starts at creation and restarts at
``Suspended=False``; it does not run while suspended; a finished TrainJob
(Complete or Failed True) is left alone. Conditions keep their order (the
``State`` printcolumn shows the last one) and ``lastTransitionTime`` unless
their status flips.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from trainweave import labels
from trainweave.integrations.views.argo_view import (
    ATTEMPT_SUFFIX,
    FAILED,
    WORKFLOW_LABEL,
    WorkflowView,
    view,
    workflow_of,
)
from trainweave.integrations.views.times import format_time, parse_time
from trainweave.labels import ConditionType, Reason, StoppedFor

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
class Observed:
    """Everything one reconcile reads: a TrainJob and its children (wire dicts)."""

    trainjob: Json
    workflows: tuple[Json, ...] = ()
    pods: tuple[Json, ...] = ()
    workloads: tuple[Json, ...] = ()


@dataclass(frozen=True)
class Progress:
    """Where the current whole-pipeline attempt stands."""

    attempt: int
    started: int  # attempts started (annotation)
    views: tuple[WorkflowView, ...] = ()  # this attempt's Workflows by segment
    done_steps: frozenset[str] = frozenset()

    @property
    def latest(self) -> WorkflowView | None:
        """The newest segment of this attempt."""
        return self.views[-1] if self.views else None

    @property
    def state(self) -> str:
        """none | running | succeeded | failed | stopped."""
        wf = self.latest
        if wf is None:
            return "none"
        if wf.backoff_job:  # the controller stopped it: a step's shared backoffLimit is spent
            return "failed" if wf.terminal else "running"
        if wf.stopped_for:
            # a suspend that landed once every step of the segment had done its work stopped
            # nothing: the pipeline is done (as a JobSet that completed before it is Complete),
            # and a resumed segment would have no step to run (Argo refuses an empty DAG)
            stopped_done = wf.terminal and bool(wf.steps) and set(wf.steps) <= self.done_steps
            if wf.stopped_for == StoppedFor.SUSPEND and stopped_done:
                return "succeeded"
            return "stopped"
        if wf.phase == "Succeeded":
            return "succeeded"
        if wf.phase in ("Failed", "Error"):
            return "failed"
        return "running"

    @property
    def max_restarts(self) -> int:
        """JobSet failurePolicy.maxRestarts recorded on the Workflow."""
        return self.latest.max_restarts if self.latest else 0

    @property
    def exhausted(self) -> bool:
        """No whole-pipeline retry left after this attempt."""
        return self.attempt >= self.max_restarts


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


def owned(trainjob: Json, objs: tuple[Json, ...]) -> tuple[Json, ...]:
    """The objects whose controller ownerReference is this TrainJob (by UID)."""
    uid = (trainjob.get("metadata") or {}).get("uid")
    return tuple(
        o
        for o in objs
        if any(
            r.get("uid") == uid and r.get("controller")
            for r in (o.get("metadata") or {}).get("ownerReferences") or []
        )
    )


def attempts_started(trainjob: Json) -> int:
    """The ``trainweave.io/attempts`` annotation (0 when never started)."""
    ann = (trainjob.get("metadata") or {}).get("annotations") or {}
    try:
        return max(0, int(ann.get(labels.ATTEMPTS_ANNOTATION, "0")))
    except ValueError:
        return 0


def progress(obs: Observed) -> Progress:
    """The current attempt: its Workflows (all segments) and finished steps."""
    views = [view(w) for w in owned(obs.trainjob, obs.workflows)]
    started = attempts_started(obs.trainjob)
    attempt = max([started - 1] + [v.attempt for v in views] + [0])
    mine = sorted((v for v in views if v.attempt == attempt), key=lambda v: v.segment)
    done: set[str] = set()
    for v in mine:
        done |= v.succeeded_steps
    return Progress(attempt, started, tuple(mine), frozenset(done))


def condition(conds: list[Json], ctype: ConditionType) -> Json | None:
    """The condition of type ``ctype``, if any."""
    for c in conds:
        if c.get("type") == ctype.value:
            return c
    return None


def condition_true(conds: list[Json], ctype: ConditionType) -> bool:
    """The condition of type ``ctype`` is there and True."""
    found = condition(conds, ctype)
    return found is not None and found.get("status") == "True"


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
    spec = trainjob.get("spec") or {}
    seconds = spec.get("activeDeadlineSeconds")
    if not seconds or spec.get("suspend"):
        return None
    start = parse_time(str((trainjob.get("metadata") or {}).get("creationTimestamp") or ""))
    susp = condition(conds, ConditionType.SUSPENDED)
    if susp is not None and susp.get("status") == "False":
        start = parse_time(str(susp.get("lastTransitionTime") or "")) or start
    return start + timedelta(seconds=int(seconds)) if start else None


def rollup(obs: Observed, now: datetime) -> Status:
    """The whole desired status. Pure."""
    tj = obs.trainjob
    spec = tj.get("spec") or {}
    current = [dict(c) for c in (tj.get("status") or {}).get("conditions") or []]
    jobs = jobs_status(obs)
    if is_finished(current):
        return Status(current, jobs or _current_jobs(tj))
    stamp = format_time(now)
    conds = current
    susp = condition(conds, ConditionType.SUSPENDED)
    if spec.get("suspend"):
        conds = set_condition(
            conds, ConditionType.SUSPENDED, True, Reason.SUSPENDED, MSG_SUSPENDED, stamp
        )
    elif susp is not None and susp.get("status") == "True":
        conds = set_condition(
            conds, ConditionType.SUSPENDED, False, Reason.RESUMED, MSG_RESUMED, stamp
        )
    due = deadline(tj, conds)
    prog = progress(obs)
    if due is not None and now >= due:
        conds = set_condition(
            conds, ConditionType.FAILED, True, Reason.DEADLINE_EXCEEDED, MSG_DEADLINE, stamp
        )
        due = None
    elif prog.state == "succeeded":
        conds = set_condition(
            conds, ConditionType.COMPLETE, True, Reason.ALL_JOBS_COMPLETED, MSG_COMPLETE, stamp
        )
    elif prog.state == "failed" and spec.get("activeDeadlineSeconds") and argo_deadline(prog):
        conds = set_condition(
            conds, ConditionType.FAILED, True, Reason.DEADLINE_EXCEEDED, MSG_DEADLINE, stamp
        )
        due = None
    elif prog.state == "failed" and prog.exhausted and not spec.get("suspend"):
        _, detail = prog.latest.failure() if prog.latest else ("", "")
        slot = prog.latest.failed_slot() if prog.latest else ""
        first = f" (first failed job: {meta_name(tj)}-{slot.rsplit('-', 1)[0]})" if slot else ""
        if prog.max_restarts > 0:
            reason, head = Reason.REACHED_MAX_RESTARTS, MSG_MAX_RESTARTS
            detail = f"{detail}; reached maxRestarts={prog.max_restarts}"
        else:
            reason, head = Reason.FAILED_JOBS, MSG_FAILED_JOBS
        message = f"{head}{first}: {detail}"
        conds = set_condition(conds, ConditionType.FAILED, True, reason, message, stamp)
    return Status(conds, jobs, due)


def meta_name(obj: Json) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def argo_deadline(prog: Progress) -> bool:
    """Argo failed the Workflow on its own deadline (operator.go messages)."""
    wf = prog.latest
    if wf is None:
        return False
    texts = [wf.message] + [s.message for s in wf.steps.values()]
    return any("exceeded its deadline" in t or "exceeded workflow deadline" in t for t in texts)


def _current_jobs(tj: Json) -> list[Json]:
    return list((tj.get("status") or {}).get("jobsStatus") or [])


def replicated_jobs(obs: Observed) -> list[str]:
    """replicatedJob names in pipeline order, from the pod templates and pods."""
    names: list[str] = []
    for wf in owned(obs.trainjob, obs.workflows):
        for tpl in (wf.get("spec") or {}).get("templates") or []:
            rjob = ((tpl.get("metadata") or {}).get("labels") or {}).get(labels.REPLICATED_JOB)
            if rjob and rjob not in names:
                names.append(rjob)
    for pod in obs.pods:
        rjob = ((pod.get("metadata") or {}).get("labels") or {}).get(labels.REPLICATED_JOB)
        if rjob and rjob not in names:
            names.append(rjob)
    return names


def attempt_pods(obs: Observed, prog: Progress) -> list[Json]:
    """Pods of the current attempt (``prog``), the last try of each pod slot only."""
    wf_names = {v.name for v in prog.views}
    latest: dict[tuple[str, str], Json] = {}
    pods = sorted(obs.pods, key=lambda p: str(p["metadata"].get("creationTimestamp") or ""))
    for pod in pods:
        meta = pod.get("metadata") or {}
        lbls = meta.get("labels") or {}
        wf = lbls.get(WORKFLOW_LABEL, "")
        if wf not in wf_names:
            continue
        node = str((meta.get("annotations") or {}).get(labels.ARGO_NODE_NAME) or meta.get("name"))
        node = ATTEMPT_SUFFIX.sub("", node[len(wf) + 1 :] if node.startswith(wf + ".") else node)
        latest[(lbls.get(labels.REPLICATED_JOB, ""), node)] = pod
    return list(latest.values())


def job_sizes(obs: Observed) -> dict[tuple[str, str], int]:
    """Pods per Job, ``(replicatedJob, replica) -> n``, from the step DAGs of the Workflows.

    A step DAG has one task per pod, ``template`` = the replicatedJob's pod template, parameter
    ``replica`` = the Job's index (``jobset.sigs.k8s.io/job-index``) (``adapters.argo.workflow``).
    """
    sizes: dict[tuple[str, str], int] = {}
    for wf in owned(obs.trainjob, obs.workflows):
        templates = (wf.get("spec") or {}).get("templates") or []
        rjob_of = {
            str(t.get("name")): rjob
            for t in templates
            if (rjob := ((t.get("metadata") or {}).get("labels") or {}).get(labels.REPLICATED_JOB))
        }
        counted: dict[tuple[str, str], int] = {}
        for tpl in templates:
            for task in (tpl.get("dag") or {}).get("tasks") or []:
                rjob = rjob_of.get(str(task.get("template")))
                if rjob is None:
                    continue
                params = (task.get("arguments") or {}).get("parameters") or []
                replica = next(
                    (str(p.get("value")) for p in params if p.get("name") == "replica"), "0"
                )
                counted[(rjob, replica)] = counted.get((rjob, replica), 0) + 1
        for key, n in counted.items():
            sizes[key] = max(sizes.get(key, 0), n)
    return sizes


def jobs_status(obs: Observed) -> list[Json]:
    """One ``{name, ready, succeeded, failed, active, suspended}`` per replicatedJob, in Jobs.

    As JobSet v0.12 ``calculateReplicatedJobStatuses`` counts child Jobs; a Job here is the
    pods of one replica (label ``jobset.sigs.k8s.io/job-index``), last try of each pod:
    succeeded when all its pods succeeded; failed when a pod failed and its step failed for
    good (a failed pod Argo is about to retry leaves the Job running, as a Job's backoff does);
    otherwise suspended when the TrainJob is suspended or all its live pods wait at Kueue's
    admission gate (a Kueue-suspended Job), active when a pod is Pending/Running and not being
    deleted, and ready when ready + succeeded pods reach its size. Jobs of steps not reached
    yet do not exist, as JobSet creates a dependent replicatedJob's Jobs only when it may run.
    """
    suspended_tj = bool((obs.trainjob.get("spec") or {}).get("suspend"))
    zero = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    counts: dict[str, dict[str, int]] = {name: dict(zero) for name in replicated_jobs(obs)}
    sizes = job_sizes(obs)
    prog = progress(obs)
    failed_steps = _failed_steps(prog)
    jobs: dict[tuple[str, str], list[Json]] = {}
    for pod in attempt_pods(obs, prog):
        lbls = (pod.get("metadata") or {}).get("labels") or {}
        key = (
            str(lbls.get(labels.REPLICATED_JOB, "")),
            str(lbls.get(labels.JOBSET_JOB_INDEX, "0")),
        )
        if key[0] in counts:
            jobs.setdefault(key, []).append(pod)
    for (rjob, replica), pods in jobs.items():
        c = counts[rjob]
        size = max(sizes.get((rjob, replica), 0), len(pods))
        phases = [(p.get("status") or {}).get("phase") for p in pods]
        succeeded = phases.count("Succeeded")
        if succeeded >= size:
            c["succeeded"] += 1
            continue
        step = str(((pods[0].get("metadata") or {}).get("labels") or {}).get(labels.STEP, ""))
        if "Failed" in phases and (workflow_of(pods[0]), step) in failed_steps:
            c["failed"] += 1
            continue
        live = [
            p
            for p, phase in zip(pods, phases, strict=True)
            if phase in ("Pending", "Running")
            and not (p.get("metadata") or {}).get("deletionTimestamp")
        ]
        if suspended_tj or (live and all(_gated(p) for p in live)):
            c["suspended"] += 1
            continue
        if live:
            c["active"] += 1
        if succeeded + sum(1 for p in live if _ready(p)) >= size:
            c["ready"] += 1
    return [{"name": name, **c} for name, c in counts.items()]


def _failed_steps(prog: Progress) -> set[tuple[str, str]]:
    """(workflow, step) pairs whose step ended Failed/Error, or ran in a Workflow that ended so."""
    out: set[tuple[str, str]] = set()
    for v in prog.views:
        for name, step in v.steps.items():
            if step.phase in FAILED or (v.terminal and step.phase != "Succeeded"):
                out.add((v.name, name))
    return out


def _gated(pod: Json) -> bool:
    gates = (pod.get("spec") or {}).get("schedulingGates") or []
    return any(g.get("name") == labels.KUEUE_ADMISSION_GATE for g in gates)


def _ready(pod: Json) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False
