"""The Kueue admin's view (`trainweave queues`): per ClusterQueue and namespace, the pipelines
holding quota and the steps waiting, from wire dicts as the engines write them."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.cluster_objects import (
    StepState,
    cluster_queue,
    local_queue,
    trainjob,
    workflow,
    workload,
)
from tests.unit.fakeapi import Transport
from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.resources import Target
from tests.unit.queues_table import TABLE
from trainweave import cli
from trainweave import labels as L
from trainweave.integrations.commands import status_cli
from trainweave.integrations.commands.queues_format import format_table
from trainweave.integrations.views.read import quota
from trainweave.integrations.views.read.queues_view import (
    UNKNOWN,
    Cluster,
    queues_view,
    to_json,
)

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
GPU16 = {"cpu": "64", "nvidia.com/gpu": "16"}
ML, TEAM_B = "ml-team", "team-b"

# A gone Workload of ft (an earlier model-initializer on one GPU for an hour), as the controller
# left it in the trainweave.io/quota annotation: 1 GPU-hour the live Workloads no longer show.
GONE = quota.StepQuota(
    workload="ft-model-initializer-a0",
    step="model-initializer",
    role="initializer",
    queue="gpu",
    cluster_queue="gpu-cq",
    state=quota.FINISHED,
    created="2026-11-01T09:00:00Z",
    reserved_at="2026-11-01T09:00:00Z",
    finished_at="2026-11-01T10:00:00Z",
    wait_seconds=0.0,
    hold_seconds=3600.0,
    resource_seconds={"nvidia.com/gpu": 3600.0},
)

Json = dict[str, Any]


def cluster() -> Cluster:
    """ml-team/ft: its dataset step finished on cpu-cq, its trainer holds 16 GPUs on gpu-cq.
    ml-team/ft2: its initializer holds cpu-cq, its trainer waits for gpu-cq.
    team-b: two Workloads that are no TrainJob's step, one admitted and one pending."""
    ft = trainjob(
        "ft", namespace=ML, uid="u-ft", annotations={L.QUOTA_ANNOTATION: quota.encode([GONE])}
    )
    ft2 = trainjob("ft2", namespace=ML, uid="u-ft2", created="2026-11-01T11:00:00Z")
    steps = {
        "dataset-initializer": StepState("Succeeded", queue="cpu"),
        "node": StepState("Running", role="trainer", queue="gpu"),
    }
    steps2 = {
        "dataset-initializer": StepState("Running", queue="cpu"),
        "node": StepState("Pending", role="trainer", queue="gpu"),
    }
    return Cluster(
        cluster_queues=(
            cluster_queue(
                "cpu-cq",
                {"cpu": {"cpu": "32", "memory": "128Gi"}},
                reserved={"cpu": {"cpu": "4", "memory": "16Gi"}},
                admitted=1,
            ),
            cluster_queue(
                "gpu-cq",
                {"gpu-h100": {"cpu": "128", "nvidia.com/gpu": "16"}},
                reserved={"gpu-h100": {"cpu": "72", "nvidia.com/gpu": "16"}},
                cohort="ml",
                admitted=2,
                pending=2,
            ),
        ),
        local_queues=(
            local_queue("cpu", "cpu-cq", namespace=ML),
            local_queue("gpu", "gpu-cq", namespace=ML),
            local_queue("gpu", "gpu-cq", namespace=TEAM_B),
        ),
        workloads=(
            workload(
                "ft-dataset-initializer-a0",
                namespace=ML,
                reserved="2026-11-01T10:01:00Z",
                finished="2026-11-01T10:31:00Z",
                cq="cpu-cq",
                usage={"cpu": "4", "memory": "16Gi"},
            ),
            workload(
                "ft-node-a0",
                namespace=ML,
                queue="gpu",
                created="2026-11-01T10:00:00Z",
                reserved="2026-11-01T10:40:00Z",
                cq="gpu-cq",
                flavors={"cpu": "gpu-h100", "nvidia.com/gpu": "gpu-h100"},
                usage=GPU16,
            ),
            workload(
                "ft2-dataset-initializer-a0",
                namespace=ML,
                created="2026-11-01T11:00:00Z",
                reserved="2026-11-01T11:00:30Z",
                cq="cpu-cq",
                usage={"cpu": "4", "memory": "16Gi"},
            ),
            workload(
                "ft2-node-a0",
                namespace=ML,
                queue="gpu",
                created="2026-11-01T11:15:00Z",
                pending_reason="Pending",
            ),
            workload(
                "job-x",
                namespace=TEAM_B,
                queue="gpu",
                reserved="2026-11-01T11:30:00Z",
                cq="gpu-cq",
                usage={"cpu": "8", "nvidia.com/gpu": "0"},
            ),
            workload("job-y", namespace=TEAM_B, queue="gpu", pending_reason="Pending"),
        ),
        trainjobs=(ft, ft2),
        workflows=(
            workflow(steps, tj="ft", namespace=ML, owner_uid="u-ft"),
            workflow(steps2, tj="ft2", namespace=ML, owner_uid="u-ft2"),
        ),
    )


