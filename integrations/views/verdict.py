"""The Job controller's verdict on one job of a step, from its pods' failed attempts. Pure.

What the controller keeps of a Job's retry policy (``trainweave.io/backoff-limits``): every
failed attempt of the job's pods is judged as k8s.io/kubernetes v1.36
pkg/controller/job/pod_failure_policy.go ``matchPodFailurePolicy`` would (``retry.judge``),
after the disruption rule (``disruption.cause``: a pod Kueue stopped or Kubernetes disrupted,
and the gang peers that failed after it, count neither against the budget nor against an
exit-code rule). A ``FailJob`` match fails the job at once; counted failures past the budget
(the step's pods together when shared, else per pod) fail it with the Job controller's reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainweave.adapters.argo import retry
from trainweave.integrations.views import disruption
from trainweave.model import RetryPolicy

if TYPE_CHECKING:
    from trainweave.integrations.views.argo_view import StepView

# The Job controller's Failed condition when a Job's backoffLimit is spent (k8s.io/kubernetes
# v1.36 pkg/controller/job/job_controller.go: batch.JobReasonBackoffLimitExceeded).
BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
# ... when a backoffLimitPerIndex is spent, and when a FailJob rule matched (the Job's podFailurePolicy
# message, pod_failure_policy.go matchPodFailurePolicy, names the pod slot here)
FAILED_INDEXES = "FailedIndexes"
MSG_FAILED_INDEXES = "Job has failed indexes"
POD_FAILURE_POLICY = "PodFailurePolicy"


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
        if not re.fullmatch(rf"{re.escape(job)}-\d+-\d+", pod.slot):
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
