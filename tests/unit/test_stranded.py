"""Container nodes Argo leaves Pending under a pod that failed before it ran (stranded.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.unit.cluster_objects import Pod, StepState, trainjob, workflow
from trainweave import labels as L
from trainweave.integrations.views.decide import reconcile, stranded, verdict
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 10, tzinfo=UTC)
NEVER_RAN = "can't find failed message for pod ft-node-1 namespace ns"


def evicted_before_it_ran(container_phase: str = "Pending") -> Json:
    """The trainer's first attempt failed with no container status (Kueue's PodsReadyTimeout);
    its retry runs. Argo's containerSet Pod nodes list their Container nodes as children."""
    wf = workflow(
        {
            "init": StepState("Succeeded", [Pod("init-0-0", "Succeeded", 0)]),
            "node": StepState(
                "Running",
                [
                    Pod("node-0-0", "Failed", message=NEVER_RAN),
                    Pod("node-0-0", "Running", attempt=1),
                ],
                role="trainer",
                queue="gpu",
            ),
        }
    )
    nodes = wf["status"]["nodes"]
    for node_id, node in list(nodes.items()):
        if node["type"] == "Pod":
            child = f"{node_id}-node"
            phase = container_phase if node["phase"] == "Failed" else "Running"
            nodes[child] = {"id": child, "name": f"{node['name']}.node", "type": "Container",
                            "phase": phase}  # fmt: skip
            node["children"] = [child]
    return wf


def test_the_open_container_of_a_failed_pod_is_ended_without_an_exit_code() -> None:
    wf = evicted_before_it_ran()
    found = stranded.stranded(slim.workflow(wf))  # what the controller's cache keeps
    assert found == stranded.stranded(wf)
    assert [(c.rsplit("-", 1)[-1], p) for c, p in found] == [("node", "ft.node.node-0-0(0)")]
    patch = stranded.patch(wf, "2026-11-01T10:10:00Z")
    assert patch is not None
    ((child, end),) = patch["status"]["nodes"].items()
    assert child == found[0][0]
    assert end == {
        "phase": "Failed",
        "message": "trainweave: pod node-0-0(0) ended before this container started",
        "finishedAt": "2026-11-01T10:10:00Z",
    }
    wf["status"]["nodes"][child].update(end)  # as Argo's next read sees it
    assert stranded.patch(wf, "2026-11-01T10:10:00Z") is None
    assert verdict.first(view(wf)) is None  # the message names no exit code: nothing counted


def test_ended_or_running_containers_are_left_alone() -> None:
    assert stranded.patch(evicted_before_it_ran("Failed"), "t") is None
    assert stranded.patch(evicted_before_it_ran("Succeeded"), "t") is None
    assert (
        stranded.patch(workflow({"init": StepState("Running", [Pod("init-0-0", "Running")])}), "t")
        is None
    )


def test_reconcile_patches_the_workflow_status_once() -> None:
    wf = evicted_before_it_ran()
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    plan = reconcile.actions(Observed(tj, (slim.workflow(wf),), ()), NOW)
    patches = [r for r in plan.requests if r.body and "status" in r.body]
    assert [(r.method, r.path) for r in patches] == [
        ("PATCH", "/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/ft")
    ]
    body = patches[0].body
    assert body is not None
    assert set(body["status"]["nodes"]) == {c for c, _ in stranded.stranded(wf)}
