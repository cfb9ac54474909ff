"""batch/v1 JobSpec (inside a runtime replicatedJob) -> pod count and RetryPolicy.

Pure. Each Job field has an exact meaning in trainweave's model or is rejected
by name (docs/design.md, D4):

- ``parallelism``/``completions``: a step is a gang, so both must be equal
  (pods = completions); ``completionMode`` either way (indexes are rendered).
- ``backoffLimitPerIndex``: exact as a per-pod Argo retry limit.
- ``backoffLimit``: exact for a one-pod Job. For a multi-pod Job it is a budget
  shared by all pods, which Argo cannot keep (it retries each pod on its own), so
  the controller keeps it (``RetryPolicy.shared``; docs/design.md, D12); unset
  means Kubernetes' default 6.
- ``podFailurePolicy``: exit-code rules (``containerName`` any container or init container
  of the pod) and ``DisruptionTarget`` conditions -> the Argo retry expression, rule order
  kept; for a pod of several containers the controller judges them (``RetryPolicy.judged``).
- ``activeDeadlineSeconds``: the retry backoff's ``maxDuration`` (spans attempts).
- ``podReplacementPolicy: Failed`` is what Argo does; ``TerminatingOrFailed``,
  ``maxFailedIndexes``, ``successPolicy`` (non-trivial), ``suspend: true``,
  ``selector``/``manualSelector``, ``ttlSecondsAfterFinished``, ``managedBy``
  are rejected.
"""

from __future__ import annotations

import enum
from typing import Any

from trainweave.errors import InputError
from trainweave.labels import Reason
from trainweave.model import ExitCodeRule, RetryPolicy

DEFAULT_BACKOFF_LIMIT = 6  # batch/v1 Job default


class PodReplacementPolicy(enum.StrEnum):
    """batch/v1 Job ``podReplacementPolicy``."""

    TERMINATING_OR_FAILED = "TerminatingOrFailed"
    FAILED = "Failed"


_FAILED = PodReplacementPolicy.FAILED
_ALLOWED = {
    "template",
    "parallelism",
    "completions",
    "completionMode",
    "backoffLimit",
    "backoffLimitPerIndex",
    "podFailurePolicy",
    "activeDeadlineSeconds",
    "podReplacementPolicy",
    "successPolicy",
    "suspend",
}
_REJECTED = {
    "maxFailedIndexes": "Argo has no cross-pod failed-index budget",
    "selector": "pods are selected by trainweave's own labels",
    "manualSelector": "pods are selected by trainweave's own labels",
    "ttlSecondsAfterFinished": "Job objects are not created; use the Workflow's ttlStrategy",
    "managedBy": "the step is managed by Argo and Kueue, not by a Job controller",
}


def pods_per_replica(spec: dict[str, Any], path: str) -> tuple[int, list[InputError]]:
    """Pods one Job of this spec runs at once (its completions), or the errors."""
    parallelism = spec.get("parallelism")
    completions = spec.get("completions")
    if parallelism is None and completions is None:
        return 1, []
    if completions is None:
        completions = parallelism
    if parallelism is None or parallelism != completions:
        return completions or 1, [
            _err(
                f"{path}.parallelism",
                f"must equal completions ({completions}): a step starts all its pods as one"
                " gang, so pods cannot run in waves",
            )
        ]
    if completions < 1:
        return 1, [_err(f"{path}.completions", "must be at least 1")]
    return int(completions), []


def retry_policy(
    spec: dict[str, Any], pods: int, containers: list[str], init_containers: list[str], path: str
) -> tuple[RetryPolicy, list[InputError]]:
    """The RetryPolicy of a Job spec with ``pods`` pods (container and init container names
    given), or errors naming the field."""
    errors = [
        _err(f"{path}.{key}", f"is not supported: {why}")
        for key, why in _REJECTED.items()
        if key in spec
    ]
    errors += [
        _err(f"{path}.{key}", "unknown or unsupported batch/v1 JobSpec field")
        for key in spec
        if key not in _ALLOWED and key not in _REJECTED
    ]
    if spec.get("suspend"):
        errors.append(_err(f"{path}.suspend", "must not be true: suspend the TrainJob instead"))
    if spec.get("podReplacementPolicy", _FAILED) != _FAILED:
        errors.append(
            _err(
                f"{path}.podReplacementPolicy",
                "only Failed is supported: Argo replaces a pod once it has failed",
            )
        )
    errors += _success_policy(spec.get("successPolicy"), pods, f"{path}.successPolicy")
    budget, budget_errors = _budget(spec, path)
    names = containers + init_containers
    rules, rule_errors = _rules(spec.get("podFailurePolicy"), names, path)
    deadline = spec.get("activeDeadlineSeconds")
    per_index = spec.get("backoffLimitPerIndex") is not None
    policy = RetryPolicy(
        budget,
        tuple(rules),
        deadline,
        shared=pods > 1 and not per_index,
        judged=len(containers) > 1,
        per_index=per_index,
    )
    return policy, errors + budget_errors + rule_errors


