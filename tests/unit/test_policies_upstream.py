"""Kubeflow Trainer v2.3.0's own plugin unit-test tables, ported to trainweave's policies.

Ported from ``github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/framework/plugins``:

- ``torch/torchtune_test.go``: TestGetModelFromRuntimeRef, TestIsLoraConfigEnabled,
  TestIsUseQLoraFinetune, TestGetRecipeAndConfig, TestExtractOverridesFromRuntime;
- ``torch/torch_test.go``: TestTorchValidate (the reserved-env and torchtune cases);
- ``xgboost/xgboost_test.go``: TestXGBoostValidate, TestXGBoostEnforceMLPolicy;
- ``jax/jax_test.go``: TestJAXEnforceMLPolicy;
- TestTorchEnforceMLPolicy, the other TestTorchValidate cases, ``mpi/mpi_test.go`` and
  ``plainml/plainml_test.go``: in ``test_policies_upstream_mpi_torch.py`` (its docstring lists
  what differs and what is not ported there).

Each pytest id is upstream's case name, so a case can be found in the Go file. Upstream's
``runtime.Info`` becomes a runtime document (its trainer PodSet count is ``mlPolicy.numNodes``;
its PodSet and template ``ObjApply`` are one replicatedJob here) and the PodSet ``Count``
after EnforceMLPolicy is ``Context.num_nodes`` (the trainer step's pod count).
Error paths and messages are upstream's; where trainweave reports per env entry
(``spec.trainer.env[i].name``) and not upstream's text, the path must start with upstream's
and the message must name the variable.

Not ported (no trainweave counterpart):

- TestTorchValidate "no action when info is nil", "no action when info does not have
  MLPolicySource": Go nil-guards on runtime.Info (its other cases are ported here or in
  ``test_policies_upstream_mpi_torch.py``).
- TestXGBoostValidate "no error when runtimeInfo is nil"; TestXGBoostEnforceMLPolicy and
  TestJAXEnforceMLPolicy "no action when info is nil", "no action when mlPolicySource is nil",
  "no action when mlPolicySource XGBoost is null" / "... JAX is null": Go guards on a nil or
  policy-less runtime.Info; trainweave always has a runtime and ``policies.of(spec)`` never
  hands a runtime to a policy it does not name.
- TestJAXEnforceMLPolicy "JAX training with GPU resources" is ported; its extra
  ``runtime.Info`` label (``app: jax-training``) has no counterpart and is not asserted.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.builders import RuntimeBuilder, make_runtime, make_trainjob
from tests.unit.policies_upstream import CTR, Err, check_errors, context
from trainweave.adapters.trainjob import policies
from trainweave.adapters.trainjob.policies import torchtune
from trainweave.adapters.trainjob.policies.base import Context
from trainweave.labels import Ancestor

Json = dict[str, Any]
COMPLETION_INDEX = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}
PORTS = [{"containerPort": 29500}]


# --- torchtune_test.go ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("runtime_ref_name", "want"),
    [
        pytest.param("torchtune-llama3.2-1b", "llama3_2/1B", id="llama3.2 1B is normalized"),
        pytest.param("torchtune-qwen2.5-1.5b", "qwen2_5/1.5B", id="qwen2.5 1.5B is normalized"),
        pytest.param("torchtune-llama3.2", "", id="fewer than three parts returns empty"),
        pytest.param("torchtune-llama3.2-1b-extra", "", id="more than three parts returns empty"),
        pytest.param("", "", id="empty name returns empty"),
    ],
)
def test_get_model_from_runtime_ref(runtime_ref_name: str, want: str) -> None:
    assert torchtune.model_of(runtime_ref_name) == want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(
            ["batch_size=32", "model.lora_attn_modules=['q_proj','v_proj']"],
            True,
            id="lora attn modules present",
        ),
        pytest.param(["batch_size=32", "epochs=10"], False, id="no lora args"),
        pytest.param([], False, id="empty args"),
    ],
)
def test_is_lora_config_enabled(args: list[str], want: bool) -> None:
    assert torchtune._lora(args) is want


@pytest.mark.parametrize(
    ("args", "want"),
    [
        pytest.param(["model.quantize_base=True"], True, id="quantize base enabled"),
        pytest.param(["model.quantize_base=False"], False, id="quantize base explicitly disabled"),
        pytest.param(
            ["model.quantize_base=True", "model.use_dora=True"],
            False,
            id="dora short-circuits even when quantize base is set",
        ),
        pytest.param(
            ["model.quantize_base=True", "model.use_dora=False"],
            True,
            id="dora explicitly disabled with quantize base set",
        ),
        pytest.param(["batch_size=32"], False, id="neither quantize base nor dora"),
        pytest.param([], False, id="empty args"),
    ],
)
def test_is_use_qlora_finetune(args: list[str], want: bool) -> None:
    assert torchtune._qlora(args) is want


LORA_ARGS = ["model.lora_attn_modules=['q_proj']"]
QLORA_ARGS = ["model.quantize_base=True"]
MODEL = "llama3_2/1B"


@pytest.mark.parametrize(
    ("num_nodes", "nproc", "gpus", "args", "want_recipe", "want_config"),
    [
        pytest.param(
            1, None, 1, [], "full_finetune_single_device", f"{MODEL}_full_single_device",
            id="single device full",
        ),
        pytest.param(
            1, None, 1, LORA_ARGS, "lora_finetune_single_device", f"{MODEL}_lora_single_device",
            id="single device lora",
        ),
        pytest.param(
            1, None, 1, QLORA_ARGS, "lora_finetune_single_device",
            f"{MODEL}_qlora_single_device",
            id="single device qlora",
        ),
        pytest.param(
            1, None, 4, [], "full_finetune_distributed", f"{MODEL}_full",
            id="single node multi-gpu full",
        ),
        pytest.param(
            1, None, 4, LORA_ARGS, "lora_finetune_distributed", f"{MODEL}_lora",
            id="single node multi-gpu lora",
        ),
        pytest.param(
            1, None, 4, QLORA_ARGS, "lora_finetune_distributed", f"{MODEL}_qlora",
            id="single node multi-gpu qlora",
        ),
        pytest.param(
            2, None, 8, [], "full_finetune_distributed", f"{MODEL}_full_multinode",
            id="multi-node full",
        ),
        pytest.param(
            1, 1, 4, [], "full_finetune_single_device", f"{MODEL}_full_single_device",
            id="numProcPerNode=1 forces single device even with multiple gpus",
        ),
        pytest.param(
            1, 4, 4, [], "full_finetune_distributed", f"{MODEL}_full",
            id="numProcPerNode>1 uses distributed",
        ),
    ],
)  # fmt: skip
def test_get_recipe_and_config(
    num_nodes: int,
    nproc: int | None,
    gpus: int,
    args: list[str],
    want_recipe: str,
    want_config: str,
) -> None:
    """``nproc`` None is upstream's ``intstr.FromString("auto")``."""
    tj = make_trainjob(
        name="torchtune-job",
        runtime="torchtune-llama3.2-1b",
        kind=CTR,
        trainer={"command": ["tune", "run"], "args": args},
    )
    ctx = context(tj, make_runtime())
    assert torchtune.recipe_and_config(ctx, num_nodes, nproc, gpus) == (want_recipe, want_config)