def test_table_per_cluster_queue_and_namespace() -> None:
    """One block per ClusterQueue: quota reserved/nominal per flavor, then each step holding or
    waiting for it with its wait, its hold and its GPU-hours; the pipeline's GPU-hours add the
    steps gone from Kueue (the annotation). Finished steps hold nothing and are not listed."""
    got = format_table(queues_view(cluster(), NOW))
    assert got == TABLE


def test_json_document() -> None:
    """-o json: the same facts for scripts, in seconds and GPU-hours."""
    doc = to_json(queues_view(cluster(), NOW), NOW)
    assert doc["now"] == "2026-11-01T12:00:00Z"
    assert [c["name"] for c in doc["clusterQueues"]] == ["cpu-cq", "gpu-cq"]
    gpu = doc["clusterQueues"][1]
    assert (gpu["cohort"], gpu["admittedWorkloads"], gpu["pendingWorkloads"]) == ("ml", 2, 2)
    assert gpu["quota"] == [
        {"flavor": "gpu-h100", "resource": "cpu", "nominal": "128", "reserved": "72"},
        {"flavor": "gpu-h100", "resource": "nvidia.com/gpu", "nominal": "16", "reserved": "16"},
    ]
    ml, team_b = gpu["namespaces"]
    assert (ml["namespace"], ml["localQueues"]) == (ML, ["gpu"])
    assert [(p["trainjob"], p["gpuHours"]) for p in ml["pipelines"]] == [
        ("ft", pytest.approx(22.333, abs=1e-3)),
        ("ft2", 0.0),
    ]
    holding = ml["pipelines"][0]["steps"][0]
    assert holding == {
        "step": "node",
        "role": "trainer",
        "workload": "ft-node-a0",
        "queue": "gpu",
        "state": "Admitted",
        "reason": "",
        "message": "",
        "waitedSeconds": 2400.0,
        "heldSeconds": 4800.0,
        "gpuHours": pytest.approx(21.333333, abs=1e-6),
        "usage": {"cpu": "64", "nvidia.com/gpu": "16"},
    }
    waiting = ml["pipelines"][1]["steps"][0]
    assert (waiting["state"], waiting["reason"], waiting["waitedSeconds"]) == (
        "Pending",
        "Pending",
        2700.0,
    )
    assert (waiting["heldSeconds"], waiting["gpuHours"]) == (0.0, 0.0)
    assert team_b == {
        "namespace": TEAM_B,
        "localQueues": ["gpu"],
        "pipelines": [],
        "otherWorkloads": {"admitted": 1, "pending": 1},
    }
    json.dumps(doc)  # serializable as is


@pytest.mark.parametrize(
    ("namespace", "cq", "expected"),
    [
        pytest.param("", "", {"cpu-cq": [ML], "gpu-cq": [ML, TEAM_B]}, id="all"),
        pytest.param(TEAM_B, "", {"gpu-cq": [TEAM_B]}, id="namespace-only-its-queues"),
        pytest.param("", "cpu-cq", {"cpu-cq": [ML]}, id="one-cluster-queue"),
        pytest.param(TEAM_B, "cpu-cq", {}, id="namespace-not-in-that-queue"),
    ],
)
def test_filters(namespace: str, cq: str, expected: dict[str, list[str]]) -> None:
    """-n and --cluster-queue narrow the view; a ClusterQueue without that namespace is left out."""
    view = queues_view(cluster(), NOW, namespace=namespace, cluster_queue=cq)
    assert {q.name: [n.namespace for n in q.namespaces] for q in view} == expected


