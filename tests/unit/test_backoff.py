"""A Job's backoffLimit shared by all pods of a step: rendered, counted, enforced.

Argo retries each pod on its own, so the controller keeps the Job's shared budget: the
Workflow carries it (``trainweave.io/backoff-limits``), ``retry.counts`` decides which failed
attempts count (as the retry expression does), and the reconcile stops the Workflow on the
(backoffLimit + 1)-th counted failure; the TrainJob then fails with the Job controller's
``BackoffLimitExceeded``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import make_runtime, make_trainjob
from tests.unit.cluster_objects import Pod, StepState, trainjob, workflow
from trainweave import labels as L
from trainweave.adapters.argo import retry
from trainweave.adapters.argo import workflow as argo
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.decide.rollup import rollup
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed
from trainweave.model import ExitCodeRule, RetryPolicy

NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
Json = dict[str, Any]


def wire(
    limit: int, *, shared: bool = True, judged: bool = False, rules: list[Any] | None = None
) -> Json:
    """One job's entry of the ``trainweave.io/backoff-limits`` annotation."""
    return {
        "backoffLimit": limit,
        "rules": rules or [],
        "shared": shared,
        "judged": judged,
        "perIndex": False,
    }


SHARED = {"node": {"node": wire(2)}}


def rendered(backoff: dict[str, Any], nodes: int) -> Json:
    rt = make_runtime()
    rt.job_spec("node").update(backoff)
    tj = make_trainjob(trainer={"numNodes": nodes})
    return argo.workflow(to_pipeline(parse_trainjob(tj), parse_runtime(rt.build())))


@pytest.mark.parametrize(
    ("backoff", "nodes", "want"),
    [
        ({"backoffLimit": 2}, 2, {"node": {"node": wire(2)}}),
        ({}, 2, {"node": {"node": wire(6)}}),
        ({"backoffLimit": 2}, 1, None),
        ({"backoffLimitPerIndex": 1, "completionMode": "Indexed"}, 2, None),
    ],
    ids=["shared-2", "unset-is-6-shared", "one-pod-argo-keeps-it", "per-index"],
)
def test_shared_budget_is_on_the_workflow(
    backoff: dict[str, Any], nodes: int, want: Json | None
) -> None:
    ann = rendered(backoff, nodes)["metadata"]["annotations"]
    got = ann.get(L.BACKOFF_LIMITS_ANNOTATION)
    assert (json.loads(got) if got else None) == want


def test_each_pod_may_retry_up_to_the_whole_shared_budget() -> None:
    wf = rendered({"backoffLimit": 2}, 2)
    (pod_tpl,) = [t for t in wf["spec"]["templates"] if t["name"] == "node"]
    assert "asInt(retries) < 2" in pod_tpl["retryStrategy"]["expression"]


FAIL_JOB_42 = (ExitCodeRule("FailJob", "In", (42,)),)
IGNORE_3 = (ExitCodeRule("Ignore", "In", (3,)),)
COUNT_DISRUPTION = (ExitCodeRule("Count", disruption=True),)


@pytest.mark.parametrize(
    ("rules", "phase", "code", "counted"),
    [
        ((), "Failed", 1, True),
        ((), "Failed", 143, False),
        ((), "Error", None, False),
        ((), "Failed", None, True),
        (IGNORE_3, "Failed", 3, False),
        (IGNORE_3, "Failed", 4, True),
        (FAIL_JOB_42, "Failed", 42, True),
        (COUNT_DISRUPTION, "Failed", 143, True),
        (COUNT_DISRUPTION, "Error", None, True),
        ((ExitCodeRule("Ignore", "NotIn", (1,)),), "Failed", 2, False),
        ((ExitCodeRule("Ignore", "NotIn", (1,)),), "Failed", 1, True),
    ],
)
def test_which_failures_count(
    rules: tuple[ExitCodeRule, ...], phase: str, code: int | None, counted: bool
) -> None:
    """As the retry expression: disruptions uncounted unless a DisruptionTarget rule says so,
    Ignore rules uncounted, every other failure counted."""
    policy = RetryPolicy(budget=2, rules=rules, shared=True)
    assert retry.counts(policy, phase, [] if code is None else [("node", code)]) is counted
    assert retry.policy_of_wire(retry.policy_wire(policy)) == policy


def running(pods: list[Pod], **kwargs: Any) -> Json:
    wf = workflow({"node": StepState("Running", pods, role="trainer", queue="gpu")}, **kwargs)
    wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = json.dumps(SHARED)
    return wf


def started() -> Json:
    return trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})


@pytest.mark.parametrize(
    ("pods", "stopped"),
    [
        (
            [Pod("node-0-0", "Failed", code=1), Pod("node-0-1", "Failed", code=1),
             Pod("node-0-0", "Running", attempt=1)],
            [],
        ),
        (
            [Pod("node-0-0", "Failed", code=1), Pod("node-0-1", "Failed", code=1),
             Pod("node-0-0", "Failed", code=1, attempt=1), Pod("node-0-1", "Running", attempt=1)],
            ["job-failed/node"],
        ),
        (
            [Pod("node-0-0", "Failed", code=143), Pod("node-0-1", "Error"),
             Pod("node-0-0", "Failed", code=1, attempt=1), Pod("node-0-1", "Running", attempt=1)],
            [],
        ),
    ],
    ids=["two-failures-within-2", "third-failure-across-pods", "disruptions-do-not-count"],
)  # fmt: skip
def test_the_third_counted_failure_of_the_step_stops_it(
    pods: list[Pod], stopped: list[str]
) -> None:
    plan = reconcile.actions(Observed(started(), (running(pods),)), NOW)
    stops = [
        body["metadata"]["annotations"][L.STOPPED_FOR]
        for body in (r.body for r in plan.requests)
        if body is not None and body.get("spec", {}).get("shutdown")
    ]
    assert stops == stopped


