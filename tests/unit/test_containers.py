"""Step pods of several containers: kept by name, charged whole, judged as a Job judges them.

A Job's pod may run several containers; its podFailurePolicy matches every terminated
container's exit code (``onExitCodes.containerName`` narrows it to one). Argo's node message
names one container only, so for such pods the controller judges each failed attempt from
Argo's Container child nodes (``retry.judge``) and stops the step as the Job controller
would: ``PodFailurePolicy`` on a FailJob match, ``BackoffLimitExceeded`` past the budget.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import RuntimeBuilder, make_runtime, make_trainjob
from tests.unit.cluster_objects import Pod, StepState, trainjob, workflow
from trainweave import labels as L
from trainweave.adapters.argo import retry
from trainweave.adapters.argo import workflow as argo
from trainweave.adapters.kueue import podsets
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.views.decide import reconcile, verdict
from trainweave.integrations.views.decide.rollup import rollup
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed
from trainweave.model import ExitCodeRule, RetryPolicy

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
UPLOADER = {"name": "uploader", "image": "uploader:1", "resources": {"requests": {"cpu": "1"}}}
FAIL_ON_UPLOADER_42 = {
    "rules": [
        {
            "action": "FailJob",
            "onExitCodes": {"containerName": "uploader", "operator": "In", "values": [42]},
        }
    ]
}


def two_container_runtime(**job_spec: Any) -> RuntimeBuilder:
    rt = make_runtime()
    rt.container("node")["resources"] = {"requests": {"cpu": "4"}}
    rt.job_spec("node")["template"]["spec"]["containers"].append(dict(UPLOADER))
    rt.job_spec("node").update(job_spec)
    rt.job_spec("node")["template"]["spec"]["restartPolicy"] = "Never"
    return rt


def rendered(rt: RuntimeBuilder, nodes: int = 1) -> Json:
    tj = make_trainjob(trainer={"numNodes": nodes})
    return argo.workflow(to_pipeline(parse_trainjob(tj), parse_runtime(rt.build())))


def template(wf: Json, name: str) -> Json:
    tpl: Json
    (tpl,) = [t for t in wf["spec"]["templates"] if t["name"] == name]
    return tpl


def test_containers_are_kept_by_name_in_runtime_order() -> None:
    tpl = template(rendered(two_container_runtime()), "node")
    assert [c["name"] for c in tpl["containerSet"]["containers"]] == ["node", "uploader"]


def test_kueue_charges_every_container_of_the_pod() -> None:
    rt = two_container_runtime()
    pipeline = to_pipeline(parse_trainjob(make_trainjob()), parse_runtime(rt.build()))
    (role,) = podsets.pod_roles(pipeline.step("node"))
    assert role.requests()["cpu"] == "5"


def test_argo_retries_up_to_the_limit_and_the_controller_judges() -> None:
    wf = rendered(two_container_runtime(backoffLimit=1, podFailurePolicy=FAIL_ON_UPLOADER_42))
    strategy = template(wf, "node")["retryStrategy"]
    assert "expression" not in strategy
    assert strategy["limit"] == 1 + retry.REQUEUE_ALLOWANCE
    wire = json.loads(wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION])
    assert wire == {
        "node": {
            "node": {
                "backoffLimit": 1,
                "rules": [["FailJob", "In", [42], False, "uploader"]],
                "shared": False,
                "judged": True,
                "perIndex": False,
            }
        }
    }


def test_a_one_container_pod_stays_with_argo() -> None:
    rt = make_runtime()
    rt.job_spec("node")["backoffLimit"] = 1
    wf = rendered(rt)
    assert L.BACKOFF_LIMITS_ANNOTATION not in wf["metadata"]["annotations"]
    assert "expression" in template(wf, "node")["retryStrategy"]


def test_an_argo_daemon_must_be_one_container() -> None:
    rt = make_runtime(ml_policy={"numNodes": 1, "torch": {}})
    launcher = json.loads(json.dumps(rt.job("node")))
    launcher["name"] = "launcher"
    launcher["template"]["metadata"]["labels"] = {}
    rt.jobs.append(launcher)
    rt.job_spec("node")["template"]["spec"]["containers"].append(dict(UPLOADER))
    rt.extra_spec = {"successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]}}
    rt.job("launcher")["dependsOn"] = [{"name": "node", "status": "Ready"}]
    with pytest.raises(InputErrors) as err:
        rendered(rt)
    assert [(e.path, e.message) for e in err.value.errors] == [
        (
            "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers",
            "must hold exactly one container in a job that keeps running while the"
            " successPolicy target ends (an Argo daemon: Argo v4.0.7 runs it as one container)",
        )
    ]


POLICY = RetryPolicy(
    budget=1,
    rules=(
        ExitCodeRule("FailJob", "In", (42,), container="uploader"),
        ExitCodeRule("Ignore", "In", (3,)),
    ),
    judged=True,
)


@pytest.mark.parametrize(
    ("phase", "exits", "want"),
    [
        pytest.param(
            "Failed", [("node", 1), ("uploader", 42)], ("FailJob", 0, "uploader", 42),
            id="failjob-on-the-named-container-not-the-first-failed",
        ),
        pytest.param(
            "Failed", [("node", 42), ("uploader", 0)], ("Count", None, "", None),
            id="same-code-other-container-counts",
        ),
        pytest.param(
            "Failed", [("node", 143), ("uploader", 3)], ("Ignore", 1, "uploader", 3),
            id="argo-killed-sibling-143-is-not-the-failure",
        ),
        pytest.param(
            "Failed", [("node", 143), ("uploader", 143)], ("Ignore", None, "", None),
            id="all-sigterm-is-a-disruption",
        ),
        pytest.param(
            "Error", [], ("Ignore", None, "", None), id="pod-gone-is-a-disruption",
        ),
        pytest.param(
            "Failed", [("node", 0), ("fetch", 42)], ("Count", None, "", None),
            id="exit-0-never-matches",
        ),
    ],
)  # fmt: skip
def test_judge_matches_every_container_as_a_job_does(
    phase: str, exits: list[tuple[str, int]], want: tuple[str, int | None, str, int | None]
) -> None:
    got = retry.judge(POLICY, phase, exits)
    assert (got.action, got.rule, got.container, got.exit_code) == want
    assert retry.policy_of_wire(retry.policy_wire(POLICY)) == POLICY


def test_a_sibling_argo_stopped_does_not_match_a_143_rule() -> None:
    """Argo SIGTERMs the other containers once one fails; a Job's pod would not have."""
    policy = RetryPolicy(budget=1, rules=(ExitCodeRule("FailJob", "In", (143,)),), judged=True)
    assert retry.judge(policy, "Failed", [("node", 143), ("uploader", 3)]).action == "Count"
    assert retry.judge(policy, "Failed", [("node", 143), ("uploader", 143)]).action == "Ignore"


