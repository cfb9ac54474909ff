"""Status roll-up tables: Workflows + pods -> TrainJob conditions and jobsStatus."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from tests.unit.cluster_objects import T0, Json, Pod, StepState, pod, trainjob, workflow
from tests.unit.examples import render_example, the_workflow
from trainweave import labels as L
from trainweave.integrations.views.decide import verdict
from trainweave.integrations.views.decide.jobs_status import job_sizes, jobs_status
from trainweave.integrations.views.decide.rollup import MAX_MESSAGE, Status, rollup, set_condition
from trainweave.integrations.views.read.argo_nodes import decode_nodes
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed
from trainweave.labels import ConditionType, Reason

NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
FIXTURES = Path(__file__).parent / "fixtures" / "argo"
INIT_OK = StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)])
Conds = dict[str, tuple[str, str, str]]  # condition type -> (status, reason, message)


def conds(status: Status) -> Conds:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.conditions}


def tj_with(wfs: list[Json]) -> Observed:
    ann = {
        "trainweave.io/attempts": str(
            1 + max((int(w["metadata"]["labels"]["trainweave.io/attempt"]) for w in wfs), default=0)
        )
    }
    return Observed(trainjob(annotations=ann), tuple(wfs))


CASES = [
    pytest.param(
        [
            workflow(
                {
                    "init": INIT_OK,
                    "trainer": StepState("Succeeded", [Pod("node-0-0", "Succeeded", code=0)]),
                },
                phase="Succeeded",
            )
        ],
        {"Complete": ("True", "AllJobsCompleted", "jobset completed successfully")},
        id="all-steps-succeeded",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": INIT_OK,
                    "trainer": StepState(
                        "Failed",
                        [Pod("node-0-0", "Failed", code=3, message="main: Error (exit code 3)")],
                    ),
                },
                phase="Failed",
            )
        ],
        {
            "Failed": (
                "True",
                "FailedJobs",
                "jobset failed due to one or more job failures (first failed job: ft-node-0): step 'trainer' failed: pod 'node-0-0' exited with exit code 3 (main: Error (exit code 3))",
            )
        },
        id="permanent-exit-code",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": StepState(
                        "Failed",
                        [
                            Pod("init-0-0", "Failed", code=1),
                            Pod("init-0-0", "Failed", code=42, attempt=1),
                        ],
                    )
                },
                phase="Failed",
            )
        ],
        {
            "Failed": (
                "True",
                "FailedJobs",
                "jobset failed due to one or more job failures (first failed job: ft-init-0): step 'init' failed: pod 'init-0-0' exited with exit code 42",
            )
        },
        id="retry-exhausted-last-attempt-code",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": StepState(
                        "Succeeded",
                        [
                            Pod("init-0-0", "Failed", code=1),
                            Pod("init-0-0", "Succeeded", code=0, attempt=1),
                        ],
                    ),
                    "trainer": StepState("Running", [Pod("node-0-0", "Running")]),
                }
            )
        ],
        {},
        id="retry-recovered-running",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": StepState(
                        "Error", [Pod("init-0-0", "Error", code=None, message="pod deleted")]
                    )
                },
                phase="Error",
            )
        ],
        {
            "Failed": (
                "True",
                "FailedJobs",
                "jobset failed due to one or more job failures (first failed job: ft-init-0): step 'init' failed: pod 'init-0-0' exited (pod deleted)",
            )
        },
        id="error-pod-deleted-no-exit-code",
    ),
    pytest.param(
        [
            workflow(
                {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=1)])},
                phase="Failed",
                max_restarts=2,
            )
        ],
        {},
        id="failed-with-restart-budget-left",
    ),
    pytest.param(
        [
            workflow(
                {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=1)])},
                phase="Failed",
                max_restarts=2,
            ),
            workflow(
                {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=1)])},
                phase="Failed",
                max_restarts=2,
                attempt=1,
            ),
            workflow(
                {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=7)])},
                phase="Failed",
                max_restarts=2,
                attempt=2,
            ),
        ],
        {
            "Failed": (
                "True",
                "ReachedMaxRestarts",
                "jobset failed due to reaching max number of restarts (first failed job: ft-init-0): step 'init' failed: pod 'init-0-0' exited with exit code 7; reached maxRestarts=2",
            )
        },
        id="max-restarts-spent",
    ),
    pytest.param(
        [
            workflow(
                {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=1)])},
                phase="Failed",
                max_restarts=1,
            ),
            workflow({"init": INIT_OK}, phase="Succeeded", max_restarts=1, attempt=1),
        ],
        {"Complete": ("True", "AllJobsCompleted", "jobset completed successfully")},
        id="second-attempt-succeeds",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": INIT_OK,
                    "trainer": StepState("Succeeded", [Pod("node-0-0", "Succeeded", code=0)]),
                },
                phase="Succeeded",
                compressed=True,
            )
        ],
        {"Complete": ("True", "AllJobsCompleted", "jobset completed successfully")},
        id="compressed-nodes",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": INIT_OK,
                    "trainer": StepState("Failed", [Pod("node-0-0", "Failed", code=143)]),
                },
                phase="Failed",
                shutdown="Stop",
                stopped_for="suspend",
            ),
            workflow(
                {"trainer": StepState("Succeeded", [Pod("node-0-0", "Succeeded", code=0)])},
                phase="Succeeded",
                segment=1,
            ),
        ],
        {"Complete": ("True", "AllJobsCompleted", "jobset completed successfully")},
        id="resumed-segment-succeeds",
    ),
    pytest.param(
        [
            workflow(
                {
                    "init": INIT_OK,
                    "trainer": StepState("Failed", [Pod("node-0-0", "Failed", code=143)]),
                },
                phase="Failed",
                shutdown="Stop",
                stopped_for="suspend",
            )
        ],
        {},
        id="stopped-for-suspend-is-not-a-failure",
    ),
]


@pytest.mark.parametrize(("workflows", "expected"), CASES)
def test_conditions_from_workflows(workflows: list[Json], expected: Conds) -> None:
    assert conds(rollup(tj_with(workflows), NOW)) == expected


SUSPEND_CASES = [
    pytest.param(
        True, [], {"Suspended": ("True", "Suspended", "TrainJob is suspended")}, id="suspend"
    ),
    pytest.param(
        False,
        [
            {
                "type": "Suspended",
                "status": "True",
                "reason": "Suspended",
                "message": "TrainJob is suspended",
                "lastTransitionTime": T0,
            }
        ],
        {"Suspended": ("False", "Resumed", "TrainJob is resumed")},
        id="resume",
    ),
    pytest.param(False, [], {}, id="never-suspended-no-condition"),
]


@pytest.mark.parametrize(("suspend", "current", "expected"), SUSPEND_CASES)
def test_suspended_condition(suspend: bool, current: list[Json], expected: Conds) -> None:
    obs = Observed(trainjob(suspend=suspend, conditions=current))
    assert conds(rollup(obs, NOW)) == expected


DEADLINE_CASES = [
    pytest.param(
        60,
        False,
        [],
        {"Failed": ("True", "DeadlineExceeded", "TrainJob exceeded its active deadline")},
        id="exceeded",
    ),
    pytest.param(600, False, [], {}, id="not-yet"),
    pytest.param(
        60,
        True,
        [],
        {"Suspended": ("True", "Suspended", "TrainJob is suspended")},
        id="suspended-clock-stops",
    ),
    pytest.param(
        120,
        False,
        [
            {
                "type": "Suspended",
                "status": "False",
                "reason": "Resumed",
                "message": "TrainJob is resumed",
                "lastTransitionTime": "2026-11-01T10:04:00Z",
            }
        ],
        {"Suspended": ("False", "Resumed", "TrainJob is resumed")},
        id="clock-resets-on-resume",
    ),
]


@pytest.mark.parametrize(("deadline", "suspend", "current", "expected"), DEADLINE_CASES)
def test_deadline(deadline: int, suspend: bool, current: list[Json], expected: Conds) -> None:
    obs = Observed(trainjob(deadline=deadline, suspend=suspend, conditions=current))
    assert conds(rollup(obs, NOW)) == expected


def test_deadline_requeue_time() -> None:
    status = rollup(Observed(trainjob(deadline=600)), NOW)
    assert status.deadline == datetime(2026, 11, 1, 10, 0, tzinfo=UTC) + timedelta(seconds=600)


def test_finished_trainjob_is_left_alone() -> None:
    done = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "TrainingRuntimeNotFound",
            "message": "x",
            "lastTransitionTime": T0,
        }
    ]
    wf = workflow({"init": INIT_OK}, phase="Succeeded")
    status = rollup(Observed(trainjob(conditions=done), (wf,)), NOW)
    assert status.conditions == done


def test_conditions_keep_order_and_transition_time() -> None:
    current = [
        {
            "type": "Suspended",
            "status": "False",
            "reason": "Resumed",
            "message": "TrainJob is resumed",
            "lastTransitionTime": T0,
        }
    ]
    wf = workflow({"init": INIT_OK}, phase="Succeeded")
    status = rollup(
        Observed(trainjob(conditions=current, annotations={"trainweave.io/attempts": "1"}), (wf,)),
        NOW,
    )
    assert [c["type"] for c in status.conditions] == [
        "Suspended",
        "Complete",
    ]  # State column = last
    assert status.conditions[0]["lastTransitionTime"] == T0
    assert status.conditions[1]["lastTransitionTime"] == "2026-11-01T10:05:00Z"


def test_workflow_of_another_trainjob_incarnation_is_ignored() -> None:
    wf = workflow({"init": INIT_OK}, phase="Succeeded", owner_uid="old-uid")
    assert conds(rollup(Observed(trainjob(), (wf,)), NOW)) == {}


def test_argo_upstream_fixture_exit_code_from_last_retry_child() -> None:
    doc = yaml.safe_load((FIXTURES / "dag-exhausted-retries-xfail.yaml").read_text())
    v = view(doc)
    assert v.steps["sub-dag1"].phase == "Failed"
    failed = v.steps["sub-dag1"].failed_pod
    assert failed is not None and (failed.slot, failed.exit_code, failed.attempts) == ("fail", 1, 2)
    assert verdict.failure(v)[0] == "sub-dag1"
    assert v.steps["success2"].phase == "Omitted"


def test_compressed_nodes_decode_like_plain() -> None:
    steps = {"init": INIT_OK}
    plain = workflow(steps)["status"]
    packed = workflow(steps, compressed=True)["status"]
    assert decode_nodes(packed) == decode_nodes(plain)
    assert decode_nodes({"offloadNodeStatusVersion": "abc"}) is None


def counts(
    *, ready: int = 0, succeeded: int = 0, failed: int = 0, active: int = 0, suspended: int = 0
) -> dict[str, int]:
    """One replicatedJob's Job counts as ``jobsStatus`` reports them (unnamed: 0)."""
    return {
        "ready": ready,
        "succeeded": succeeded,
        "failed": failed,
        "active": active,
        "suspended": suspended,
    }


