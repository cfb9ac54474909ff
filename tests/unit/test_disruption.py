"""A disruption never costs a retry (issue 20, item 2): which failed attempts count.

The controller reads why a pod stopped from its conditions (``TerminationTarget``: Kueue stopped
the group; ``DisruptionTarget``: an eviction, a drain, a deletion), records it on the Workflow,
and excuses that pod and every gang peer that failed after it while it existed
(``integrations.views.read.disruption``); the rest is judged by the podFailurePolicy and budget.
Each row: the step's failed attempts, what they carried, and the budget consumed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.cluster_objects import Pod, StepState, pod, trainjob, workflow, workload
from trainweave import labels as L
from trainweave.adapters.argo import retry
from trainweave.adapters.argo import workflow as argo
from trainweave.adapters.argo.retry import Disrupted
from trainweave.adapters.options import Options
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.commands import status_cli
from trainweave.integrations.views.decide import reconcile, verdict
from trainweave.integrations.views.read import disruption, slim
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed
from trainweave.model import ExitCodeRule, RetryPolicy

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 30, tzinfo=UTC)
T = "2026-11-01T10:{:02d}:00Z"  # T.format(minute)
PREEMPTED = (disruption.TERMINATION_TARGET, "WorkloadEvictedDueToPreempted")
EVICTED = (disruption.DISRUPTION_TARGET, "EvictionByEvictionAPI")  # an eviction, a node drain
TAINTED = (disruption.DISRUPTION_TARGET, "DeletionByTaintManager")
GC = (disruption.DISRUPTION_TARGET, "DeletionByPodGC")
KUBELET = (disruption.DISRUPTION_TARGET, "TerminationByKubelet")
SCHEDULER = (disruption.DISRUPTION_TARGET, "PreemptionByScheduler")
# examples/real's trainer: backoffLimitPerIndex 2, FailJob on exit 2 or 3 of container node,
# Ignore DisruptionTarget
REAL = RetryPolicy(
    2,
    (
        ExitCodeRule("FailJob", "In", (2, 3), container="node"),
        ExitCodeRule("Ignore", disruption=True),
    ),
    per_index=True,
)
SHARED = RetryPolicy(2, shared=True)  # a 2-pod Job's backoffLimit 2
COUNT_DISRUPTIONS = RetryPolicy(2, (ExitCodeRule("Count", disruption=True),), shared=True)
PEER_LOST_FAILS = RetryPolicy(0, (ExitCodeRule("FailJob", "In", (4,)),), shared=True)


@dataclass(frozen=True)
class Try:
    """One failed attempt of pod ``slot``: exit code, Argo node start/finish (minutes past
    10:00), and the disruption condition its pod carried, set at minute ``at``."""

    slot: str
    attempt: int
    code: int | None
    started: int
    finished: int
    mark: tuple[str, str] | None = None
    at: int = 0
    phase: str = "Failed"


def scene(tries: list[Try], policy: RetryPolicy) -> tuple[Json, list[Json]]:
    """The step ``node``'s Workflow (its retry policy on it, as the controller renders it) and
    the pods still there, with their conditions."""
    pods_ = [
        Pod(t.slot, t.phase, code=t.code, attempt=t.attempt,
            message="" if t.code is None else f"node: Error (exit code {t.code})")
        for t in tries
    ]  # fmt: skip
    wf = workflow({"node": StepState("Running", pods_, role="trainer", queue="gpu")})
    limits = {"node": {"node": retry.policy_wire(policy)}}
    wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = json.dumps(limits)
    by_name = {n["name"]: n for n in wf["status"]["nodes"].values()}
    out = []
    for t in tries:
        node = by_name[f"ft.node.{t.slot}({t.attempt})"]
        node.update(startedAt=T.format(t.started), finishedAt=T.format(t.finished))
        p = pod("ft", "node", t.slot, t.phase, attempt=t.attempt)
        if t.mark is not None:
            kind, reason = t.mark
            cond = {"type": kind, "status": "True", "reason": reason}
            p["status"]["conditions"] = [cond | {"lastTransitionTime": T.format(t.at)}]
        out.append(p)
    return wf, out


def consumed(tries: list[Try], policy: RetryPolicy) -> tuple[int, verdict.Verdict | None]:
    """Budget consumed by the step (shared: the sum, else the most of one pod) and the verdict,
    as one reconcile judges it from the pods it sees."""
    wf, pods_ = scene(tries, policy)
    record = disruption.observe({}, "ft", pods_)
    step = view(wf).steps["node"]
    counted, failed = verdict.spent("node", policy, step, record)
    used = sum(counted.values()) if policy.shared else max(counted.values(), default=0)
    return used, failed or verdict.verdict("node", "node", policy, step, record)


CASES = [
    # Kueue preempts the gang at 10:05: rank 1 stopped (143), rank 0 lost its peer first (4)
    ("preempted+peer-exit-4", REAL, 0,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5)]),
    ("preempted+peer-exit-4-shared", SHARED, 0,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 6)]),
    # the same, five preemptions in a row: still nothing spent
    ("preempted-5-times", REAL, 0,
     [t for i in range(5) for t in (Try("node-0-1", i, 143, 10 * i + 1, 10 * i + 5, PREEMPTED, 10 * i + 5),
                                    Try("node-0-0", i, 4, 10 * i + 1, 10 * i + 5))]),
    # after re-admission (attempts 1, created at 10:07) rank 0 fails for real: counts once
    ("real-exit-1-after-readmission", REAL, 1,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5),
      Try("node-0-0", 1, 1, 7, 9)]),
    ("real-exit-1-after-readmission-shared", SHARED, 1,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5),
      Try("node-0-0", 1, 1, 7, 9)]),
    # kubectl drain: rank 1's node is drained (Eviction API), rank 0 loses its peer a minute on
    ("drain+peer", SHARED, 0,
     [Try("node-0-1", 0, 143, 1, 5, EVICTED, 5), Try("node-0-0", 0, 1, 1, 6)]),
    ("eviction-api", REAL, 0, [Try("node-0-0", 0, 143, 1, 5, EVICTED, 4)]),
    ("deletion-taint-manager", SHARED, 0, [Try("node-0-0", 0, 137, 1, 5, TAINTED, 4)]),
    ("deletion-pod-gc", SHARED, 0, [Try("node-0-0", 0, None, 1, 5, GC, 5, phase="Error")]),
    ("kubelet", SHARED, 0, [Try("node-0-0", 0, 137, 1, 5, KUBELET, 5)]),
    ("scheduler-preemption", SHARED, 0, [Try("node-0-0", 0, 143, 1, 5, SCHEDULER, 5)]),
    # no disruption: every failure counts (3 > 2: the step is over)
    ("no-disruption-counts", SHARED, 3,
     [Try("node-0-0", 0, 1, 1, 2), Try("node-0-1", 0, 4, 1, 2), Try("node-0-0", 1, 1, 3, 4)]),
    # a failure before the disruption, or by a pod created after it, is its own
    ("failed-before-the-disruption", SHARED, 1,
     [Try("node-0-0", 0, 1, 1, 3), Try("node-0-1", 0, 143, 1, 5, EVICTED, 5)]),
    ("created-after-the-disruption", SHARED, 1,
     [Try("node-0-1", 0, 143, 1, 5, EVICTED, 5), Try("node-0-1", 1, 1, 6, 8)]),
    # the peer's exit code is not matched against an exit-code rule either
    ("peer-exit-4-no-failjob", PEER_LOST_FAILS, 0,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5)]),
    # a DisruptionTarget rule still decides for disrupted pods and their peers; Kueue's stop
    # (a suspended Job's pods) is never counted
    ("count-rule-drain", COUNT_DISRUPTIONS, 2,
     [Try("node-0-1", 0, 143, 1, 5, EVICTED, 5), Try("node-0-0", 0, 4, 1, 5)]),
    ("count-rule-kueue-stop", COUNT_DISRUPTIONS, 0,
     [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5)]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "budget", "tries"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_budget_consumed(policy: RetryPolicy, budget: int, tries: list[Try]) -> None:
    used, found = consumed(tries, policy)
    assert used == budget
    assert (found is not None) == (budget > policy.budget)


def test_a_real_exit_matching_failjob_still_fails_the_job() -> None:
    _, found = consumed([Try("node-0-0", 0, 3, 1, 2)], REAL)
    assert found is not None and found.reason == verdict.POD_FAILURE_POLICY
    assert "exit code 3 matching FailJob rule at index 0" in found.message


def test_the_record_outlives_the_pods() -> None:
    """Kueue deletes a stopped pod once it is replaced: the judgement stands on the record."""
    tries = [Try("node-0-1", 0, 143, 1, 5, PREEMPTED, 5), Try("node-0-0", 0, 4, 1, 5)]
    wf, pods_ = scene(tries, PEER_LOST_FAILS)
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    plan = reconcile.actions(Observed(tj, (wf,), tuple(pods_)), NOW)
    (patch,) = [r.body for r in plan.requests if r.body and "metadata" in r.body]
    text = patch["metadata"]["annotations"][disruption.ANNOTATION]
    assert json.loads(text) == {
        "node": [
            {
                "at": "2026-11-01T10:05:00Z",
                "type": "TerminationTarget",
                "reason": "WorkloadEvictedDueToPreempted",
                "pods": ["node-0-1(0)"],
            }
        ]
    }
    assert not [r for r in plan.requests if r.body and r.body.get("spec", {}).get("shutdown")]
    events = [r.body for r in plan.after_start if r.body and r.body.get("kind") == "Event"]
    assert [(e["reason"], e["message"]) for e in events] == [
        (
            "StepDisrupted",
            "step node: pods node-0-1(0) TerminationTarget (WorkloadEvictedDueToPreempted): they"
            " and the gang peers that fail after them do not count against the step's retries",
        )
    ]
    wf["metadata"]["annotations"][disruption.ANNOTATION] = text
    wf["metadata"]["resourceVersion"] = "2"
    again = reconcile.actions(Observed(tj, (wf,), ()), NOW)  # the pods are gone
    assert again.requests == []
    assert verdict.first(view(wf)) is None
    assert disruption.observe(view(wf).disruptions, "ft", pods_) == view(wf).disruptions
    # what ``trainweave status`` says of it: the record, and what the budget paid (nothing)
    assert status_cli.disruption_lines(view(wf)) == [
        "disrupted node: node-0-1(0) TerminationTarget (WorkloadEvictedDueToPreempted)"
        " at 2026-11-01T10:05:00Z: not counted",
        "retries counted node/node: none (budget 0 shared by its pods)",
    ]


def test_without_the_record_the_peer_exit_fails_the_job() -> None:
    """What the record prevents: the same attempts judged with no disruption seen."""
    wf, _ = scene([Try("node-0-1", 0, 143, 1, 5), Try("node-0-0", 0, 4, 1, 5)], PEER_LOST_FAILS)
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    plan = reconcile.actions(Observed(tj, (wf,), ()), NOW)
    stops = [r.body for r in plan.requests if r.body and r.body.get("spec", {}).get("shutdown")]
    assert [b["metadata"]["annotations"][L.STOPPED_FOR] for b in stops] == ["job-failed/node"]


def test_slim_pods_keep_the_disruption_condition() -> None:
    _, (p,) = scene([Try("node-0-0", 0, 143, 1, 5, EVICTED, 4)], SHARED)
    p["status"]["conditions"].append(
        {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": T}
    )
    kept = slim.pod(p)["status"]["conditions"]
    assert kept == [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
         "lastTransitionTime": "2026-11-01T10:04:00Z"},
        {"type": "Ready", "status": "False"},
    ]  # fmt: skip
    assert disruption.pod_mark(slim.pod(p)) == (*EVICTED, "2026-11-01T10:04:00Z")


@pytest.mark.parametrize(
    ("text", "want"),
    [("", {}), ("not json", {}), ("[]", {}), ('{"node": 3}', {}),
     ('{"node":[{"at":"x","type":"DisruptionTarget","reason":"r","pods":["a(0)"]}]}',
      {"node": (disruption.Mark("x", "DisruptionTarget", "r", ("a(0)",)),)})],
    ids=["absent", "garbage", "list", "not-a-list", "one"],
)  # fmt: skip
def test_record_decode(text: str, want: disruption.Record) -> None:
    assert disruption.decode(text) == want
    if want:
        assert disruption.decode(disruption.encode(want)) == want


def test_a_hand_edited_time_excuses_nothing() -> None:
    record: disruption.Record = {
        "node": (disruption.Mark("yesterday", "DisruptionTarget", "r", ("x(0)",)),)
    }
    assert disruption.cause(record, "node", "node-0-0", 0, T.format(1), T.format(5)) == (
        Disrupted.NO
    )
    assert disruption.cause(record, "node", "x", 0, "", "") == Disrupted.DISRUPTED


def test_controller_render_leaves_every_judgement_to_the_controller() -> None:
    strategy = retry.retry_strategy(REAL, controller=True).model_dump(
        by_alias=True, exclude_none=True
    )
    assert "expression" not in strategy
    assert strategy["limit"] == REAL.budget + retry.DISRUPTION_ALLOWANCE
    assert strategy["retryPolicy"] == "Always"
    standalone = retry.retry_strategy(REAL).model_dump(by_alias=True, exclude_none=True)
    assert standalone["limit"] == REAL.budget + retry.REQUEUE_ALLOWANCE
    assert "asInt(retries) < 2" in standalone["expression"]


def test_the_controller_render_judges_every_job() -> None:
    """``trainweave render --controller`` (what the controller creates): no expression, and every
    job's retry policy on the Workflow for the controller's judgement."""
    real = Path(__file__).parents[2] / "examples" / "real"
    tj = yaml.safe_load((real / "trainjob.yaml").read_text())
    rt = yaml.safe_load((real / "runtime.yaml").read_text())
    pipeline = to_pipeline(parse_trainjob(tj), parse_runtime(rt))
    wf = argo.workflow(pipeline, Options(controller=True, exit_cleanup=False))
    strategies = {t["name"]: t.get("retryStrategy") for t in wf["spec"]["templates"]}
    assert all("expression" not in s for s in strategies.values() if s)
    assert strategies["node"] == {
        "backoff": {"duration": "10s"},  # flat: Argo's exponent would count the disruptions
        "limit": 2 + retry.DISRUPTION_ALLOWANCE,
        "retryPolicy": "Always",
    }
    limits = json.loads(wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION])
    assert {step: sorted(jobs) for step, jobs in limits.items()} == {
        "dataset-initializer": ["dataset-initializer"],
        "model-initializer": ["model-initializer"],
        "node": ["node"],
        "model-exporter": ["model-exporter"],
    }
    assert retry.policy_of_wire(limits["node"]["node"]) == REAL


def test_a_step_the_controller_failed_keeps_its_pods() -> None:
    """A Job failed by the controller's verdict is not re-run under its group name: once its
    pods are done the group is finished with ``retriable-in-group: "false"`` (pods kept for
    their logs and for jobsStatus ``failed``), not deleted with its Workload."""
    wf, pods_ = scene([Try("node-0-0", 0, 3, 1, 2)], REAL)
    wf["status"]["phase"] = "Failed"
    wf["spec"]["shutdown"] = "Stop"
    wf["metadata"]["annotations"][L.STOPPED_FOR] = "job-failed/node"
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wl = workload("ft-node-a0", queue="gpu", reserved=T.format(1))
    plan = reconcile.actions(Observed(tj, (wf,), tuple(pods_), (wl,)), NOW)
    assert [
        (r.method, r.body) for r in plan.requests if "ft-node-a0" in r.path or "pods" in r.path
    ] == [("PATCH", {"metadata": {"annotations": {"kueue.x-k8s.io/retriable-in-group": "false"}}})]
