"""The values trainweave writes in its own annotations and labels and reads back: one typed
encode/decode pair per wire format. Pure.

Each ``decode_*`` reads every form a release of trainweave wrote, since a Workflow or Workload
created before an upgrade keeps its annotations while the new controller runs it; and it is
total: a value it cannot read (an object anyone who may patch it may rewrite, or a newer
writer's) is the same as an absent one, never an exception. The formats:

- ``trainweave.io/backoff-limits`` (Workflow; ``adapters.argo.workflow``): JSON ``{step: {job:
  {backoffLimit, rules, shared, judged, perIndex}}}``, each rule ``[action, operator, values,
  disruption, container]``. The first form (5960ddf) had only ``backoffLimit`` and four-item
  rules, and recorded shared budgets only: no ``shared`` reads as shared.
- ``trainweave.io/stopped-for`` (Workflow; ``integrations.views.decide.reconcile``): a ``StoppedFor``,
  or ``job-failed/<job>``; ``backoff-limit/<job>`` is the form before c11b3b1.
- ``trainweave.io/attempts`` (TrainJob), ``trainweave.io/attempt`` and ``trainweave.io/segment``
  (labels), ``trainweave.io/max-restarts`` (Workflow): a decimal integer.
- ``trainweave.io/kept-after`` (kept Workload; ``adapters.kueue.kept``) and Kueue's
  ``kueue.x-k8s.io/admission-gated-by``: names, comma-separated.
- ``trainweave.io/kept-for-seconds`` (kept Workload): a number of seconds.

The two records the controller folds over time keep their codecs beside their types:
``trainweave.io/quota`` (``integrations.views.read.quota.encode``/``decode``) and
``trainweave.io/disruptions`` (``integrations.views.read.disruption.encode``/``decode``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trainweave.labels import StoppedFor
from trainweave.model import ExitCodeRule, RetryPolicy

Json = dict[str, Any]
BackoffLimits = dict[str, dict[str, RetryPolicy]]  # step -> job -> the policy the controller keeps

# --- trainweave.io/backoff-limits --------------------------------------------------------------


def policy_wire(policy: RetryPolicy) -> Json:
    """One job's retry policy as the annotation holds it: the budget and rules ``retry.judge``
    needs (not ``deadline_seconds``, which Argo keeps)."""
    return {
        "backoffLimit": policy.budget,
        "rules": [
            [r.action, r.operator, list(r.values), r.disruption, r.container] for r in policy.rules
        ],
        "shared": policy.shared,
        "judged": policy.judged,
        "perIndex": policy.per_index,
    }


def policy_of_wire(wire: Json) -> RetryPolicy:
    """``policy_wire``'s inverse, also of the first form (four-item rules, no ``shared``: a
    shared budget). Raises ValueError, TypeError, IndexError, KeyError or OverflowError on a
    value that is no policy (``decode_backoff_limits`` drops those)."""
    rules = tuple(
        ExitCodeRule(
            str(rule[0]),
            str(rule[1]),
            tuple(int(v) for v in rule[2]),
            bool(rule[3]),
            str(rule[4]) if len(rule) > 4 and rule[4] is not None else None,
        )
        for rule in wire.get("rules") or []
    )
    return RetryPolicy(
        int(wire.get("backoffLimit", 0)),
        rules,
        shared=bool(wire.get("shared", True)),
        judged=bool(wire.get("judged", False)),
        per_index=bool(wire.get("perIndex", False)),
    )


def encode_backoff_limits(limits: Mapping[str, Mapping[str, RetryPolicy]]) -> str | None:
    """The annotation value: compact JSON of the steps with a policy (None: no annotation)."""
    wire = {
        step: {job: policy_wire(policy) for job, policy in jobs.items()}
        for step, jobs in limits.items()
        if jobs
    }
    return json.dumps(wire, separators=(",", ":")) if wire else None


def json_object(text: str | None) -> dict[str, Any]:
    """An annotation's JSON object; {} when absent, not JSON or not an object."""
    try:
        raw = json.loads(text) if text else {}
    except ValueError:
        return {}
    return raw if isinstance(raw, dict) else {}


def decode_backoff_limits(text: str | None) -> BackoffLimits:
    """The policies of an annotation value, every one that reads back (``policy_of_wire``);
    anything else is no policy."""
    raw = json_object(text)
    out: BackoffLimits = {}
    for step, jobs in raw.items():
        if not isinstance(jobs, dict):
            continue
        out[str(step)] = {
            str(job): policy
            for job, wire in jobs.items()
            if (policy := _policy_or_none(wire)) is not None
        }
    return out


def _policy_or_none(wire: object) -> RetryPolicy | None:
    if not isinstance(wire, dict):
        return None
    try:
        return policy_of_wire(wire)
    except (ValueError, TypeError, IndexError, KeyError, OverflowError):
        return None


# --- trainweave.io/stopped-for -----------------------------------------------------------------


@dataclass(frozen=True)
class Stop:
    """Why the controller stopped a Workflow. ``why`` None: a value this version does not know
    (still a stop); ``job``: the job it failed (``StoppedFor.JOB_FAILED``)."""

    why: StoppedFor | None
    job: str = ""

    @property
    def failed_job(self) -> str:
        """The job the controller failed ("" when it stopped the Workflow for another reason)."""
        return self.job if self.why is StoppedFor.JOB_FAILED else ""


def encode_stop(stop: Stop) -> str:
    """The annotation value: the ``StoppedFor``, or ``job-failed/<job>``."""
    if stop.why is None:
        raise ValueError("a stop of no known reason is not written")
    if stop.why in (StoppedFor.JOB_FAILED, StoppedFor.JOB_FAILED_OLD):
        return f"{StoppedFor.JOB_FAILED}/{stop.job}"
    return str(stop.why)


def decode_stop(text: str | None) -> Stop | None:
    """The Stop of an annotation value (None: absent or empty, the Workflow was not stopped by
    the controller); ``backoff-limit/<job>`` is a failed job too."""
    if not text:
        return None
    head, slash, job = text.partition("/")
    if slash and head in (StoppedFor.JOB_FAILED, StoppedFor.JOB_FAILED_OLD):
        return Stop(StoppedFor.JOB_FAILED, job)
    try:
        why = StoppedFor(text)
    except ValueError:
        return Stop(None)
    return Stop(None) if why in (StoppedFor.JOB_FAILED, StoppedFor.JOB_FAILED_OLD) else Stop(why)


# --- counts: trainweave.io/attempts, attempt, segment, max-restarts ---------------------------


def encode_int(value: int) -> str:
    """A decimal integer."""
    return str(value)


def decode_int(text: str | None, default: int = 0) -> int:
    """The integer of a value (``default`` when absent or not a decimal integer)."""
    try:
        return int(str(text)) if text is not None else default
    except ValueError:
        return default


# --- names: trainweave.io/kept-after, kueue.x-k8s.io/admission-gated-by -----------------------


def encode_names(names: Iterable[str]) -> str:
    """Names, comma-separated."""
    return ",".join(names)


def decode_names(text: str | None) -> list[str]:
    """The names of a comma-separated value, blanks around each dropped, empty ones skipped."""
    return [n.strip() for n in (text or "").split(",") if n.strip()]


# --- trainweave.io/kept-for-seconds ------------------------------------------------------------


def encode_seconds(seconds: int) -> str:
    """Whole seconds, decimal."""
    return str(seconds)


def decode_seconds(text: str | None) -> float | None:
    """The seconds of a value (None: absent or not a number)."""
    try:
        return float(text) if text else None
    except ValueError:
        return None