def job_counts(obs: Observed) -> dict[str, dict[str, int]]:
    """``jobs_status`` by replicatedJob name, its counts only."""
    return {j["name"]: {k: j[k] for k in counts()} for j in jobs_status(obs)}


JOBS_CASES = [
    pytest.param(
        [
            pod("ft", "init", "init-0-0", "Failed", attempt=0, created="2026-11-01T10:00:00Z"),
            pod("ft", "init", "init-0-0", "Succeeded", attempt=1, created="2026-11-01T10:01:00Z"),
        ],
        "Running",
        {"init": counts(succeeded=1), "trainer": counts()},
        id="retried-pod-counts-last-attempt",
    ),
    pytest.param(
        [
            pod("ft", "trainer", "node-0-0", "Running", ready=True),
            pod("ft", "trainer", "node-1-0", "Running"),
            pod("ft", "trainer", "node-2-0", "Pending", gated=True),
        ],
        "Running",
        {"init": counts(), "trainer": counts(ready=1, active=2, suspended=1)},
        id="one-job-per-replica-ready-active-gated",
    ),
    pytest.param(
        [
            pod("ft", "trainer", "node-0-0", "Running", ready=True),
            pod("ft", "trainer", "node-0-1", "Succeeded"),
            pod("ft", "trainer", "node-0-2", "Running", ready=True),
        ],
        "Running",
        {"init": counts(), "trainer": counts(ready=1, active=1)},
        id="pods-of-one-job-count-once",
    ),
    pytest.param(
        [pod("ft", "trainer", "node-0-0", "Failed")],
        "Running",
        {"init": counts(), "trainer": counts()},
        id="failed-pod-being-retried-is-no-failed-job",
    ),
    pytest.param(
        [pod("ft", "trainer", "node-0-0", "Failed"), pod("ft", "trainer", "node-0-1", "Succeeded")],
        "Failed",
        {"init": counts(), "trainer": counts(failed=1)},
        id="failed-step-fails-its-job",
    ),
]


