"""The Job controller's verdict on one job of a step, from its pods' failed attempts. Pure.

What the controller keeps of a Job's retry policy (``trainweave.io/backoff-limits``): every
failed attempt of the job's pods is judged as k8s.io/kubernetes v1.36
pkg/controller/job/pod_failure_policy.go ``matchPodFailurePolicy`` would (``retry.judge``),
after the disruption rule (``disruption.cause``: a pod Kueue stopped or Kubernetes disrupted,
and the gang peers that failed after it, count neither against the budget nor against an
exit-code rule). A ``FailJob`` match fails the job at once; counted failures past the budget
(the step's pods together when shared, else per pod) fail it with the Job controller's reason.

Over a whole Workflow (``WorkflowView``): ``first`` is the first job that fails now (a pod the API
server refused to create before any retry policy), ``failed_slot`` the pod slot of the first
failure and ``failure`` the step and message the TrainJob's Failed condition gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainweave.adapters import names
from trainweave.adapters.argo import retry
from trainweave.integrations.views.read import disruption
from trainweave.integrations.views.read.argo_view import FAILED
from trainweave.integrations.views.read.observed import AttemptState, Progress
from trainweave.model import RetryPolicy
from trainweave.states import ArgoPhase

if TYPE_CHECKING:
    from trainweave.integrations.views.read.argo_view import StepView, WorkflowView

# The Job controller's Failed condition when a Job's backoffLimit is spent (k8s.io/kubernetes
# v1.36 pkg/controller/job/job_controller.go: batch.JobReasonBackoffLimitExceeded).
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
# ... when a backoffLimitPerIndex is spent, and when a FailJob rule matched (the Job's podFailurePolicy
# message, pod_failure_policy.go matchPodFailurePolicy, names the pod slot here)
FAILED_INDEXES = "FailedIndexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
POD_FAILURE_POLICY = "PodFailurePolicy"
# A pod the API server refused to create (an admission plugin or webhook: a ServiceAccount the
# namespace lacks, PodSecurity, an invalid spec). Argo v4.0.7 fails the node with the error's
# text (workflowpod.go createWorkflowPod: not transient) and retries it as Error, with backoff,
# as often as its retryStrategy allows; no retry can succeed. The Job controller's event
# reason for it (controller_utils.go FailedCreatePodReason).
FAILED_CREATE = "FailedCreate"
_REFUSED = re.compile(r'pods? "[^"]*" is (forbidden|invalid): ', re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    """A job the controller fails as its Job would: ``reason`` and ``message`` are the Job
    controller's Failed condition."""

    step: str
    job: str
    reason: str
    message: str


def spent(
    job: str, policy: RetryPolicy, view_: StepView | None, record: disruption.Record
) -> tuple[dict[str, int], Verdict | None]:
    """Counted failures per pod slot of ``job`` in ``view_``, and a FailJob verdict if a rule
    matched (the counting stops there)."""
    counted: dict[str, int] = {}
    step = view_.name if view_ else ""
    for pod in view_.pods if view_ else ():
        if pod.job is None or pod.job[0] != job:
            continue
        for attempt in pod.failures:
            why = disruption.cause(
                record, step, pod.slot, attempt.index, attempt.started, attempt.finished
            )
            judged = retry.judge(policy, attempt.phase, attempt.exits, why)
            if judged.action == "FailJob":
                what = (
                    f"Container {judged.container} for pod {pod.slot} failed with exit code"
                    f" {judged.exit_code}"
                    if judged.container
                    else f"Pod {pod.slot} has condition DisruptionTarget"
                )
                message = f"{what} matching FailJob rule at index {judged.rule}"
                return counted, Verdict(step, job, POD_FAILURE_POLICY, message)
            if judged.action == "Count":
                counted[pod.slot] = counted.get(pod.slot, 0) + 1
    return counted, None


def verdict(
    step: str,
    job: str,
    policy: RetryPolicy,
    view_: StepView | None,
    record: disruption.Record,
) -> Verdict | None:
    """The Job controller's verdict on ``job`` of ``step`` now (None: it goes on)."""
    counted, failed = spent(job, policy, view_, record)
    if failed is not None:
        return Verdict(step, job, failed.reason, failed.message)
    used = sum(counted.values()) if policy.shared else max(counted.values(), default=0)
    if used <= policy.budget:
        return None
    if policy.per_index:
        return Verdict(step, job, FAILED_INDEXES, MSG_FAILED_INDEXES)
    return Verdict(step, job, BACKOFF_LIMIT_EXCEEDED, MSG_BACKOFF_LIMIT)


