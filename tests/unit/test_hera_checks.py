"""The Hera builders refuse what the CLI refuses, by the builder's argument (workflows/checks.py),
a step shares no pod group between two tasks, and a step has no outputs."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
from hera.workflows import DAG, Container, Parameter, Workflow
from hera.workflows import models as m

from tests.builders import make_runtime, make_trainjob
from tests.crds import Validator
from tests.unit.examples import EXAMPLES
from trainweave import labels as L
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.model import RetryPolicy
from trainweave.workflows import GangStep, exit_cleanup, initializer, post_processor, trainer
from trainweave.workflows.checks import OUTPUTS, StepError

Json = dict[str, Any]
T = "trainer('node'): "
INIT = "initializer('dataset-initializer'): "
P = "post_processor('export'): "
NOT_A_QUEUE = (
    "is not a Kueue queue name: a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.', starting and"
    " ending with a letter or digit) of at most 63 characters"
)


def node(**kwargs: Any) -> GangStep:
    return trainer("node", "trainer:1", ["torchrun"], kwargs.pop("queue", "gpu"), **kwargs)


def dataset(uri: str = "hf://org/data", **kwargs: Any) -> GangStep:
    return initializer("dataset-initializer", "init:1", uri, kwargs.pop("queue", "cpu"), **kwargs)


def export(**kwargs: Any) -> GangStep:
    return post_processor("export", "export:1", ["x"], kwargs.pop("queue", "cpu"), **kwargs)


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (
            lambda: node(queue=""),
            T + "queue: is empty: the step's pods must name the LocalQueue that admits them",
        ),
        (lambda: node(queue="GPU_queue"), T + f"queue: 'GPU_queue' {NOT_A_QUEUE}"),
        (lambda: export(queue="q" * 64), P + f"queue: '{'q' * 64}' {NOT_A_QUEUE}"),
        (
            lambda: node(gpus_per_node=-1),
            T + "gpus_per_node: '-1' must be greater than or equal to 0",
        ),
        (lambda: node(retry=-1), T + "retry: -1 must be greater than or equal to 0"),
        (
            lambda: export(retry=RetryPolicy(-2)),
            P + "retry.budget: -2 must be greater than or equal to 0",
        ),
        (
            lambda: node(env={"PET_NNODES": "3"}),
            T + "env[0].name: PET_NNODES is reserved: the torch plugin sets it",
        ),
        (
            lambda: node(
                env=[{"name": "A", "value": "1"}, {"name": "PET_MASTER_PORT", "value": "1"}]
            ),
            T + "env[1].name: PET_MASTER_PORT is reserved: the torch plugin sets it",
        ),
        (
            lambda: dataset("acme/data"),
            INIT + "storage_uri: 'acme/data' must be a URI of the form"
            " scheme://path (e.g. hf://org/name)",
        ),
        (lambda: node(nodes=0), T + "nodes: must be at least 1, got 0"),
        (
            lambda: node(nodes=2001),
            T + "nodes: gives 2001 pods (2001 in job 'node'); a TrainJob"
            " may run at most 2000, all held in one Argo Workflow object",
        ),
        (
            lambda: node(nproc_per_node=0),
            T + "nproc_per_node: Input should be greater than or equal to 1",
        ),
        (lambda: export(env=[{"name": "A", "value": 1}]), P + "env[0].value: must be str, got int"),
        (
            lambda: export(env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
            P + "env[1].name: duplicate name 'A'",
        ),
        (
            lambda: dataset(env={"A=B": "1"}),
            INIT + "env[0].name: 'A=B' is not a valid environment"
            " variable name (printable ASCII, not '=', not empty)",
        ),
        (lambda: dataset(secret=""), INIT + "secret: String should have at least 1 character"),
        (
            lambda: export(resources={"requests": {"cpu": "lots"}}),
            P + "resources.requests.cpu: 'lots' is not a quantity",
        ),
        (
            lambda: export(volumes=[{"name": "Work", "emptyDir": {}}]),
            P
            + "volumes[0].name: 'Work' is not a lowercase RFC 1123 label (at most 63 characters of"
            " a-z, 0-9 and '-', starting and ending with a letter or digit)",
        ),
        (
            lambda: export(volume_mounts=[{"name": "w", "mountPth": "/w"}]),
            P + "volume_mounts[0].mountPth: unknown field in V1VolumeMount",
        ),
        (
            lambda: export(pod_spec={"nodeSelectr": {}}),
            P + "pod_spec.nodeSelectr: unknown field in V1PodSpec",
        ),
        (lambda: export(outputs=[Parameter(name="loss")]), P + f"outputs: {OUTPUTS}"),
        # the final pod, as the API server judges every rendered pod (pod_rules)
        (lambda: trainer("node", "", ["torchrun"], "gpu"), T + "image: Required value"),
        (
            lambda: node(resources={"requests": {"nvidia.com/gpu": "2"}}),
            T + "resources.limits: Required value: Limit must be set for non overcommitable"
            " resources (nvidia.com/gpu)",
        ),
        (
            lambda: dataset(env=[{"name": "A", "valueFrom": {}}]),
            INIT + "env[0].valueFrom: Invalid value: must specify exactly one of: `fieldRef`,"
            " `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
        ),
        (
            lambda: export(pod_spec={"tolerations": [{"effect": "Later", "operator": "Exists"}]}),
            P + 'pod_spec.tolerations[0].effect: Unsupported value: "Later": supported values:'
            ' "NoExecute", "NoSchedule", "PreferNoSchedule"',
        ),
        (
            lambda: export(
                pod_spec={"volumes": [{"name": "v", "emptyDir": {}}]},
                volumes=[{"name": "v", "emptyDir": {}}],
            ),
            P + "volumes[0].name: Duplicate value: 'v'",
        ),
        (
            lambda: export(
                volume_mounts=[{"name": "a", "mountPath": "/w"}, {"name": "b", "mountPath": "/w"}]
            ),
            P + "volume_mounts[1].mountPath: Invalid value: '/w': must be unique",
        ),
    ],
    ids=[
        "queue-empty",
        "queue-not-dns",
        "queue-too-long",
        "gpus-negative",
        "retry-negative",
        "retry-policy-negative",
        "reserved-pet-env",
        "reserved-pet-env-list",
        "storage-uri-no-scheme",
        "nodes-zero",
        "nodes-over-limit",
        "nproc-zero",
        "env-value-not-str",
        "env-duplicate",
        "env-name",
        "secret-empty",
        "resources-quantity",
        "volume-name",
        "mount-unknown-field",
        "pod-spec-unknown-field",
        "outputs",
        "image-empty",
        "gpu-without-limit",
        "env-value-from-empty",
        "toleration-effect",
        "volume-duplicate",
        "mount-path-twice",
    ],
)
def test_builder_refuses_what_the_cli_refuses(build: Callable[[], GangStep], error: str) -> None:
    with pytest.raises(StepError) as caught:
        build()
    assert str(caught.value) == error
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, InputErrors)


def test_builder_names_every_refused_argument() -> None:
    with pytest.raises(StepError) as caught:
        node(queue="", retry=-1, gpus_per_node=-1)
    assert [e.path for e in caught.value.errors] == ["gpus_per_node", "queue", "retry"]


def test_torch_false_reserves_no_env() -> None:
    assert node(torch=False, env={"PET_NNODES": "3"}).container["env"] == [
        {"name": "PET_NNODES", "value": "3"}
    ]


# One validation: the CLI refuses the TrainJob carrying the same value with the same reason.
@pytest.mark.parametrize(
    ("build", "spec", "path"),
    [
        (
            lambda: dataset("acme/data"),
            {"initializer": {"dataset": {"storageUri": "acme/data"}}},
            "spec.initializer.dataset.storageUri",
        ),
        (lambda: node(nodes=0), {"trainer": {"numNodes": 0}}, "spec.trainer.numNodes"),
        (
            lambda: node(nproc_per_node=0),
            {"trainer": {"numProcPerNode": 0}},
            "spec.trainer.numProcPerNode",
        ),
        (
            lambda: node(env={"A=B": "1"}),
            {"trainer": {"env": [{"name": "A=B", "value": "1"}]}},
            "spec.trainer.env[0].name",
        ),
        (
            lambda: node(resources={"limits": {"memory": "-1Gi"}}),
            {"trainer": {"resourcesPerNode": {"limits": {"memory": "-1Gi"}}}},
            "spec.trainer.resourcesPerNode.limits.memory",
        ),
    ],
    ids=["storage-uri", "num-nodes", "num-proc", "env-name", "resources"],
)
def test_same_reason_as_the_cli(build: Callable[[], GangStep], spec: Json, path: str) -> None:
    with pytest.raises(StepError) as hera:
        build()
    with pytest.raises(InputErrors) as cli:
        parse_trainjob(make_trainjob(**spec))
    assert [(e.path, e.message) for e in cli.value.errors] == [(path, hera.value.errors[0].message)]


@pytest.mark.parametrize(
    ("edit", "path", "message"),
    [
        (
            lambda rt: rt.job("node")["template"]["metadata"]["labels"].update(
                {L.KUEUE_QUEUE_NAME: "GPU_queue"}
            ),
            f"spec.template.spec.replicatedJobs[0].template.metadata.labels.{L.KUEUE_QUEUE_NAME}",
            f"'GPU_queue' {NOT_A_QUEUE}",
        ),
        (
            lambda rt: rt.job_spec("node").update(backoffLimit=-1),
            "spec.template.spec.replicatedJobs[0].template.spec.backoffLimit",
            "-1 must be greater than or equal to 0",
        ),
        (
            lambda rt: rt.job_spec("node").update(
                backoffLimitPerIndex=-1, completionMode="Indexed"
            ),
            "spec.template.spec.replicatedJobs[0].template.spec.backoffLimitPerIndex",
            "-1 must be greater than or equal to 0",
        ),
    ],
    ids=["queue-label", "backoff-limit", "backoff-limit-per-index"],
)
def test_cli_refuses_the_queue_and_budget_the_builders_refuse(
    edit: Callable[[Any], None], path: str, message: str
) -> None:
    rt = make_runtime()
    edit(rt)
    with pytest.raises(InputErrors) as caught:
        to_pipeline(parse_trainjob(make_trainjob()), parse_runtime(rt.build()))
    assert [(e.path, e.message) for e in caught.value.errors] == [(path, message)]


@pytest.mark.parametrize(
    ("queue", "labels", "path"),
    [
        ("Bad", {}, "default queue"),
        ("gpu", {L.KUEUE_QUEUE_NAME: "a_b"}, f"metadata.labels.{L.KUEUE_QUEUE_NAME}"),
    ],
    ids=["default-queue", "trainjob-label"],
)
def test_cli_refuses_a_default_queue_kueue_refuses(queue: str, labels: Json, path: str) -> None:
    rt = make_runtime()
    del rt.job("node")["template"]["metadata"]["labels"][L.KUEUE_QUEUE_NAME]
    tj = make_trainjob()
    tj["metadata"]["labels"] = labels
    with pytest.raises(InputErrors) as caught:
        to_pipeline(parse_trainjob(tj), parse_runtime(rt.build()), default_queue=queue)
    assert [e.path for e in caught.value.errors] == [path]


@pytest.mark.parametrize(
    ("workflow", "error"),
    [
        (
            {},
            "export(name='export'): volume_mounts[0].name: Not found: 'work' (neither the step's"
            " volumes nor the Workflow's volumes or volume_claim_templates)",
        ),
        ({"volumes": [m.Volume(name="work", empty_dir=m.EmptyDirVolumeSource())]}, None),
        (
            {
                "volume_claim_templates": [
                    m.PersistentVolumeClaim(metadata=m.ObjectMeta(name="work"))
                ]
            },
            None,
        ),
    ],
    ids=["unknown", "workflow-volume", "claim-template"],
)
def test_a_mount_names_a_volume_of_the_step_or_the_workflow(
    workflow: Json, error: str | None
) -> None:
    step = export(volume_mounts=[{"name": "work", "mountPath": "/w"}])
    with Workflow(name="w", entrypoint="main", **workflow), DAG(name="main"):
        if error is None:
            step()
            return
        with pytest.raises(StepError) as caught:
            step()
    assert str(caught.value) == error


# --- one step, several tasks ---------------------------------------------------------------


def groups(w: Workflow) -> list[str]:
    pod = next(t for t in w.to_dict()["spec"]["templates"] if t["name"] == "node")
    return [pod["metadata"]["labels"][L.KUEUE_POD_GROUP_NAME]]


def calls(*tasks: Json) -> Workflow:
    step = node(nodes=2)
    with Workflow(name="w", entrypoint="main") as w, DAG(name="main"):
        for task in tasks:
            step(**task)
    return w


@pytest.mark.parametrize(
    ("tasks", "error"),
    [
        (
            [{"name": "pretrain"}, {"name": "finetune"}],
            "node(name='finetune'): name: step 'node' already runs as task 'pretrain' of this"
            " Workflow; both would be Kueue pod group 'w-node-a0' and one torch master. Give each"
            " call its own instance= (a DNS label: each instance is its own pod group), or build"
            " a second step with another name",
        ),
        (
            [{"name": "pretrain"}, {"name": "finetune", "instance": "ft"}],
            "node(name='finetune'): name: step 'node' already runs as task 'pretrain'",
        ),
        (
            [{"name": "a", "with_items": ["x", "y"]}, {"name": "b", "instance": "y"}],
            "node(name='b'): instance: 'y' already names a pod group of step 'node' (task 'a');"
            " an instance is one pod group, once per Workflow",
        ),
    ],
    ids=["two-names", "own-then-instance", "instance-reused"],
)
def test_a_step_under_two_tasks_shares_no_pod_group(tasks: list[Json], error: str) -> None:
    with pytest.raises(StepError) as caught:
        calls(*tasks)
    assert str(caught.value).startswith(error)


@pytest.mark.parametrize(
    "tasks",
    [
        [{"name": "pretrain", "instance": "pre"}, {"name": "finetune", "instance": "ft"}],
        [{"name": "a", "with_items": ["x"]}, {"name": "b", "with_items": ["y", "z"]}],
        [
            {"name": "a", "with_items": ["x"]},
            {"name": "b", "with_param": "{{workflow.parameters.p}}"},
        ],
    ],
    ids=["instances", "items", "items-and-param"],
)
def test_each_task_with_its_own_instance_is_its_own_pod_group(tasks: list[Json]) -> None:
    w = calls(*tasks)
    assert groups(w) == ["w-node-{{inputs.parameters.instance}}-a0"]
    main = next(t for t in w.to_dict()["spec"]["templates"] if t["name"] == "main")
    assert [t["arguments"]["parameters"][0]["name"] for t in main["dag"]["tasks"]] == [
        "instance",
        "instance",
    ]


# --- outputs ------------------------------------------------------------------------------


def _when_on_outputs() -> None:
    with Workflow(name="w", entrypoint="main"), DAG(name="main"):
        node()(name="train") >> export()(when="{{tasks.train.outputs.parameters.loss}} < 1")


def _argument_from_outputs() -> None:
    with Workflow(name="w", entrypoint="main"), DAG(name="main"):
        node()(name="train")
        export()(arguments={"x": Parameter(name="x", value="{{tasks.train.outputs.result}}")})


def _outputs_on_the_call() -> None:
    with Workflow(name="w", entrypoint="main"), DAG(name="main"):
        node()(name="train", outputs=[Parameter(name="loss")])


def _task_output(read: Callable[[Any], object]) -> Callable[[], None]:
    def build() -> None:
        with Workflow(name="w", entrypoint="main"), DAG(name="main"):
            read(node()(name="train"))

    return build


def _plain_task_on_result() -> None:
    with Workflow(name="w", entrypoint="main"), DAG(name="main"):
        train = node()(name="train")
        Container(name="c", image="busybox")(name="c").on_other_result(train, "done")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (
            _when_on_outputs,
            f"export(name='export'): when: names outputs of task 'train': {OUTPUTS}",
        ),
        (
            _argument_from_outputs,
            f"export(name='export'): arguments: names outputs of task 'train': {OUTPUTS}",
        ),
        (_outputs_on_the_call, f"node(name='train'): outputs: {OUTPUTS}"),
        (_task_output(lambda t: t.result), f"task 'train': outputs: {OUTPUTS}"),
        (_task_output(lambda t: t.get_parameter("loss")), f"task 'train': outputs: {OUTPUTS}"),
        (_task_output(lambda t: t.get_artifact("model")), f"task 'train': outputs: {OUTPUTS}"),
        (_task_output(lambda t: t.get_outputs_as_arguments()), f"task 'train': outputs: {OUTPUTS}"),
        (_task_output(lambda t: t.get_result_as("r")), f"task 'train': outputs: {OUTPUTS}"),
        (_plain_task_on_result, f"task 'train': outputs: {OUTPUTS}"),
    ],
    ids=[
        "when",
        "arguments",
        "call-outputs",
        "result",
        "get-parameter",
        "get-artifact",
        "outputs-as-arguments",
        "result-as",
        "on-other-result",
    ],
)
def test_a_step_has_no_outputs(build: Callable[[], None], error: str) -> None:
    with pytest.raises(StepError) as caught:
        build()
    assert str(caught.value) == error


# --- passing data and one step twice: examples/hera/eval_gate.py ------------------------------

EVAL_GATE = EXAMPLES / "hera" / "eval_gate.py"


def eval_gate() -> Json:
    spec = importlib.util.spec_from_file_location("hera_eval_gate", EVAL_GATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.w.to_dict())


def test_eval_gate_runs_one_step_twice_and_gates_on_a_file() -> None:
    """Two tasks of one step, each its own instance (pod group, torch master); the loss file
    on the shared volume read by a plain template as an output parameter for the `when`."""
    templates = {t["name"]: t for t in eval_gate()["spec"]["templates"]}
    tasks = templates["main"]["dag"]["tasks"]
    assert [
        (t["name"], t["template"], t.get("depends"), t.get("when"), t.get("arguments"))
        for t in tasks
    ] == [
        (
            "pretrain",
            "step-node",
            None,
            None,
            {"parameters": [{"name": "instance", "value": "pretrain"}]},
        ),
        (
            "finetune",
            "step-node",
            "pretrain",
            None,
            {"parameters": [{"name": "instance", "value": "finetune"}]},
        ),
        ("loss", "read-loss", "finetune", None, None),
        (
            "model-exporter",
            "step-model-exporter",
            "loss",
            "{{tasks.loss.outputs.parameters.loss}} < 0.5",
            None,
        ),
    ]
    labels = templates["node"]["metadata"]["labels"]
    assert (
        labels[L.KUEUE_POD_GROUP_NAME] == "{{workflow.name}}-node-{{inputs.parameters.instance}}-a0"
    )
    loss = templates["read-loss"]
    path = "/workspace/output/eval-loss"
    assert loss["outputs"] == {"parameters": [{"name": "loss", "valueFrom": {"path": path}}]}
    assert loss["container"]["volumeMounts"] == [{"name": "workspace", "mountPath": "/workspace"}]
    assert path in templates["node"]["containerSet"]["containers"][0]["args"]


def test_exit_cleanup_releases_each_literal_instance() -> None:
    release = {t["name"]: t for t in eval_gate()["spec"]["templates"]}["trainweave-cleanup-steps"]
    assert [
        (t["name"], t["arguments"]["parameters"][0]["value"]) for t in release["dag"]["tasks"]
    ] == [
        ("release-node-finetune", "{{workflow.name}}-node-finetune-a0"),
        ("release-node-pretrain", "{{workflow.name}}-node-pretrain-a0"),
        ("release-model-exporter", "{{workflow.name}}-model-exporter-a0"),
    ]


@pytest.mark.parametrize(
    ("task", "workloads"),
    [
        ({}, ["w-node-a0"]),
        ({"with_items": ["1e-4", "3e-4"]}, ["w-node-1e-4-a0", "w-node-3e-4-a0"]),
        ({"with_param": "{{workflow.parameters.rates}}"}, ["w-node-a0"]),
    ],
    ids=["own-group", "items", "param-unknown"],
)
def test_exit_cleanup_of_a_fanned_out_step(task: Json, workloads: list[str]) -> None:
    step = node(nodes=2)
    with Workflow(name="w", entrypoint="main") as w:
        with DAG(name="main"):
            step(name="train", **task)
        w.on_exit = exit_cleanup(step)
    release = {t["name"]: t for t in w.to_dict()["spec"]["templates"]}["trainweave-cleanup-steps"]
    assert [t["arguments"]["parameters"][0]["value"] for t in release["dag"]["tasks"]] == workloads


@pytest.mark.schema
def test_eval_gate_validates_against_argo_crd(workflow_validator: Validator) -> None:
    assert [e.message for e in workflow_validator.iter_errors(eval_gate())] == []


@pytest.mark.parametrize("name", ["wait", "init", "supervisor", "artifact-plugin-x"])
def test_a_step_named_as_argos_own_container_is_refused(name: str) -> None:
    """The step's container keeps the step's name; Argo names its own containers init, wait,
    supervisor and artifact-plugin-* (validate.ARGO_RESERVED)."""
    with pytest.raises(StepError) as exc:
        post_processor(name, "exporter:1", ["python"], "cpu")
    assert str(exc.value) == (
        f"post_processor({name!r}): name: {name!r} is a name Argo Workflows gives its own"
        " containers in every step pod (init, wait, supervisor, artifact-plugin-*,"
        " init-artifact-*): rename the container"
    )


def test_an_init_container_named_as_argos_own_is_refused() -> None:
    pod_spec = {"initContainers": [{"name": "init", "image": "busybox:1"}]}
    with pytest.raises(StepError, match=r"pod_spec\.initContainers\[0\]\.name: 'init' is a name"):
        post_processor("export", "exporter:1", ["python"], "cpu", pod_spec=pod_spec)
