"""Each Workflow is read once per reconcile (``argo_view.view`` -> ``Observed.views``); pod slots
are built and read back by one pair (``names.slot``, ``names.job_of_slot``); Argo's pod node
names are read one way (``argo_nodes.pod_node``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.cluster_objects import Pod, StepState, pod, trainjob, workflow
from tests.unit.examples import render_example, the_workflow
from trainweave import labels as L
from trainweave.adapters import names
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.read import argo_nodes, argo_view
from trainweave.integrations.views.read.argo_nodes import PodNode
from trainweave.integrations.views.read.argo_view import StepGroup
from trainweave.integrations.views.read.observed import observed

NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("job", "replica", "index", "slot", "back"),
    [
        ("node", 0, 0, "node-0-0", ("node", "0")),
        ("node", 3, 11, "node-3-11", ("node", "3")),
        ("dataset-initializer", 0, 0, "dataset-initializer-0-0", ("dataset-initializer", "0")),
        ("a-1", 2, 3, "a-1-2-3", ("a-1", "2")),  # a job name ending in digits
    ],
    ids=["node", "two-digits", "hyphenated", "job-ends-in-digits"],
)
def test_slot_and_job_of_slot_are_one_pair(
    job: str, replica: int, index: int, slot: str, back: tuple[str, str]
) -> None:
    assert names.slot(job, replica, index) == slot
    assert names.job_of_slot(slot) == back
    assert names.pod_hostname("ft", job, replica, index) == f"ft-{slot}"


@pytest.mark.parametrize("name", ["fail", "node-0", "node-x-0", "-0-0", ""])
def test_a_name_that_is_no_slot_has_no_job(name: str) -> None:
    assert names.job_of_slot(name) is None


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("ft.node.node-0-1(2)", PodNode("ft", "node", "node-0-1", 2)),
        ("ft-r1-s2.init.init-0-0", PodNode("ft-r1-s2", "init", "init-0-0", None)),
        ("ft.node.node-0-1(0).node", None),  # a Container node
        ("ft.node", None),  # the step's DAG node
        ("ft", None),
        ("ft-node-0-1-12345", None),  # a pod's own name
    ],
    ids=["retried", "no-retry", "container", "step", "workflow", "pod-name"],
)
def test_pod_node_names_read_one_way(name: str, want: PodNode | None) -> None:
    assert argo_nodes.pod_node(name) == want


def test_one_template_walk_gives_steps_slots_groups_and_job_sizes() -> None:
    """The llm-finetune example: four steps, the trainer one Job of numNodes=2 pods."""
    wf = the_workflow(render_example("llm-finetune"))
    tj = wf["metadata"]["name"]
    walked = argo_view.templates(wf)
    steps = ("dataset-initializer", "model-initializer", "node", "model-exporter")
    assert walked.steps == walked.replicated_jobs == steps
    assert walked.slots == {
        step: tuple(names.slot(step, 0, i) for i in range(2 if step == "node" else 1))
        for step in steps
    }
    roles = {"node": "trainer", "model-exporter": "post-processor"}
    assert walked.groups == {
        names.group_name(tj, step, 0): StepGroup(
            step,
            roles.get(step, "initializer"),
            "gpu-queue" if step == "node" else "cpu-queue",
            (step,),
        )
        for step in steps
    }
    assert walked.job_sizes == {(step, "0"): 2 if step == "node" else 1 for step in steps}
    assert argo_view.view(wf).templates == walked


def test_a_reconcile_walks_each_workflow_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``observed`` reads the Workflows; the reconcile and the status fold read only the views."""
    walks: list[str] = []
    walk = argo_view.templates

    def counting(wf: dict[str, Any]) -> argo_view.Templates:
        walks.append(wf["metadata"]["name"])
        return walk(wf)

    monkeypatch.setattr(argo_view, "templates", counting)
    steps = {
        "init": StepState("Succeeded", [Pod("init-0-0", "Succeeded", 0)]),
        "node": StepState("Running", [Pod("node-0-0", "Failed", 3)], role="trainer"),
    }
    first, second = workflow(steps, phase="Failed"), workflow(steps, attempt=1)
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "2"})
    pods = [pod("ft-r1", "init", "init-0-0", "Succeeded")]
    obs = observed(tj, (first, second), pods, lambda group: None)
    assert sorted(walks) == ["ft", "ft-r1"]
    plan = reconcile.actions(obs, NOW)
    assert sorted(walks) == ["ft", "ft-r1"]  # not one more
    assert plan.state is not None and obs.progress.latest is obs.views[1]