def refused(message: str) -> bool:
    """Whether a failed Pod node's message is the API server refusing the pod for good (an
    exceeded ResourceQuota is also Forbidden, but Argo waits for it: not a refusal)."""
    return _REFUSED.match(message) is not None and "exceeded quota" not in message


def first(wf: WorkflowView) -> Verdict | None:
    """The first job the Job controller would fail now, by the retry policies the controller
    keeps (``wf.backoff_limits``; ``verdict``, disruptions excused by ``wf.disruptions``);
    first, a pod the API server refused to create (``refused``)."""
    for step_view in wf.steps.values():
        for pod in step_view.pods:
            if pod.phase == ArgoPhase.ERROR and refused(pod.message):
                job = pod.job[0] if pod.job else pod.slot
                return Verdict(step_view.name, job, FAILED_CREATE, pod.message)
    return _budget_verdict(wf)


def _budget_verdict(wf: WorkflowView) -> Verdict | None:
    """The first job's verdict by the retry policies the controller keeps (``verdict``)."""
    for step, jobs in wf.backoff_limits.items():
        view_ = wf.steps.get(step)
        for job, policy in jobs.items():
            found = verdict(step, job, policy, view_, wf.disruptions)
            if found is not None:
                return found
    return None


def overruled(wf: WorkflowView | None) -> Verdict | None:
    """The verdict on a Workflow Argo finished ``Succeeded`` although the Job controller had
    failed one of its jobs: a FailJob match, or counted failures past the budget, that Argo
    retried before the controller's stop landed (the controller judges every failed attempt and
    Argo retries after a flat 10 s backoff: a leader failover of 17 s, or a slow controller, lets
    Argo run the next attempt). A Job's Failed condition is final
    (k8s.io/kubernetes v1.36 pkg/controller/job/job_controller.go: a finished Job is not synced
    again), so a later pod's success does not make the step succeed. A pod the API server refused
    once and created later is not a verdict here (the Job controller retries creates)."""
    if wf is None or wf.phase != ArgoPhase.SUCCEEDED:
        return None
    return _budget_verdict(wf)


def state(prog: Progress) -> AttemptState:
    """The attempt's state as the Job controller would have it: ``Progress.state``, except that
    a Workflow Argo finished ``Succeeded`` after a job's verdict (``overruled``) failed."""
    if prog.state == AttemptState.SUCCEEDED and overruled(prog.latest) is not None:
        return AttemptState.FAILED
    return prog.state


def failed_slot(wf: WorkflowView) -> str:
    """The pod slot (``names.slot``) of the first failure ("" if none is known): the judged
    job's first failed pod, else the first failed step's."""
    judged = first(wf) if wf.backoff_job else overruled(wf)
    for step in wf.steps.values():
        pods = [p for p in step.pods if p.failures or p.phase in FAILED]
        if judged is not None:
            pods = [p for p in pods if p.job is not None and p.job[0] == judged.job]
        elif step.phase not in FAILED:
            continue
        if pods:
            return sorted(pods, key=lambda p: p.slot)[0].slot
    return ""


def failed_job(trainjob: str, wf: WorkflowView) -> str:
    """JobSet's name of the Job of the first failure, ``<jobset>-<replicatedJob>-<jobIndex>``
    ("" if none is known)."""
    job = names.job_of_slot(failed_slot(wf))
    return f"{trainjob}-{job[0]}-{job[1]}" if job else ""


def failure(wf: WorkflowView) -> tuple[str, str]:
    """``(step, message)`` naming the step that failed and its exit code."""
    judged = first(wf) if wf.backoff_job else overruled(wf)
    if judged is not None:
        return judged.step, (
            f"step {judged.step!r} failed: job {judged.job!r}: {judged.reason}: {judged.message}"
        )
    for step in wf.steps.values():
        if step.phase not in FAILED:
            continue
        pod = step.failed_pod
        if pod is None:
            return step.name, f"step {step.name!r} failed: {step.message or wf.message}"
        code = "" if pod.exit_code is None else f" with exit code {pod.exit_code}"
        detail = pod.message or step.message
        tail = f" ({detail})" if detail else ""
        return step.name, f"step {step.name!r} failed: pod {pod.slot!r} exited{code}{tail}"
    return "", f"workflow {wf.name} {wf.phase}: {wf.message}".rstrip(": ")