def test_stopped_step_fails_the_trainjob_with_backoff_limit_exceeded() -> None:
    pods = [Pod("node-0-0", "Failed", code=1), Pod("node-0-1", "Failed", code=1),
            Pod("node-0-0", "Failed", code=1, attempt=1), Pod("node-0-1", "Failed", code=143, attempt=1)]  # fmt: skip
    wf = running(pods, phase="Failed", shutdown="Stop", stopped_for="job-failed/node")
    assert view(wf).backoff_job == "node"
    assert (
        view(
            {
                **wf,
                "metadata": {
                    **wf["metadata"],
                    "annotations": {
                        **wf["metadata"]["annotations"],
                        L.STOPPED_FOR: "backoff-limit/node",
                    },
                },
            }
        ).backoff_job
        == "node"
    )
    status = rollup(Observed(started(), (wf,)), NOW)
    failed = [c for c in status.conditions if c["type"] == "Failed"]
    assert [(c["status"], c["reason"]) for c in failed] == [("True", "FailedJobs")]
    assert failed[0]["message"] == (
        "jobset failed due to one or more job failures (first failed job: ft-node-0):"
        " step 'node' failed: job 'node': BackoffLimitExceeded:"
        " Job has reached the specified backoff limit"
    )


def test_stopping_workflow_is_not_yet_a_failure() -> None:
    pods = [Pod("node-0-0", "Failed", code=1), Pod("node-0-1", "Running")]
    wf = running(pods, shutdown="Stop", stopped_for="job-failed/node")
    status = rollup(Observed(started(), (wf,)), NOW)
    assert not [c for c in status.conditions if c["type"] == "Failed"]


def _succeeded_after(pods: list[Pod], policy: RetryPolicy) -> Json:
    """A Workflow Argo finished Succeeded, its node step's attempts ``pods``."""
    wf = workflow(
        {"node": StepState("Succeeded", pods, role="trainer", queue="gpu")}, phase="Succeeded"
    )
    limits = {"node": {"node": retry.policy_wire(policy)}}
    wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = json.dumps(limits)
    return wf


@pytest.mark.parametrize(
    ("policy", "pods", "reason"),
    [
        (
            RetryPolicy(budget=2, rules=FAIL_JOB_42, shared=True),
            [Pod("node-0-0", "Failed", code=42), Pod("node-0-0", "Succeeded", attempt=1)],
            "PodFailurePolicy: Container main for pod node-0-0 failed with exit code 42"
            " matching FailJob rule at index 0",
        ),
        (
            RetryPolicy(budget=1, shared=True),
            [Pod("node-0-0", "Failed", code=1), Pod("node-0-0", "Failed", code=1, attempt=1),
             Pod("node-0-0", "Succeeded", attempt=2)],
            "BackoffLimitExceeded: Job has reached the specified backoff limit",
        ),
    ],
    ids=["failjob-then-success", "budget-spent-then-success"],
)  # fmt: skip
def test_a_retry_argo_ran_after_the_verdict_does_not_make_the_step_succeed(
    policy: RetryPolicy, pods: list[Pod], reason: str
) -> None:
    """The controller judges each failed attempt and stops the step; Argo retries after a flat
    10 s backoff. A failover (17 s) or a slow controller lets Argo run the next attempt first
    (make chaos: `permanent` pipelines ended Complete). As the Job controller, whose Failed
    condition is final, the TrainJob fails with the verdict, and a pipeline with restarts left
    starts its next attempt."""
    wf = _succeeded_after(pods, policy)
    status = rollup(Observed(started(), (wf,)), NOW)
    types = {c["type"]: c for c in status.conditions if c["status"] == "True"}
    assert "Complete" not in types
    assert types["Failed"]["reason"] == "FailedJobs"
    assert types["Failed"]["message"] == (
        "jobset failed due to one or more job failures (first failed job: ft-node-0):"
        f" step 'node' failed: job 'node': {reason}"
    )
    again = workflow(
        {"node": StepState("Succeeded", pods, role="trainer", queue="gpu")},
        phase="Succeeded",
        max_restarts=1,
    )
    again["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = wf["metadata"]["annotations"][
        L.BACKOFF_LIMITS_ANNOTATION
    ]
    plan = reconcile.actions(Observed(started(), (again,)), NOW)
    assert plan.start is not None and plan.start.attempt == 1


def test_a_success_within_the_budget_is_a_success() -> None:
    pods = [Pod("node-0-0", "Failed", code=1), Pod("node-0-0", "Succeeded", attempt=1)]
    wf = _succeeded_after(pods, RetryPolicy(budget=2, rules=FAIL_JOB_42, shared=True))
    status = rollup(Observed(started(), (wf,)), NOW)
    assert [c["reason"] for c in status.conditions if c["status"] == "True"] == ["AllJobsCompleted"]