@pytest.mark.parametrize(("pods", "phase", "expected"), JOBS_CASES)
def test_jobs_status(pods: list[Json], phase: str, expected: dict[str, dict[str, int]]) -> None:
    """One Workflow (the first attempt); ``phase`` is the phase of the pods' step."""
    steps = {"init": StepState("Running"), "trainer": StepState("")}
    steps[pods[0]["metadata"]["labels"][L.STEP]] = StepState(phase)
    obs = Observed(
        trainjob(annotations={"trainweave.io/attempts": "1"}), (workflow(steps),), tuple(pods)
    )
    assert job_counts(obs) == expected


def test_jobs_status_counts_only_the_current_attempt() -> None:
    """A restarted TrainJob (2 attempts): the first Workflow's pods no longer count."""
    steps = {"init": StepState("Failed"), "trainer": StepState("")}
    pods = (
        pod("ft-r1", "init", "init-0-0", "Failed", wf_attempt=1),
        pod("ft", "init", "init-0-0", "Succeeded"),
    )
    obs = Observed(
        trainjob(annotations={"trainweave.io/attempts": "2"}),
        (workflow(steps), workflow(steps, attempt=1)),
        pods,
    )
    assert job_counts(obs) == {"init": counts(failed=1), "trainer": counts()}


def test_job_sizes_from_the_rendered_example() -> None:
    wf = the_workflow(render_example("llm-finetune"))
    tj = trainjob()
    wf["metadata"]["ownerReferences"] = [
        {"uid": tj["metadata"]["uid"], "controller": True, "kind": "TrainJob", "name": "ft"}
    ]
    sizes = job_sizes(Observed(tj, (wf,)))
    assert (
        sizes[("node", "0")] == 2
    )  # numNodes: 2 -> one Job of two pods, as Trainer's torch runtime
    assert sizes[("dataset-initializer", "0")] == 1
    assert set(sizes) == {
        ("dataset-initializer", "0"),
        ("model-initializer", "0"),
        ("node", "0"),
        ("model-exporter", "0"),
    }


