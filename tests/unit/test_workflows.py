"""trainweave.workflows: Hera step builders, in an author's own DAG and as the LLM pipeline.

Golden: ``examples/hera/llm_pipeline.yaml`` (compared as dicts); regenerate with
``TRAINWEAVE_REGENERATE=1 pytest tests/unit/test_workflows.py``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any, cast

import pytest
import yaml
from hera.workflows import DAG, Container, Task, Workflow

from tests.crds import Validator
from tests.unit.examples import EXAMPLES
from trainweave import labels as L
from trainweave.adapters.argo import workflow
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.workflows import (
    GangStep,
    exit_cleanup,
    initializer,
    llm_finetune_pipeline,
    post_processor,
    trainer,
)

Json = dict[str, Any]
HERA_EXAMPLE = EXAMPLES / "hera" / "llm_pipeline.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hera_llm_pipeline", HERA_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def templates_of(workflow: Json) -> dict[str, Json]:
    return {t["name"]: t for t in workflow["spec"]["templates"]}


def pod_tasks(step_template: Json) -> list[Json]:
    return [t for t in step_template["dag"]["tasks"] if t["name"] != "service"]


@pytest.fixture(scope="module")
def example() -> Json:
    return dict(load_example().w.to_dict())


def test_hera_example_matches_golden(example: Json) -> None:
    golden = HERA_EXAMPLE.with_suffix(".yaml")
    if os.environ.get("TRAINWEAVE_REGENERATE"):
        golden.write_text(load_example().w.to_yaml())
    assert example == yaml.safe_load(golden.read_text())


@pytest.mark.parametrize(
    ("step", "queue", "pods", "role", "ancestor"),
    [
        ("dataset-initializer", "cpu-queue", 1, "initializer", "dataset-initializer"),
        ("model-initializer", "cpu-queue", 1, "initializer", "model-initializer"),
        ("node", "gpu-queue", 2, "trainer", "trainer"),
        ("model-exporter", "cpu-queue", 1, "post-processor", None),
    ],
    ids=["dataset", "model", "trainer", "exporter"],
)
def test_example_step_labels(
    example: Json, step: str, queue: str, pods: int, role: str, ancestor: str | None
) -> None:
    templates = templates_of(example)
    tasks = pod_tasks(templates[f"step-{step}"])
    assert len(tasks) == pods
    meta = templates[step]["metadata"]
    assert meta["labels"][L.KUEUE_QUEUE_NAME] == queue
    assert meta["labels"][L.KUEUE_POD_GROUP_NAME] == f"{{{{workflow.name}}}}-{step}-a0"
    assert meta["labels"][L.ROLE] == role
    assert meta["labels"].get(L.TRAINJOB_ANCESTOR) == ancestor
    assert meta["annotations"][L.KUEUE_POD_GROUP_TOTAL_COUNT] == str(pods)
    assert "retryStrategy" in templates[step]


def test_example_user_dag_mixes_plain_templates(example: Json) -> None:
    main = {t["name"]: t for t in templates_of(example)["main"]["dag"]["tasks"]}
    assert main["train"] == {
        "name": "train",
        "template": "step-node",
        "depends": "dataset-initializer && model-initializer",
    }
    assert main["model-exporter"]["depends"] == "train"
    assert main["notify"] == {"name": "notify", "template": "notify", "depends": "model-exporter"}
    notify = templates_of(example)["notify"]
    assert "metadata" not in notify  # Kueue does not manage the author's plain template
    assert example["spec"]["onExit"] == "trainweave-cleanup"


def test_trainer_gang_env_and_dns(example: Json) -> None:
    node = templates_of(example)["node"]
    [container] = node["containerSet"]["containers"]
    assert (
        container["name"] == "node"
    )  # kept, as a Job's pod has it (the Kubeflow SDK looks for it)
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["PET_NNODES"] == "2"
    assert env["PET_NPROC_PER_NODE"] == "8"
    assert env["PET_MASTER_ADDR"] == "{{workflow.name}}-node-0-0.{{workflow.name}}"
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert '"subdomain":"{{workflow.name}}"' in node["podSpecPatch"]
    service = templates_of(example)["trainweave-service"]["resource"]
    assert service["action"] == "apply" and service["setOwnerReference"] is True


@pytest.mark.schema
def test_example_validates_against_argo_crd(example: Json, workflow_validator: Validator) -> None:
    errors = [e.message for e in workflow_validator.iter_errors(example)]
    assert errors == []


def example_pipeline(**overrides: Any) -> Workflow:
    args: dict[str, Any] = dict(
        dataset_uri="hf://acme/support-tickets",
        model_uri="hf://meta-llama/Llama-3.2-1B-Instruct",
        trainer_image="pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
        cpu_queue="cpu-queue",
        gpu_queue="gpu-queue",
        trainer_args=["--epochs", "3", "--lora-rank", "16"],
        trainer_env={"NCCL_DEBUG": "WARN"},
        trainer_resources={"requests": {"cpu": "32", "memory": "256Gi"}},
        dataset_secret="hf-token",
        model_secret="hf-token",
        model_env={"IGNORE_PATTERNS": "*.pth"},
        exporter_image="ghcr.io/example/model-exporter:1.4",
        exporter_command=[
            *("python", "-m", "exporter", "--merge-lora", "--input", "/workspace/output"),
            *("--push", "hf://acme/llama-3.2-1b-support"),
        ],
        storage_claim="initializer-llama-support-ft",
    )
    return llm_finetune_pipeline("llama-support-ft", "ml-team", **{**args, **overrides})


def test_llm_pipeline_equals_render_of_example() -> None:
    folder = EXAMPLES / "llm-finetune"
    job = parse_trainjob(yaml.safe_load((folder / "trainjob.yaml").read_text()))
    runtime = parse_runtime(yaml.safe_load((folder / "runtime.yaml").read_text()))
    rendered = workflow.workflow(to_pipeline(job, runtime))
    ours = example_pipeline().to_dict()
    # Documented differences: the Workflow applies its own Service; Hera's DAG also
    # writes the template-level failFast (the same as dag.failFast).
    templates = templates_of(ours)
    assert templates.pop("trainweave-service")["resource"]["action"] == "apply"
    templates["step-node"]["dag"]["tasks"] = pod_tasks(templates["step-node"])
    assert templates["main"].pop("failFast") is True
    assert templates == templates_of(rendered)
    # The controller's bookkeeping (resume segment, maxRestarts) is not the Hera author's.
    rendered["metadata"]["labels"].pop("trainweave.io/segment")
    assert rendered["metadata"].pop("annotations") == {"trainweave.io/max-restarts": "0"}
    assert ours["metadata"] == rendered["metadata"]
    assert {k: v for k, v in ours["spec"].items() if k != "templates"} == {
        k: v for k, v in rendered["spec"].items() if k != "templates"
    }


@pytest.mark.schema
@pytest.mark.parametrize(
    "overrides",
    [{}, {"storage_claim": None, "exporter_image": None, "cleanup": False}],
    ids=["as-render", "claim-template-no-exporter"],
)
def test_llm_pipeline_validates(overrides: Json, workflow_validator: Validator) -> None:
    workflow = example_pipeline(**overrides).to_dict()
    assert [e.message for e in workflow_validator.iter_errors(workflow)] == []


def gpu_step(name: str = "node", nodes: int = 4) -> GangStep:
    return trainer(name, "img", ["torchrun", "t.py"], "gpu", nodes=nodes, gpus_per_node=8)


@pytest.mark.parametrize(
    ("workflow", "step", "group"),
    [
        (dict(name="ft"), "node", "ft-node-a0"),
        (dict(name="a" * 40), "node", "a" * 40 + "-node-a0"),
        (dict(generate_name="ft-"), "node", "{{workflow.name}}-node-a0"),
    ],
    ids=["short", "long-name", "generated"],
)
def test_names_within_63(workflow: Json, step: str, group: str) -> None:
    with Workflow(entrypoint="main", **workflow) as w, DAG(name="main"):
        gpu_step(step)()
    labels = templates_of(w.to_dict())[step]["metadata"]["labels"]
    assert labels[L.KUEUE_POD_GROUP_NAME] == group
    assert all(len(v) <= 63 for v in labels.values())


@pytest.mark.parametrize(
    ("workflow", "step"),
    [
        (dict(name="x" * 50), "trainer-with-a-long-name"),  # hostname > 63
        (dict(generate_name="g" * 44 + "-"), "trainer-step"),  # 45 + 5 + 17 > 63
    ],
    ids=["hostname-too-long", "generated-too-long"],
)
def test_names_over_63_are_an_error(workflow: Json, step: str) -> None:
    with (
        Workflow(entrypoint="main", **workflow),
        DAG(name="main"),
        pytest.raises(ValueError, match="at most 63"),
    ):
        gpu_step(step)()


@pytest.mark.parametrize(
    ("build", "pods", "role"),
    [
        (lambda: initializer("dataset-initializer", "i", "s3://d", "cpu"), 1, "initializer"),
        (lambda: gpu_step(nodes=3), 3, "trainer"),
        (lambda: gpu_step(nodes=1), 1, "trainer"),
        (lambda: post_processor("export", "e", ["x"], "cpu"), 1, "post-processor"),
    ],
    ids=["initializer", "trainer-3", "trainer-1", "post-processor"],
)
def test_total_count_equals_pods(build: Callable[[], GangStep], pods: int, role: str) -> None:
    step: GangStep = build()
    templates = {t.name: t for t in step.templates("wf", "ns")}
    pod = templates[step.name]
    assert pod.metadata is not None and pod.metadata.annotations is not None
    assert pod.metadata.annotations[L.KUEUE_POD_GROUP_TOTAL_COUNT] == str(pods)
    assert pod.metadata.labels is not None and pod.metadata.labels[L.ROLE] == role
    dag = templates[f"step-{step.name}"].dag
    assert dag is not None
    assert len([t for t in dag.tasks if t.name != "service"]) == pods


def test_builders_beside_plain_templates() -> None:
    with Workflow(name="mix", namespace="ns", entrypoint="main") as w:
        hello = Container(name="hello", image="busybox", command=["echo", "hi"])
        with DAG(name="main"):
            # hello() >> node >> bye, one edge a line: Hera types a template call as
            # Step | Task | None (in an open DAG it is the Task) and `>>` as Task | list[Task].
            first, node = cast(Task, hello()), gpu_step(nodes=2)()
            first >> node
            node >> cast(Task, hello(name="bye"))
        w.on_exit = exit_cleanup(gpu_step(nodes=2))
    out = w.to_dict()
    names = [t["name"] for t in out["spec"]["templates"]]
    assert names.count("node") == 1 and names.count("step-node") == 1
    assert {"hello", "main", "trainweave-cleanup", "trainweave-service"} <= set(names)
    tasks = templates_of(out)["main"]["dag"]["tasks"]
    assert [(t["name"], t.get("depends")) for t in tasks] == [
        ("hello", None),
        ("node", "hello"),
        ("bye", "node"),
    ]


def _step_outside_a_workflow() -> None:
    gpu_step()()


def _two_steps_of_one_name() -> None:
    with Workflow(name="w", entrypoint="main"), DAG(name="main"):
        gpu_step(nodes=2)()
        gpu_step(nodes=3)(name="again")


def _cleanup_over_two_subdomains() -> None:
    with Workflow(name="w", entrypoint="main") as w:
        exit_cleanup(gpu_step("a"), trainer("b", "i", ["c"], "q", subdomain="other"), workflow=w)


def _step_name_not_a_dns_label() -> None:
    trainer("Node_1", "i", ["c"], "q")


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        pytest.param(
            _step_outside_a_workflow, RuntimeError, "inside `with Workflow", id="no-workflow"
        ),
        pytest.param(
            _two_steps_of_one_name,
            ValueError,
            "different template named 'step-node'",
            id="template-clash",
        ),
        pytest.param(
            _cleanup_over_two_subdomains, ValueError, "different subdomains", id="subdomains"
        ),
        pytest.param(_step_name_not_a_dns_label, ValueError, "must be a DNS label", id="bad-name"),
    ],
)
def test_errors(build: Callable[[], None], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        build()


SWEEP_EXAMPLE = EXAMPLES / "hera" / "lr_sweep.py"


def load_sweep() -> Workflow:
    spec = importlib.util.spec_from_file_location("hera_lr_sweep", SWEEP_EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    w: Workflow = module.w
    return w


def test_sweep_example_matches_golden() -> None:
    golden = SWEEP_EXAMPLE.with_suffix(".yaml")
    if os.environ.get("TRAINWEAVE_REGENERATE"):
        golden.write_text(load_sweep().to_yaml())
    assert load_sweep().to_dict() == yaml.safe_load(golden.read_text())


def test_fan_out_is_one_pod_group_per_item() -> None:
    """with_items over a gang step: the item names the pod group, hostnames and the torch master
    of each run; the total count stays the step's pods."""
    with Workflow(generate_name="sweep-", entrypoint="main") as w, DAG(name="main"):
        gpu_step(nodes=2)(name="train", with_items=["1e-4", "3e-4"])
    templates = templates_of(w.to_dict())
    (task,) = templates["main"]["dag"]["tasks"]
    assert task["withItems"] == ["1e-4", "3e-4"]
    assert task["arguments"]["parameters"] == [{"name": "instance", "value": "{{item}}"}]
    step = templates["step-node"]
    assert step["inputs"]["parameters"] == [{"name": "instance"}]
    for t in pod_tasks(step):
        assert {"name": "instance", "value": "{{inputs.parameters.instance}}"} in t["arguments"][
            "parameters"
        ]
    pod = templates["node"]
    instance = "{{inputs.parameters.instance}}"
    assert pod["inputs"]["parameters"][-1] == {"name": "instance"}
    assert pod["metadata"]["labels"][L.KUEUE_POD_GROUP_NAME] == (
        f"{{{{workflow.name}}}}-node-{instance}-a0"
    )
    assert pod["metadata"]["annotations"][L.KUEUE_POD_GROUP_TOTAL_COUNT] == "2"
    assert pod["metadata"]["labels"][L.TRAINJOB] == "{{workflow.name}}"
    env = {e["name"]: e.get("value") for e in pod["containerSet"]["containers"][0]["env"]}
    assert (
        env["PET_MASTER_ADDR"] == f"{{{{workflow.name}}}}-node-{instance}-0-0.{{{{workflow.name}}}}"
    )
    patch = yaml.safe_load(pod["podSpecPatch"])
    assert patch["hostname"] == (
        f"{{{{workflow.name}}}}-node-{instance}-{{{{inputs.parameters.replica}}}}"
        "-{{inputs.parameters.index}}"
    )
    assert patch["subdomain"] == "{{workflow.name}}"


