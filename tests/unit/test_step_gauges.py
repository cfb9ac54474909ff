"""The per-step gauges the Prometheus rules read: steps waiting for quota (since when) and
steps holding quota though done for good (a leak), from the plan to /metrics."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import generate_latest

from tests.unit.cluster_objects import T0, Pod, StepState, pod, trainjob, workflow, workload
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.read import quota
from trainweave.integrations.views.read.observed import Observed

NOW = datetime(2026, 11, 1, 10, 30, tzinfo=UTC)
INIT_OK = StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)])
STARTED = {"trainweave.io/attempts": "1"}
WAIT = "trainweave_step_waiting_since_seconds"
LEAK = "trainweave_step_quota_leaked"


def test_plan_lists_the_step_waiting_for_quota() -> None:
    wf = workflow({"init": INIT_OK, "trainer": StepState("Pending", role="trainer", queue="gpu")})
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload(
            "ft-trainer-a0", queue="gpu", pending_reason="Pending", created="2026-11-01T10:02:00Z"
        ),
    )
    plan = reconcile.actions(Observed(trainjob(annotations=STARTED), (wf,), (), wls), NOW)
    assert [(q.workload, q.state, q.created) for q in plan.waiting] == [
        ("ft-trainer-a0", "Pending", "2026-11-01T10:02:00Z")
    ]
    assert plan.leaked == ()


@pytest.mark.parametrize(
    ("trainer", "phase", "leaked"),
    [
        pytest.param(
            StepState("Running", [Pod("node-0-0", "Running")]),
            "Running",
            [],
            id="running-holds-rightly",
        ),
        pytest.param(
            StepState("Failed", [Pod("node-0-0", "Failed", code=1)]),
            "Failed",
            ["ft-trainer-a0"],
            id="failed-still-holding",
        ),
        pytest.param(
            StepState("Succeeded", [Pod("node-0-0", "Succeeded", code=0)]),
            "Succeeded",
            ["ft-trainer-a0"],
            id="succeeded-not-finished-by-kueue",
        ),
    ],
)
def test_plan_lists_quota_held_by_steps_done_for_good(
    trainer: StepState, phase: str, leaked: list[str]
) -> None:
    """A step Workload still holding quota once its Workflow is over is a leak (the controller
    releases it; the gauge shows until Kueue lets go). A Finished Workload holds nothing."""
    trainer.role, trainer.queue = "trainer", "gpu"
    wf = workflow({"init": INIT_OK, "trainer": trainer}, phase=phase)
    pods = (
        pod("ft", "init", "init-0-0", "Succeeded"),
        pod("ft", "trainer", "node-0-0", trainer.pods[0].phase),
    )
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:02:00Z", cq="gpu-cq"),
    )
    plan = reconcile.actions(Observed(trainjob(annotations=STARTED), (wf,), pods, wls), NOW)
    assert [q.workload for q in plan.leaked] == leaked
    assert plan.waiting == ()


def sample(m: Metrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def test_gauges_follow_each_reconcile_and_go_with_the_trainjob() -> None:
    m = Metrics()
    waiting = quota.StepQuota(
        "ft-trainer-a0", step="trainer", queue="gpu", created="2026-11-01T10:02:00Z"
    )
    leaked = quota.StepQuota(
        "ft-init-a0", step="init", queue="cpu", cluster_queue="cpu-cq", state=quota.ADMITTED
    )
    m.set_steps("ns/ft", [waiting], [leaked])
    m.set_steps("ns/other", [waiting], [])
    since = datetime(2026, 11, 1, 10, 2, tzinfo=UTC).timestamp()
    assert sample(m, WAIT, namespace="ns", trainjob="ft", step="trainer", queue="gpu") == since
    assert sample(m, LEAK, namespace="ns", trainjob="ft", step="init", cluster_queue="cpu-cq") == 1
    m.set_steps("ns/ft", [], [leaked])  # admitted: no longer waiting
    assert sample(m, WAIT, namespace="ns", trainjob="ft", step="trainer", queue="gpu") is None
    assert sample(m, LEAK, namespace="ns", trainjob="ft", step="init", cluster_queue="cpu-cq") == 1
    m.set_steps("ns/ft")  # TrainJob gone
    text = generate_latest(m.registry).decode()
    assert 'trainjob="ft"' not in text
    assert sample(m, WAIT, namespace="ns", trainjob="other", step="trainer", queue="gpu") == since


def test_resource_seconds_series_exist_at_zero_while_a_step_holds_quota() -> None:
    """Prometheus' increase() counts nothing of a series' first sample: the counter series of a
    step's ClusterQueue/flavor/resource must be scraped at 0 before the step's total lands."""
    wf = workflow({"init": INIT_OK, "trainer": StepState("Running", role="trainer", queue="gpu")})
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload(
            "ft-trainer-a0",
            queue="gpu",
            reserved="2026-11-01T10:02:00Z",
            cq="gpu-cq",
            usage={"nvidia.com/gpu": "2"},
            flavors={"nvidia.com/gpu": "h100"},
        ),
    )
    plan = reconcile.actions(Observed(trainjob(annotations=STARTED), (wf,), (), wls), NOW)
    assert [q.workload for q in plan.holding] == ["ft-trainer-a0"]
    m = Metrics()
    m.hold(plan.holding)
    lbl = {"cluster_queue": "gpu-cq", "flavor": "h100", "resource": "nvidia.com/gpu"}
    assert sample(m, "trainweave_reserved_resource_seconds_total", **lbl) == 0.0
    m.apply([quota.MetricEvent("reserved", tuple(lbl.items()), 7200.0)])
    m.hold(())  # the step is done: the series stays, with its total
    assert sample(m, "trainweave_reserved_resource_seconds_total", **lbl) == 7200.0