def test_engine_captured_containerset_failure_names_step_and_exit_code() -> None:
    doc = yaml.safe_load((FIXTURES / "containerset-retried-then-failed.yaml").read_text())
    v = view(doc)
    failed = v.steps["node"].failed_pod
    assert failed is not None and (failed.slot, failed.exit_code, failed.attempts) == (
        "node-0-0",
        3,
        3,
    )
    assert v.steps["model-exporter"].phase == "Omitted"
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    doc["metadata"]["ownerReferences"] = [
        {"uid": tj["metadata"]["uid"], "controller": True, "kind": "TrainJob", "name": "ft"}
    ]
    status, reason, message = conds(rollup(Observed(tj, (doc,)), NOW))["Failed"]
    assert (status, reason) == ("True", "FailedJobs")
    assert "'node'" in message and "exit code 3" in message, message


def test_a_condition_message_is_clipped_below_the_crds_limit() -> None:
    """Trainer's CRD refuses a condition message over 32768 characters; an error quoting a hostile
    1 MiB value must still reach the TrainJob."""
    conds = set_condition(
        [], ConditionType.FAILED, True, Reason.INVALID_TRAINJOB, "x" * 1_048_576, "t"
    )
    message = conds[0]["message"]
    assert len(message) <= MAX_MESSAGE < 32768
    assert message.endswith(f"... ({1_048_576 - (MAX_MESSAGE - 40)} more characters)")
    short = set_condition([], ConditionType.FAILED, True, Reason.INVALID_TRAINJOB, "m", "t")
    assert short[0]["message"] == "m"
