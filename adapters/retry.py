"""RetryPolicy (batch Job semantics) -> Argo ``retryStrategy``.

Pure. Argo (v4.0.7 ``workflow/controller/operator.go`` processNodeRetries)
retries a node while ``len(children) <= limit`` and, if an ``expression`` is
set, only while it is true; the expression sees strings ``retries`` (index of
the last attempt), ``lastRetry.exitCode``, ``lastRetry.status``,
``lastRetry.message``.

Exit codes are read from ``lastRetry.message``: step pods are containerSet
templates (the runtime's container names kept), and Argo fills
``outputs.exitCode`` (so ``lastRetry.exitCode``) only from a container named
``main`` (operator.go getExitCode; ``-1`` otherwise). A failed pod's node
message is ``<container>: <reason> (exit code N)[: <termination message>]``
(operator.go inferFailedReason), or the pod's own status message when it has
one (eviction), which names no exit code and so matches no exit-code rule,
as a Job's podFailurePolicy matches only terminated containers.

- podFailurePolicy rules become a ternary chain in rule order (first match
  wins): ``FailJob`` -> false, ``Ignore`` -> true, ``Count`` -> budget check;
- no rule matched -> ``Count``: ``asInt(retries) < budget``;
- a disrupted pod is retried without counting (unless a ``DisruptionTarget`` rule says
  otherwise), so a preempted step comes back, as a Kueue-suspended Job's pods never count: a node
  in ``Error`` (pod deleted, executor failure) or a main container that exited 143 (SIGTERM: Kueue
  preemption, eviction, drain); Argo reports nothing else about preemption (docs/engines.md);
- ``limit`` = budget + REQUEUE_ALLOWANCE, the most disruption retries a pod gets;
- backoff is the Job controller's: 10s doubling, capped at 6m; the Job's
  ``activeDeadlineSeconds`` becomes ``maxDuration`` (it spans all attempts).
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.hera_models import models as m
from trainweave.model import ExitCodeRule, RetryPolicy

Json = dict[str, Any]
REQUEUE_ALLOWANCE = 10
# inferFailedReason's message, ``{codes}`` a regexp of exit codes; brackets, not backslashes, so
# the same text is a Go regexp (expr-lang ``matches``) and a Python one (integrations.argo_view).
EXIT_CODE_MESSAGE = "^[^:]+: [^(]*[(]exit code ({codes})[)]"


def exit_code_in(codes: str) -> str:
    """expr-lang test: the last attempt's failed container exited with one of ``codes`` (regexp)."""
    return f"lastRetry.message matches '{EXIT_CODE_MESSAGE.format(codes=codes)}'"


# A disrupted pod: Argo marks a vanished pod (or one that failed before main started) Error; a pod
# Kueue preempts gets SIGTERM, and Argo only sees exit code 143 (docs/engines.md, Preemption).
_DISRUPTED = f"lastRetry.status == 'Error' || {exit_code_in('143')}"


def retry_strategy(policy: RetryPolicy) -> m.RetryStrategy:
    """The Argo retryStrategy of one (non-daemon) pod task."""
    expression = retry_expression(policy)
    backoff = m.Backoff(
        duration="10s",
        factor=m.IntOrString(2),
        cap="6m",
        max_duration=f"{policy.deadline_seconds}s" if policy.deadline_seconds else None,
    )
    return m.RetryStrategy(
        limit=m.IntOrString(policy.budget + REQUEUE_ALLOWANCE),
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


def counts(policy: RetryPolicy, phase: str, exit_code: int | None) -> bool:
    """Whether one failed pod attempt counts against the Job's backoffLimit: the same
    decision ``retry_expression`` makes, in Python (for a budget the controller keeps)."""
    disrupted = phase == "Error" or exit_code == 143
    for rule in policy.rules:
        if rule.disruption:
            hit = disrupted
        elif exit_code is None:
            hit = False
        else:
            hit = (exit_code in rule.values) == (rule.operator == "In")
        if hit:
            return rule.action != "Ignore"
    return not disrupted or any(rule.disruption for rule in policy.rules)


def policy_wire(policy: RetryPolicy) -> Json:
    """The budget and rules ``counts`` needs, as JSON (the Workflow annotation)."""
    return {
        "backoffLimit": policy.budget,
        "rules": [[r.action, r.operator, list(r.values), r.disruption] for r in policy.rules],
    }


def policy_of_wire(wire: Json) -> RetryPolicy:
    """``policy_wire``'s inverse (a shared budget)."""
    rules = tuple(
        ExitCodeRule(str(a), str(o), tuple(int(v) for v in vals), bool(d))
        for a, o, vals, d in wire.get("rules") or []
    )
    return RetryPolicy(int(wire.get("backoffLimit", 0)), rules, shared=True)


def _condition(rule: ExitCodeRule) -> str:
    if rule.disruption:
        return _DISRUPTED
    test = exit_code_in("|".join(str(v) for v in rule.values))
    if rule.operator == "In":
        return test
    return f"{exit_code_in('[0-9]+')} && not ({test})"


def _outcome(action: str, count: str) -> str:
    return {"FailJob": "false", "Ignore": "true"}.get(action, count)