IMMUTABLE_COMMANDS = ["output_dir=/out", "tokenizer.path=/tok", "batch_size=32"]


def _no_template(rt: RuntimeBuilder) -> None:
    rt.jobs = []


def _trainer_node(rt: RuntimeBuilder) -> None:
    rt.container("node")["command"] = list(IMMUTABLE_COMMANDS)


def _other_ancestor(rt: RuntimeBuilder) -> None:
    rt.job("node")["template"]["metadata"]["labels"][
        "trainer.kubeflow.org/trainjob-ancestor-step"
    ] = "other"
    rt.container("node")["command"] = list(IMMUTABLE_COMMANDS)


def _sidecar(rt: RuntimeBuilder) -> None:
    rt.container("node")["name"] = "sidecar"
    rt.container("node")["command"] = list(IMMUTABLE_COMMANDS)


@pytest.mark.parametrize(
    ("setup", "want"),
    [
        pytest.param(_no_template, [], id="no jobset template"),
        pytest.param(
            _trainer_node,
            ["output_dir=/out", "tokenizer.path=/tok"],
            id="trainer node container returns only immutable configs",
        ),
        pytest.param(_other_ancestor, [], id="non-trainer ancestor is ignored"),
        pytest.param(_sidecar, [], id="non-node container is ignored"),
    ],
)
def test_extract_overrides_from_runtime(
    setup: Callable[[RuntimeBuilder], None], want: list[str]
) -> None:
    """extractOverridesFromRuntime's result is what ``torchtune.command`` appends after
    ``--config <config>``."""
    rt = make_runtime()
    setup(rt)
    tj = make_trainjob(
        runtime="torchtune-llama3.2-1b", kind=CTR, trainer={"command": ["tune", "run"]}
    )
    cmd = torchtune.command(context(tj, rt))
    assert cmd[cmd.index("--config") + 2 :] == want