def running(pods: list[Pod], wire: Json, **kwargs: Any) -> Json:
    wf = workflow({"node": StepState("Running", pods, role="trainer", queue="gpu")}, **kwargs)
    wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = json.dumps(
        {"node": {"node": wire}}
    )
    return wf


def stops(wf: Json) -> list[str]:
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    plan = reconcile.actions(Observed(tj, (wf,)), NOW)
    return [
        body["metadata"]["annotations"][L.STOPPED_FOR]
        for body in (r.body for r in plan.requests)
        if body is not None and body.get("spec", {}).get("shutdown")
    ]


JUDGED = retry.policy_wire(POLICY)
# Argo's pod node message names the first failed container in name order: ``node``.
NODE_FIRST = "node: Error (exit code 1)"


def test_failjob_on_a_second_container_stops_the_step_at_once() -> None:
    pods = [Pod("node-0-0", "Failed", message=NODE_FIRST,
                containers=(("node", 1), ("uploader", 42)))]  # fmt: skip
    assert stops(running(pods, JUDGED)) == ["job-failed/node"]


def test_the_step_fails_with_the_job_controllers_pod_failure_policy_reason() -> None:
    pods = [Pod("node-0-0", "Failed", message=NODE_FIRST,
                containers=(("node", 1), ("uploader", 42)))]  # fmt: skip
    wf = running(pods, JUDGED, phase="Failed", shutdown="Stop", stopped_for="job-failed/node")
    status = rollup(Observed(trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"}), (wf,)), NOW)
    (failed,) = [c for c in status.conditions if c["type"] == "Failed"]
    assert failed["message"] == (
        "jobset failed due to one or more job failures (first failed job: ft-node-0):"
        " step 'node' failed: job 'node': PodFailurePolicy: Container uploader for pod node-0-0"
        " failed with exit code 42 matching FailJob rule at index 0"
    )


@pytest.mark.parametrize(
    ("attempts", "stopped"),
    [
        pytest.param(1, [], id="one-counted-failure-within-1"),
        pytest.param(2, ["job-failed/node"], id="second-counted-failure"),
    ],
)
def test_a_one_pod_budget_is_counted_per_pod(attempts: int, stopped: list[str]) -> None:
    pods = [
        Pod("node-0-0", "Failed", attempt=i, message=NODE_FIRST,
            containers=(("node", 1), ("uploader", 0)))
        for i in range(attempts)
    ]  # fmt: skip
    assert stops(running(pods, JUDGED)) == stopped


def test_ignored_failures_do_not_spend_the_budget() -> None:
    pods = [
        Pod("node-0-0", "Failed", attempt=i, message="node: Error (exit code 143)",
            containers=(("node", 143), ("uploader", 3)))
        for i in range(5)
    ]  # fmt: skip
    assert stops(running(pods, JUDGED)) == []


def test_a_spent_per_index_budget_fails_with_failed_indexes() -> None:
    wire = retry.policy_wire(RetryPolicy(budget=0, judged=True, per_index=True))
    pods = [Pod("node-0-0", "Failed", message=NODE_FIRST, containers=(("node", 1),))]
    wf = running(pods, wire, phase="Failed", shutdown="Stop", stopped_for="job-failed/node")
    assert verdict.failure(view(wf)) == (
        "node",
        "step 'node' failed: job 'node': FailedIndexes: Job has failed indexes",
    )