def test_evicted_step_waits_again_and_a_missing_local_queue_is_shown_apart() -> None:
    """An evicted step (quota taken back) is waiting, counted from its Workload's creation; a
    Workload whose LocalQueue does not exist lands under the unknown ClusterQueue, last."""
    c = cluster()
    evicted = workload(
        "ft-node-a0",
        namespace=ML,
        queue="gpu",
        created="2026-11-01T10:00:00Z",
        pending_reason="Preempted",
        evicted="2026-11-01T11:50:00Z",
    )
    stray = workload("job-z", namespace=TEAM_B, queue="nope", pending_reason="Pending")
    wls = tuple(evicted if w["metadata"]["name"] == "ft-node-a0" else w for w in c.workloads)
    view = queues_view(
        Cluster(c.cluster_queues, c.local_queues, (*wls, stray), c.trainjobs, c.workflows), NOW
    )
    assert [q.name for q in view] == ["cpu-cq", "gpu-cq", UNKNOWN]
    ft = view[1].namespaces[0].pipelines[0]
    (row,) = ft.steps
    assert (row.quota.state, row.quota.reason, row.waiting, row.waited_seconds) == (
        "Evicted",
        "Preempted",
        True,
        7200.0,
    )
    assert [(n.namespace, n.other_pending) for n in view[2].namespaces] == [(TEAM_B, 1)]
    assert "(no ClusterQueue: LocalQueue missing)" in format_table(view)


def test_empty_cluster() -> None:
    assert format_table(queues_view(Cluster(), NOW)) == "no ClusterQueues\n"


def served(c: Cluster) -> Transport:
    """The fake API server holding ``c``, answering LISTs in pages of one item."""
    return Transport.of(
        *c.cluster_queues, *c.local_queues, *c.workloads, *c.trainjobs, *c.workflows, page_size=1
    )


def test_queues_command_reads_each_kind_once_and_writes_nothing() -> None:
    """The I/O edge: one paged LIST per kind (Workflows by the trainweave.io/trainjob label), only
    GETs, and the JSON printed is to_json of the pure view."""
    fake = served(cluster())
    out = io.StringIO()
    assert status_cli.queues(fake, NOW, out, "", "", "json") == 0
    assert all(r.method == "GET" for r in fake.sent)
    firsts = [r for r in fake.sent if "continue" not in dict(r.query)]
    assert [r.path for r in firsts] == [
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues",
        "/apis/kueue.x-k8s.io/v1beta2/localqueues",
        "/apis/kueue.x-k8s.io/v1beta2/workloads",
        "/apis/trainer.kubeflow.org/v1alpha1/trainjobs",
        "/apis/argoproj.io/v1alpha1/workflows",
    ]
    assert ("labelSelector", L.TRAINJOB) in firsts[-1].query
    assert len(fake.sent) == 2 + 3 + 6 + 2 + 2  # one page per item
    assert json.loads(out.getvalue()) == to_json(queues_view(cluster(), NOW), NOW)


def test_queues_command_in_one_namespace_lists_there() -> None:
    fake = served(cluster())
    assert status_cli.queues(fake, NOW, io.StringIO(), TEAM_B, "", "table") == 0
    paths = {r.path for r in fake.sent}
    assert "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-b/workloads" in paths
    assert "/apis/kueue.x-k8s.io/v1beta2/clusterqueues" in paths  # cluster-scoped


def test_queues_command_api_error_is_exit_1() -> None:
    fake = served(cluster())

    def forbidden(method: str, target: Target, body: Json | None) -> None:
        raise Failure(403, "Forbidden", "clusterqueues is forbidden")  # RBAC

    fake.server.hooks.append(forbidden)
    out = io.StringIO()
    assert status_cli.queues(fake, NOW, out, "", "", "table") == 1
    assert out.getvalue() == "error: 403 Forbidden: clusterqueues is forbidden\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["-o", "xml"], "argument -o/--output: invalid choice: 'xml'", id="output"),
        pytest.param(
            ["-n", "Team_B"],
            "error: (command line): --namespace: 'Team_B' is not a valid Kubernetes name",
            id="namespace",
        ),
        pytest.param(
            ["--cluster-queue", "gpu cq"],
            "error: (command line): --cluster-queue: 'gpu cq' is not a valid Kubernetes name",
            id="cluster-queue",
        ),
        pytest.param(["--bogus"], "unrecognized arguments: --bogus", id="unknown-flag"),
    ],
)
def test_bad_flags_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad flags never reach the cluster: exit 2, one clear line on stderr, nothing on stdout."""
    try:
        code = cli.main(["queues", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = int(exc.code or 0)
    err = capsys.readouterr()
    assert code == 2
    assert message in err.err
    assert err.out == ""