# --- torch_test.go: TestTorchValidate ----------------------------------------------------

TUNE_IMAGE = "ghcr.io/kubeflow/trainer/torchtune-trainer"
LORA_QLORA = ["model.lora_attn_modules=[q_proj, v_proj, output_proj]", "model.quantize_base=True"]
IMMUTABLE_MSG = 'must not set immutable config "{}" in trainer args; it is managed by the runtime'


def _tune(num_nodes: int, args: list[str], requests: Json) -> Json:
    """MakeTrainJobTrainerWrapper().NumNodes(n).Container(image, [tune run], args, requests)."""
    return {
        "numNodes": num_nodes,
        "image": TUNE_IMAGE,
        "command": ["tune", "run"],
        "args": args,
        "resourcesPerNode": {"requests": requests},
    }


@pytest.mark.parametrize(
    ("trainer", "runtime_ref", "want"),
    [
        pytest.param(
            {"env": [{"name": "test", "value": "value"}, {"name": "test2", "value": "value"}]},
            "rt",
            [],
            id="valid environment variable present",
        ),
        pytest.param(
            {
                "env": [
                    {"name": "test", "value": "value"},
                    {"name": "PET_NPROC_PER_NODE", "value": "value"},
                ]
            },
            "rt",
            [Err("spec.trainer.env", "PET_NPROC_PER_NODE", exact=False)],
            id="reserved environment variable present",
        ),
        pytest.param(
            _tune(1, [], {}),
            "torchtune-llama3.1-70b",
            [
                Err(
                    "spec.runtimeRef.name",
                    "must have a supported pretrained model, invalid model configured:"
                    " llama3_1/70B",
                )
            ],
            id="unsupported pretrained model",
        ),
        pytest.param(
            _tune(2, [], {}),
            "torchtune-llama3.2-3b",
            [Err("spec.trainer.numNodes", "must be 1 for llama3_2/3B model")],
            id="multi-node mode is only enabled for Llama-3.3-70b",
        ),
        pytest.param(
            _tune(1, LORA_QLORA, {}),
            "torchtune-qwen2.5-1.5b",
            [Err("spec.runtimeRef.name", "QLoRA is not supported for qwen2_5/1.5B model")],
            id="qlora is not supported for qwen in torchtune",
        ),
        pytest.param(
            _tune(1, LORA_QLORA, {"example.com/gpu": "2"}),
            "torchtune-llama3.2-1b",
            [
                Err(
                    "spec.trainer.numProcPerNode",
                    "must be auto or 1 for llama3_2/1B model when using QLoRA",
                ),
                Err(
                    "spec.trainer.resourcesPerNode",
                    "must have gpu resource with value 1 for llama3_2/1B model when using QLoRA",
                ),
            ],
            id="muti-devices qlora is not supported for llama3.2-1b in torchtune",
        ),
        pytest.param(
            _tune(2, ["model.lora_attn_modules=[q_proj, v_proj, output_proj]"], {}),
            "torchtune-llama3.3-70b",
            [
                Err(
                    "spec.trainer.numNodes",
                    "LoRA fine-tuning is not supported for multi-node training in TorchTune",
                )
            ],
            id="lora is not supported for multi-node training in torchtune",
        ),
        pytest.param(
            _tune(1, ["model.lora_attn_modules=[q_proj, v_proj, output_proj]"], {}),
            "torchtune-llama3.3-70b",
            [],
            id="lora is supported for single-node training in torchtune",
        ),
        pytest.param(
            _tune(1, ["output_dir=/custom/output"], {}),
            "torchtune-llama3.2-1b",
            [Err("spec.trainer.args[0]", IMMUTABLE_MSG.format("output_dir"))],
            id="immutable runtime config must not be set in trainer args",
        ),
        pytest.param(
            _tune(1, ["output_dir=custom-output", "tokenizer.path=/some/path"], {}),
            "torchtune-llama3.2-1b",
            [
                Err("spec.trainer.args[0]", IMMUTABLE_MSG.format("output_dir")),
                Err("spec.trainer.args[1]", IMMUTABLE_MSG.format("tokenizer.path")),
            ],
            id="multiple immutable runtime configs must not be set in trainer args",
        ),
    ],
)
def test_torch_validate(trainer: Json, runtime_ref: str, want: list[Err]) -> None:
    kind = CTR if runtime_ref != "rt" else "TrainingRuntime"
    tj = make_trainjob(name="test", runtime=runtime_ref, kind=kind, trainer=trainer)
    ctx = context(tj, make_runtime())
    check_errors(policies.of(ctx.spec).validate(ctx), want)