def test_fan_out_without_items_keeps_one_group() -> None:
    with Workflow(name="ft", entrypoint="main") as w, DAG(name="main"):
        gpu_step(nodes=2)()
    pod = templates_of(w.to_dict())["node"]
    assert pod["metadata"]["labels"][L.KUEUE_POD_GROUP_NAME] == "ft-node-a0"
    assert [p["name"] for p in pod["inputs"]["parameters"]] == ["replica", "index", "rank"]


@pytest.mark.parametrize(
    ("task", "match"),
    [
        (dict(with_items=["a_b"]), "cannot name a pod group"),
        (dict(with_items=[{"lr": 1}]), "cannot name a pod group"),
        (dict(with_items=["x" * 30]), "at most 63"),
        (dict(instance="y" * 30, with_param="{{tasks.a.outputs.result}}"), "at most 63"),
    ],
    ids=["not-a-label", "dict-item", "item-too-long", "instance-too-long"],
)
def test_fan_out_names_are_checked(task: Json, match: str) -> None:
    with (
        Workflow(generate_name="g" * 20 + "-", entrypoint="main"),
        DAG(name="main"),
        pytest.raises(ValueError, match=match),
    ):
        gpu_step(nodes=2)(**task)


def test_workflow_volume_mounts_move_to_the_container_set(example: Json) -> None:
    """Argo adds a Workflow volume (here the `workspace` claim template) to a containerSet pod
    only when the set's own volumeMounts name it; a pod-level volume stays on the container."""
    init = templates_of(example)["dataset-initializer"]["containerSet"]
    assert init["volumeMounts"] == [{"name": "workspace", "mountPath": "/workspace"}]
    assert "volumeMounts" not in init["containers"][0]
    with Workflow(name="v", entrypoint="main") as w, DAG(name="main"):
        initializer(
            "dataset-initializer",
            "i",
            "s3://d",
            "cpu",
            volumes=[{"name": "own", "emptyDir": {}}],
            volume_mounts=[{"name": "own", "mountPath": "/own"}],
        )()
    cs = templates_of(w.to_dict())["dataset-initializer"]["containerSet"]
    assert "volumeMounts" not in cs
    assert cs["containers"][0]["volumeMounts"] == [{"name": "own", "mountPath": "/own"}]