def _budget(spec: dict[str, Any], path: str) -> tuple[int, list[InputError]]:
    """``backoffLimitPerIndex`` (per pod), else ``backoffLimit`` (default 6, as a Job's);
    for a multi-pod Job the latter is shared (``RetryPolicy.shared``)."""
    per_index = spec.get("backoffLimitPerIndex")
    limit = spec.get("backoffLimit")
    for key, value in (("backoffLimitPerIndex", per_index), ("backoffLimit", limit)):
        if value is not None and (problem := budget_error(value)):
            return 0, [InputError(f"{path}.{key}", problem, reason=Reason.INVALID_RUNTIME)]
    if per_index is not None:
        if spec.get("completionMode") != "Indexed":
            return 0, [_err(f"{path}.backoffLimitPerIndex", "requires completionMode: Indexed")]
        return int(per_index), []
    return (DEFAULT_BACKOFF_LIMIT if limit is None else int(limit)), []


def budget_error(budget: object) -> str:
    """Why ``budget`` is no retry budget, or "": batch/v1 takes ``backoffLimit`` and
    ``backoffLimitPerIndex`` >= 0 (k8s.io/kubernetes pkg/apis/batch/validation/validation.go,
    ``ValidateNonnegativeField``)."""
    if isinstance(budget, bool) or not isinstance(budget, int):
        return f"{budget!r} must be an integer"
    return f"{budget} must be greater than or equal to 0" if budget < 0 else ""


def _rules(
    policy: dict[str, Any] | None, containers: list[str], path: str
) -> tuple[list[ExitCodeRule], list[InputError]]:
    if not policy:
        return [], []
    rules: list[ExitCodeRule] = []
    errors: list[InputError] = []
    for i, rule in enumerate(policy.get("rules") or []):
        where = f"{path}.podFailurePolicy.rules[{i}]"
        action = rule.get("action")
        if action not in ("FailJob", "Ignore", "Count", "FailIndex"):
            errors.append(_err(f"{where}.action", f"unknown action {action!r}"))
            continue
        # FailIndex fails only that pod's index; a failed index fails the step, so per
        # pod it is FailJob (the other pods run to their end either way under Argo).
        action = "FailJob" if action == "FailIndex" else action
        if "onExitCodes" in rule:
            codes = rule["onExitCodes"]
            container = codes.get("containerName")
            if container is not None and container not in containers:
                errors.append(
                    InputError(
                        f"{where}.onExitCodes.containerName",
                        "must name a container or init container of the pod"
                        f" ({', '.join(containers)})",
                        reason=Reason.INVALID_RUNTIME,
                    )
                )
            operator = codes.get("operator")
            if operator not in ("In", "NotIn"):
                errors.append(_err(f"{where}.onExitCodes.operator", "must be In or NotIn"))
                continue
            values = tuple(int(v) for v in codes.get("values") or [])
            errors += exit_code_errors(values, operator, f"{where}.onExitCodes.values")
            rules.append(ExitCodeRule(action, operator, values, container=container))
        elif "onPodConditions" in rule:
            for j, cond in enumerate(rule["onPodConditions"]):
                if cond.get("type") != "DisruptionTarget" or cond.get("status", "True") != "True":
                    errors.append(
                        _err(
                            f"{where}.onPodConditions[{j}]",
                            "only DisruptionTarget=True is supported (a pod deleted by"
                            " preemption or eviction)",
                        )
                    )
            rules.append(ExitCodeRule(action, disruption=True))
        else:
            errors.append(_err(where, "needs onExitCodes or onPodConditions"))
    return rules, errors


def exit_code_errors(values: tuple[int, ...], operator: str, path: str) -> list[InputError]:
    """ValidateJobSpec's rules of ``onExitCodes.values`` (k8s.io/kubernetes v1.36.4
    pkg/apis/batch/validation/validation.go ``validatePodFailurePolicyRuleOnExitCodes``): 1 to
    255 values, none 0 with ``In``, each once, in order."""
    errors = []
    if not values or len(values) > 255:
        errors.append(
            _invalid(path, f"Invalid value: {list(values)}: 1 to 255 values are required")
        )
    for j, value in enumerate(values):
        if operator == "In" and value == 0:
            errors.append(
                _invalid(f"{path}[{j}]", "Invalid value: 0: must not be 0 for the In operator")
            )
        if value in values[:j]:
            errors.append(_invalid(f"{path}[{j}]", f"Duplicate value: {value}"))
    if list(values) != sorted(values):
        errors.append(_invalid(path, f"Invalid value: {list(values)}: must be ordered"))
    return errors


def _invalid(path: str, message: str) -> InputError:
    return InputError(path, message, reason=Reason.INVALID_RUNTIME)


def _success_policy(policy: dict[str, Any] | None, pods: int, path: str) -> list[InputError]:
    if not policy:
        return []
    everyone = f"0-{pods - 1}" if pods > 1 else "0"
    for rule in policy.get("rules") or []:
        count = rule.get("succeededCount")
        indexes = rule.get("succeededIndexes")
        if (count in (None, pods)) and (indexes in (None, everyone)) and (count or indexes):
            continue
        return [
            _err(
                path,
                "only a rule requiring every index is supported: Argo cannot end a step early"
                " and stop its other pods",
            )
        ]
    return []


def _err(path: str, message: str) -> InputError:
    return InputError(path, message, reason=Reason.UNSUPPORTED_FIELD)
