"""``examples/hera/plain_llm_pipeline.py`` (plain Hera, by hand) keeps up with ``llm_pipeline.py``
(trainweave.workflows): the two renders are equal in what Kueue and Argo act on.

Compared per step of the ``main`` DAG: its dependencies; the step DAG's pod tasks and
``failFast``; the pod template's Kueue labels and the Service's selector label, every annotation,
the containerSet (containers, resources, env, ports, mounts), inputs, ``podSpecPatch``, template
volumes and ``retryStrategy``; the headless Service (by the step's non-pod task); the Workflow's
volumes and exit handler (which Workloads it deletes, when). Left out: template names of the
Service and clean-up (the plain file names its own), trainweave's bookkeeping labels
(``BOOKKEEPING``: nothing in Kueue or Argo reads them) and the Service's labels.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crds import Validator
from tests.unit.examples import EXAMPLES
from trainweave import labels as L

Json = dict[str, Any]
HERA = EXAMPLES / "hera"
KUEUE = "kueue.x-k8s.io/"


def acted_on_label(key: str) -> bool:
    """Pod labels Kueue (any ``kueue.x-k8s.io/``: queue, pod group, priority) or the headless
    Service (its selector) act on."""
    return key.startswith(KUEUE) or key == L.JOBSET_NAME


BOOKKEEPING = {
    L.MANAGED_BY,
    L.TRAINJOB,
    L.STEP,
    L.ROLE,
    L.ATTEMPT,
    L.REPLICATED_JOB,
    L.TRAINJOB_ANCESTOR,
    L.JOBSET_JOB_INDEX,
    L.JOBSET_REPLICATED_JOB_NAME,
    L.JOB_COMPLETION_INDEX,
}
"""trainweave's own and JobSet/Trainer look-alike pod labels: read by trainweave and the Kubeflow
SDK, not by Kueue or Argo. A label outside both sets fails the test: decide which it is."""
ENV_KEYS = ("generateName", "namespace")


def render(path: Path) -> Json:
    spec = importlib.util.spec_from_file_location(f"hera_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.w.to_dict())


@pytest.fixture(scope="module")
def both() -> tuple[Json, Json]:
    return render(HERA / "llm_pipeline.py"), render(HERA / "plain_llm_pipeline.py")


def templates(workflow: Json) -> dict[str, Json]:
    return {t["name"]: t for t in workflow["spec"]["templates"]}


def pod_template(workflow: Json, step: Json) -> Json | None:
    """The template every task of a step DAG runs more than once or with replica/index."""
    tasks = step.get("dag", {}).get("tasks", [])
    pods = {t["template"] for t in tasks if "arguments" in t}
    return templates(workflow)[pods.pop()] if len(pods) == 1 else None


def manifest(template: Json, drop_labels: bool = False) -> Json:
    out: Json = yaml.safe_load(template["resource"]["manifest"])
    if drop_labels:
        out["metadata"].pop("labels", None)
    return {"resource": {**template["resource"], "manifest": out}}


def acted_on(workflow: Json) -> Json:
    """What Kueue and Argo act on, keyed by the main DAG's task names."""
    t = templates(workflow)
    out: Json = {k: workflow["metadata"].get(k) for k in ENV_KEYS}
    out["volumeClaimTemplates"] = workflow["spec"].get("volumeClaimTemplates")
    out["entrypoint"] = workflow["spec"]["entrypoint"]
    for task in t[workflow["spec"]["entrypoint"]]["dag"]["tasks"]:
        step = t[task["template"]]
        pod = pod_template(workflow, step)
        view: Json = {"depends": task.get("depends")}
        if pod is None:  # a plain template (notify): all of it but its name
            view["template"] = {k: v for k, v in step.items() if k != "name"}
            out[task["name"]] = view
            continue
        tasks = step["dag"]["tasks"]
        view["failFast"] = step["dag"].get("failFast")
        view["pods"] = [(p["name"], p["arguments"]) for p in tasks if p["template"] == pod["name"]]
        view["also"] = [
            manifest(t[p["template"]], drop_labels=True)
            for p in tasks
            if p["template"] != pod["name"]
        ]
        meta = pod["metadata"]
        acted = {k: v for k, v in meta["labels"].items() if acted_on_label(k)}
        assert set(meta["labels"]) - set(acted) <= BOOKKEEPING, task["name"]
        view["labels"] = acted
        view["annotations"] = meta.get("annotations")
        view["podSpecPatch"] = json.loads(pod.get("podSpecPatch") or "null")
        for key in ("containerSet", "inputs", "volumes", "retryStrategy", "container"):
            view[key] = pod.get(key)
        out[task["name"]] = view
    out["onExit"] = released(workflow)
    return out


def released(workflow: Json) -> Json:
    """The exit handler as Argo runs it: (condition, Workload deleted, delete template) per
    Workload, whether one task per step (trainweave) or one task over items (plain)."""
    t = templates(workflow)
    out: Json = {}

    def walk(template: Json, when: str | None) -> None:
        for task in template["dag"]["tasks"]:
            cond = task.get("when", when)
            called = t[task["template"]]
            if "dag" in called:
                walk(called, cond)
                continue
            (param,) = task["arguments"]["parameters"]
            for workload in task.get("withItems", [param["value"]]):
                out[workload] = (cond, {**manifest(called), "inputs": called["inputs"]})

    walk(t[workflow["spec"]["onExit"]], None)
    return out


def test_plain_hera_equals_trainweave_where_kueue_and_argo_act(both: tuple[Json, Json]) -> None:
    ours, plain = (acted_on(w) for w in both)
    assert plain == ours


@pytest.mark.parametrize(
    ("step", "pods", "queue"),
    [
        ("dataset-initializer", 1, "cpu-queue"),
        ("model-initializer", 1, "cpu-queue"),
        ("train", 2, "gpu-queue"),
        ("model-exporter", 1, "cpu-queue"),
    ],
    ids=["dataset", "model", "trainer", "exporter"],
)
def test_each_step_is_one_pod_group_on_its_queue(
    both: tuple[Json, Json], step: str, pods: int, queue: str
) -> None:
    """The comparison above is not vacuous: both carry the gang wiring."""
    for view in (acted_on(w)[step] for w in both):
        assert view["labels"][L.KUEUE_QUEUE_NAME] == queue
        assert view["annotations"][L.KUEUE_POD_GROUP_TOTAL_COUNT] == str(pods)
        assert len(view["pods"]) == pods
        assert view["retryStrategy"]["limit"] > 0


@pytest.mark.schema
def test_plain_example_validates_against_argo_crd(
    both: tuple[Json, Json], workflow_validator: Validator
) -> None:
    assert [e.message for e in workflow_validator.iter_errors(both[1])] == []