# --- xgboost_test.go ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "trainer", "want"),
    [
        pytest.param(
            {"torch": {}},
            {"numNodes": 1, "env": [{"name": "DMLC_TRACKER_URI", "value": "custom-tracker"}]},
            [],
            id="no error when runtime is not XGBoost (e.g. Torch)",
        ),
        pytest.param({"xgboost": {}}, None, [], id="no error when trainer is nil"),
        pytest.param(
            {"xgboost": {}},
            {"numNodes": 1},
            [],
            id="no error when env does not contain reserved names",
        ),
        pytest.param(
            {"xgboost": {}},
            {"numNodes": 1, "env": [{"name": "DMLC_TRACKER_URI", "value": "custom-tracker"}]},
            [Err("spec.trainer.env[0]", "DMLC_TRACKER_URI", exact=False)],
            id="error when using reserved DMLC_TRACKER_URI env",
        ),
        pytest.param(
            {"xgboost": {}},
            {"numNodes": 1, "env": [{"name": "DMLC_NUM_WORKER", "value": "10"}]},
            [Err("spec.trainer.env[0]", "DMLC_NUM_WORKER", exact=False)],
            id="error when using reserved DMLC_NUM_WORKER env",
        ),
        pytest.param(
            {"xgboost": {}},
            {
                "numNodes": 1,
                "env": [
                    {"name": "DMLC_TRACKER_URI", "value": "custom"},
                    {"name": "DMLC_TASK_ID", "value": "0"},
                ],
            },
            [
                Err("spec.trainer.env[0]", "DMLC_TRACKER_URI", exact=False),
                Err("spec.trainer.env[1]", "DMLC_TASK_ID", exact=False),
            ],
            id="multiple errors when using multiple reserved envs",
        ),
    ],
)
def test_xgboost_validate(policy: Json, trainer: Json | None, want: list[Err]) -> None:
    """Upstream ignores Forbidden's Detail; the message only has to name the variable."""
    spec: Json = {"trainer": trainer} if trainer is not None else {}
    tj = make_trainjob(name="test-job", **spec)
    ctx = context(tj, make_runtime(ml_policy={"numNodes": 1, **policy}))
    check_errors(policies.of(ctx.spec).validate(ctx), want)


def _enforce(tj: Json, rt: RuntimeBuilder, ancestor: Ancestor | None) -> tuple[Context, Json]:
    """Run the runtime's policy on its ``node`` job; (context, the enforced pod spec)."""
    ctx = context(tj, rt)
    pod: Json = copy.deepcopy(rt.job_spec("node")["template"]["spec"])
    assert policies.of(ctx.spec).enforce(ctx, "node", ancestor, pod) is None
    return ctx, pod


def _xgboost_env(trainjob: str, workers: str) -> list[Json]:
    return [
        {"name": "DMLC_TRACKER_URI", "value": f"{trainjob}-node-0-0.{trainjob}"},
        {"name": "DMLC_TRACKER_PORT", "value": "29500"},
        {"name": "DMLC_TASK_ID", "valueFrom": COMPLETION_INDEX},
        {"name": "DMLC_NUM_WORKER", "value": workers},
    ]


