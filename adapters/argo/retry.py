"""RetryPolicy (batch Job semantics) -> Argo ``retryStrategy``. Pure.

Argo v4.0.7 (``operator.go`` processNodeRetries) retries a node while ``len(children) <= limit``
and its ``expression`` holds. Exit codes come from ``lastRetry.message`` (docs/design.md, D10);
disruptions are retried outside the budget (D11). What maps to what:

- podFailurePolicy rules -> a ternary chain in rule order: ``FailJob`` false, ``Ignore`` true,
  ``Count`` the budget check; a rule's ``containerName`` must lead the message;
- no rule matched -> ``Count``: ``asInt(retries) < budget``;
- a node in ``Error`` or an exit 143 -> retried without counting (unless a ``DisruptionTarget``
  rule says otherwise);
- a pod of several containers (``RetryPolicy.judged``) -> no expression; the controller judges
  each failed attempt by every container's exit code (``judge``, the Job controller's
  ``matchPodFailurePolicy``);
- a Workflow the trainweave controller runs (``controller=True``) -> no expression for any pod:
  the controller judges every failed attempt (``judge``), from the pod conditions a retry
  expression cannot read (a disruption and the gang peers it takes down never count,
  ``Disrupted``), and stops the step on a verdict; ``limit`` = budget + DISRUPTION_ALLOWANCE;
- otherwise ``limit`` = budget + REQUEUE_ALLOWANCE; backoff 10s doubling, capped at 6m (the Job
  controller's); the Job's ``activeDeadlineSeconds`` -> ``maxDuration``;
- under the controller the backoff is a flat 10s: Argo doubles it per attempt, disruptions
  included, while a Job that Kueue suspends and resumes has no backoff at all.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainweave.adapters.argo.hera_models import models as m
from trainweave.codecs import policy_of_wire as policy_of_wire
from trainweave.codecs import policy_wire as policy_wire
from trainweave.model import ExitCodeRule, RetryPolicy
from trainweave.states import ArgoPhase

Json = dict[str, Any]
REQUEUE_ALLOWANCE = 10
# Uncounted attempts (disruptions, Ignore matches) Argo allows a pod slot beyond the budget when
# the controller judges: Argo gives up on a slot only after this many, never before the
# controller's own verdict (at most budget + 1 counted failures). Each attempt adds nodes to the
# Workflow's status, which must stay one API object: the bound keeps it finite.
DISRUPTION_ALLOWANCE = 100
# inferFailedReason's message, ``{codes}`` a regexp of exit codes; brackets, not backslashes, so
# the same text is a Go regexp (expr-lang ``matches``) and a Python one (integrations.views.read.argo_nodes).
EXIT_CODE_MESSAGE = "^[^:]+: [^(]*[(]exit code ({codes})[)]"


def exit_code_in(codes: str, container: str | None = None) -> str:
    """expr-lang test: the last attempt's failed container (``container`` if named: a DNS
    label, no regexp metacharacters) exited with one of ``codes`` (regexp)."""
    pattern = EXIT_CODE_MESSAGE.format(codes=codes)
    if container is not None:
        pattern = pattern.replace("[^:]+", container, 1)
    return f"lastRetry.message matches '{pattern}'"


# A disrupted pod: Argo marks a vanished pod (or one that failed before main started) Error; a pod
# Kueue preempts gets SIGTERM, and Argo only sees exit code 143 (docs/engines.md, Preemption).
_DISRUPTED = f"lastRetry.status == 'Error' || {exit_code_in('143')}"


def retry_strategy(policy: RetryPolicy, controller: bool = False) -> m.RetryStrategy:
    """The Argo retryStrategy of one (non-daemon) pod task; ``controller``: the trainweave
    controller runs the Workflow and judges every failed attempt (no expression)."""
    judged = policy.judged or controller
    expression = None if judged else retry_expression(policy)
    allowance = DISRUPTION_ALLOWANCE if controller else REQUEUE_ALLOWANCE
    backoff = m.Backoff(
        duration="10s",
        # Argo's exponent counts every attempt, disruptions too (operator.go processNodeRetries),
        # so under the controller the wait stays 10 s (a fifth preemption waited 160 s, and Kueue
        # may re-admit the kept Workload before Argo brings the pods back)
        factor=None if controller else m.IntOrString(2),
        cap=None if controller else "6m",
        max_duration=f"{policy.deadline_seconds}s" if policy.deadline_seconds else None,
    )
    return m.RetryStrategy(
        limit=m.IntOrString(policy.budget + allowance),
        retry_policy="Always",
        expression=expression,
        backoff=backoff,
    )


def retry_expression(policy: RetryPolicy) -> str:
    """The expr-lang condition under which a failed pod is tried again."""
    count = f"asInt(retries) < {policy.budget}"
    expr = count
    for rule in reversed(policy.rules):
        expr = f"({_condition(rule)}) ? {_outcome(rule.action, count)} : ({expr})"
    if not any(rule.disruption for rule in policy.rules):
        expr = f"({_DISRUPTED}) || ({expr})"
    return expr


class Disrupted(enum.StrEnum):
    """What stopped a failed attempt, as the controller saw it on the pod (or on a gang peer it
    failed after: ``integrations.views.read.disruption``)."""

    NO = ""  # nothing: the attempt is judged by its exit codes
    # Kueue stopped the pod group (``TerminationTarget``): a Job Kueue suspends has its pods
    # deleted without being counted or matched (k8s.io/kubernetes pkg/controller/job/
    # job_controller.go deleteJobPods removes the tracking finalizer first)
    STOPPED = "stopped"
    # ``DisruptionTarget`` (eviction, drain, taint, scheduler preemption, pod GC, kubelet): a
    # DisruptionTarget rule decides, else it is not counted
    DISRUPTED = "disrupted"


@dataclass(frozen=True)
class Judgement:
    """What a Job's podFailurePolicy does with one failed pod attempt: ``action`` is
    ``FailJob``, ``Ignore`` or ``Count``; ``rule`` the matching rule's index (None: no rule
    matched, or a disruption retried uncounted); ``container``/``exit_code`` what matched."""

    action: str
    rule: int | None = None
    container: str = ""
    exit_code: int | None = None


def judge(
    policy: RetryPolicy,
    phase: str,
    exits: Sequence[tuple[str, int]],
    disruption: Disrupted = Disrupted.NO,
) -> Judgement:
    """The decision ``retry_expression`` makes, from every container's exit code (``exits``:
    ``(container, code)`` of the attempt's terminated containers, as the pod status lists
    them), as k8s.io/kubernetes pkg/controller/job/pod_failure_policy.go matches rules.

    Argo stops a containerSet pod's other containers once one fails (SIGTERM): their 143 is
    Argo's, not the workload's, so it is ignored next to another failure. A disrupted attempt
    (node ``Error``, or only 143s) is retried uncounted unless a rule names disruption.
    ``disruption`` (seen by the controller on the pods) goes first: ``STOPPED`` is never
    counted nor matched; ``DISRUPTED`` matches only a DisruptionTarget rule, no exit-code rule.
    """
    if disruption == Disrupted.STOPPED:
        return Judgement("Ignore")
    failed = [(c, code) for c, code in exits if code != 0]
    disrupted = phase == ArgoPhase.ERROR or (
        bool(failed) and all(code == 143 for _, code in failed)
    )
    if disruption == Disrupted.DISRUPTED:
        disrupted, failed = True, []
    if any(code != 143 for _, code in failed):
        failed = [(c, code) for c, code in failed if code != 143]
    if disrupted and not any(rule.disruption for rule in policy.rules):
        return Judgement("Ignore")
    for i, rule in enumerate(policy.rules):
        if rule.disruption:
            if disrupted:
                return Judgement(rule.action, i)
            continue
        for container, code in failed:
            if rule.container in (None, container) and (code in rule.values) == (
                rule.operator == "In"
            ):
                return Judgement(rule.action, i, container, code)
    return Judgement("Count")


def counts(
    policy: RetryPolicy,
    phase: str,
    exits: Sequence[tuple[str, int]],
    disruption: Disrupted = Disrupted.NO,
) -> bool:
    """Whether one failed pod attempt counts against the Job's backoffLimit."""
    return judge(policy, phase, exits, disruption).action != "Ignore"


def _condition(rule: ExitCodeRule) -> str:
    if rule.disruption:
        return _DISRUPTED
    test = exit_code_in("|".join(str(v) for v in rule.values), rule.container)
    if rule.operator == "In":
        return test
    return f"{exit_code_in('[0-9]+', rule.container)} && not ({test})"


def _outcome(action: str, count: str) -> str:
    return {"FailJob": "false", "Ignore": "true"}.get(action, count)