@pytest.mark.parametrize(
    (
        "name", "pod_set_count", "runtime_requests", "trainer",
        "want_count", "want_env", "want_ports",
    ),
    [
        pytest.param(
            "test-job", 1, None, None, 1, [], [],
            id="no env injection when trainJob.Spec.Trainer is nil",
        ),
        pytest.param(
            "test-job", 1, None, {"numNodes": 1}, 1, _xgboost_env("test-job", "1"), PORTS,
            id="single node XGBoost training (CPU)",
        ),
        pytest.param(
            "multi-node-job", 2, None, {"numNodes": 4},
            4, _xgboost_env("multi-node-job", "4"), PORTS,
            id="multi-node XGBoost training (CPU)",
        ),
        pytest.param(
            "gpu-job", 1, None,
            {
                "numNodes": 2,
                "image": "xgboost/xgboost:latest",
                "resourcesPerNode": {
                    "requests": {"cpu": "8", "memory": "32Gi", "example.com/gpu": "4"}
                },
            },
            2, _xgboost_env("gpu-job", "8"), PORTS,
            id="XGBoost training with GPU resources",
        ),
        pytest.param(
            "trainJob", 1, None, {"numNodes": 3}, 3, _xgboost_env("trainJob", "3"), PORTS,
            id="trainJob numNodes is respected",
        ),
        pytest.param(
            "no-res-job", 2, None, {"numNodes": 2}, 2, _xgboost_env("no-res-job", "2"), PORTS,
            id="resources not set - defaults to 1 worker per node",
        ),
        pytest.param(
            "runtime-res-job", 1, {"example.com/gpu": "2"}, {"numNodes": 3},
            3, _xgboost_env("runtime-res-job", "6"), PORTS,
            id="resources set in Runtime only",
        ),
        pytest.param(
            "trainjob-res", 1, None,
            {
                "numNodes": 2,
                "image": "xgboost/xgboost:latest",
                "resourcesPerNode": {"requests": {"example.com/gpu": "4"}},
            },
            2, _xgboost_env("trainjob-res", "8"), PORTS,
            id="resources set in TrainJob only",
        ),
        pytest.param(
            "both-res-job", 1, {"example.com/gpu": "1"},
            {
                "numNodes": 2,
                "image": "xgboost/xgboost:latest",
                "resourcesPerNode": {"requests": {"example.com/gpu": "3"}},
            },
            2, _xgboost_env("both-res-job", "6"), PORTS,
            id="resources set in both Runtime and TrainJob",
        ),
    ],
)  # fmt: skip
def test_xgboost_enforce_ml_policy(
    name: str,
    pod_set_count: int,
    runtime_requests: Json | None,
    trainer: Json | None,
    want_count: int,
    want_env: list[Json],
    want_ports: list[Json],
) -> None:
    rt = make_runtime(ml_policy={"numNodes": pod_set_count, "xgboost": {}})
    if runtime_requests is not None:
        rt.container("node")["resources"] = {"requests": runtime_requests}
    spec: Json = {"trainer": trainer} if trainer is not None else {}
    ctx, pod = _enforce(make_trainjob(name=name, **spec), rt, Ancestor.TRAINER)
    node = pod["containers"][0]
    assert ctx.num_nodes == want_count
    assert node.get("env", []) == want_env
    assert node.get("ports", []) == want_ports


# --- jax_test.go ----------------------------------------------------------------------------


def _jax_env(trainjob: str, processes: str) -> list[Json]:
    return [
        {"name": "JAX_NUM_PROCESSES", "value": processes},
        {"name": "JAX_PROCESS_ID", "valueFrom": COMPLETION_INDEX},
        {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{trainjob}-node-0-0.{trainjob}:29500"},
    ]


@pytest.mark.parametrize(
    "num_nodes",
    [pytest.param(2, id="no panic when JAX policy is set but trainer PodSet is absent")],
)
def test_jax_enforce_no_trainer_pod_set(num_nodes: int) -> None:
    """The runtime's only job has no trainer ancestor: its pod spec is left as it was."""
    rt = make_runtime(ml_policy={"numNodes": 1, "jax": {}})
    del rt.job("node")["template"]["metadata"]["labels"][
        "trainer.kubeflow.org/trainjob-ancestor-step"
    ]
    before = copy.deepcopy(rt.job_spec("node")["template"]["spec"])
    _, pod = _enforce(make_trainjob(name="test-job", trainer={"numNodes": num_nodes}), rt, None)
    assert pod == before


@pytest.mark.parametrize(
    ("name", "pod_set_count", "trainer", "want_count", "want_env"),
    [
        pytest.param(
            "test-job", 1, {"numNodes": 1}, 1, _jax_env("test-job", "1"),
            id="single node JAX training",
        ),
        pytest.param(
            "multi-node-job", 2, {"numNodes": 4}, 4, _jax_env("multi-node-job", "4"),
            id="multi-node JAX training",
        ),
        pytest.param(
            "trainJob", 1, {"numNodes": 3}, 3, _jax_env("trainJob", "3"),
            id="trainJob numNodes is respected",
        ),
        pytest.param(
            "gpu-job", 1,
            {
                "numNodes": 2,
                "image": "jax/jax:latest",
                "resourcesPerNode": {
                    "requests": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}
                },
            },
            2, _jax_env("gpu-job", "2"),
            id="JAX training with GPU resources",
        ),
    ],
)  # fmt: skip
def test_jax_enforce_ml_policy(
    name: str, pod_set_count: int, trainer: Json, want_count: int, want_env: list[Json]
) -> None:
    rt = make_runtime(ml_policy={"numNodes": pod_set_count, "jax": {}})
    ctx, pod = _enforce(make_trainjob(name=name, trainer=trainer), rt, Ancestor.TRAINER)
    node = pod["containers"][0]
    assert ctx.num_nodes == want_count
    assert node["env"] == want_env
    assert node["ports"] == PORTS
