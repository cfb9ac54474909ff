"""torchtune's ``tune run`` under mlPolicy.torch: the recipe, config and overrides Trainer writes.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/torch/torchtune.go``: a TrainJob whose trainer
command is exactly ``[tune, run]`` gets ``--rdzv_endpoint`` (multi-node or multi-device),
the recipe and ``--config <model><suffix>`` chosen from numNodes / numProcPerNode / GPUs and
the LoRA / QLoRA / DoRA args, then the runtime node command's immutable configs
(``output_dir``, ``tokenizer.path``, ``tokenizer.merges_file``,
``checkpointer.checkpoint_dir``). The model comes from the runtime name
(``torchtune-llama3.2-1b`` -> ``llama3_2/1B``).
"""

from __future__ import annotations

from trainweave.adapters import names
from trainweave.adapters.trainjob import validate
from trainweave.adapters.trainjob.policies.base import Context, trainer_pod
from trainweave.adapters.trainjob.policies.shared import TRAINER_PORT, cpus_per_node, gpus_per_node
from trainweave.errors import InputError

ENTRYPOINT = ["tune", "run"]
LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B = (
    "llama3_2/1B",
    "llama3_2/3B",
    "llama3_3/70B",
    "qwen2_5/1.5B",
)
SUPPORTED_MODELS = (LLAMA3_2_1B, LLAMA3_2_3B, LLAMA3_3_70B, QWEN2_5_1_5B)
IMMUTABLE_CONFIGS = (
    "output_dir",
    "tokenizer.path",
    "checkpointer.checkpoint_dir",
    "tokenizer.merges_file",
)
LORA_ATTN_MODULES = "model.lora_attn_modules"
QUANTIZE_BASE = "model.quantize_base"
USE_DORA = "model.use_dora"


def is_torchtune(ctx: Context) -> bool:
    """The TrainJob's trainer command is exactly ``tune run``."""
    tj = ctx.trainjob.spec.trainer
    return tj is not None and list(tj.command) == ENTRYPOINT


def model_of(runtime_name: str) -> str:
    """``torchtune-llama3.2-1b`` -> ``llama3_2/1B``; "" unless the name has three parts."""
    fields = runtime_name.split("-")
    if len(fields) != 3:
        return ""
    return f"{fields[1].replace('.', '_')}/{fields[2].upper()}"


def _lora(args: list[str]) -> bool:
    return any(LORA_ATTN_MODULES in arg for arg in args)


def _bool_arg(args: list[str], item: str) -> bool:
    for arg in args:
        name, sep, value = arg.partition("=")
        if sep and item in name and value.strip().lower() == "true":
            return True
    return False


def _qlora(args: list[str]) -> bool:
    return not _bool_arg(args, USE_DORA) and _bool_arg(args, QUANTIZE_BASE)


def recipe_and_config(ctx: Context, nodes: int, nproc: int | None, gpus: int) -> tuple[str, str]:
    """(recipe, config) as Trainer's getRecipeAndConfig; ``nproc`` None is "auto"."""
    args = list(ctx.trainjob.spec.trainer.args) if ctx.trainjob.spec.trainer else []
    recipe, suffix = "full_finetune_distributed", "_full"
    if nodes == 1 and (nproc == 1 or gpus == 1):
        if _qlora(args):
            recipe, suffix = "lora_finetune_single_device", "_qlora_single_device"
        elif _lora(args):
            recipe, suffix = "lora_finetune_single_device", "_lora_single_device"
        else:
            recipe, suffix = "full_finetune_single_device", "_full_single_device"
    elif nodes == 1 and _qlora(args):
        recipe, suffix = "lora_finetune_distributed", "_qlora"
    elif nodes == 1 and _lora(args):
        recipe, suffix = "lora_finetune_distributed", "_lora"
    elif nodes > 1:
        suffix = "_full_multinode"
    return recipe, f"{model_of(ctx.trainjob.spec.runtime_ref.name)}{suffix}"


def command(ctx: Context) -> list[str]:
    """The rewritten ``tune run ...`` command of the trainer's node container."""
    gpus = gpus_per_node(ctx.resources)
    nproc = ctx.nproc
    if nproc is None and gpus == 0:  # torch.go: "auto" on CPU becomes the CPU count first
        nproc = max(1, cpus_per_node(ctx.resources))
    out = list(ENTRYPOINT)
    if ctx.num_nodes > 1 or (nproc is not None and nproc > 1) or (nproc is None and gpus > 1):
        host = names.pod_hostname(ctx.name, "node", 0, 0)
        out.append(f"--rdzv_endpoint={host}.{ctx.name}:{TRAINER_PORT}")
    recipe, config = recipe_and_config(ctx, ctx.num_nodes, nproc, gpus)
    out += [recipe, "--config", config]
    node = validate.container(trainer_pod(ctx.spec) or {}, "node") or {}
    out += [c for c in node.get("command") or [] if c.split("=")[0] in IMMUTABLE_CONFIGS]
    return out


def errors(ctx: Context) -> list[InputError]:
    """validateTorchTune: the model, node count, QLoRA limits and immutable args."""
    tj = ctx.trainjob.spec.trainer
    assert tj is not None
    out: list[InputError] = []
    runtime = ctx.trainjob.spec.runtime_ref.name
    model = model_of(runtime)
    if model not in SUPPORTED_MODELS:
        out.append(
            InputError(
                "spec.runtimeRef.name",
                f"must have a supported pretrained model, invalid model configured: {model}",
            )
        )
    nodes = tj.num_nodes or 1
    if nodes > 1 and model != LLAMA3_3_70B:
        out.append(InputError("spec.trainer.numNodes", f"must be 1 for {model} model"))
    _, config = recipe_and_config(ctx, nodes, ctx.nproc, gpus_per_node(ctx.resources))
    if "_qlora" in config:
        if model == QWEN2_5_1_5B:
            out.append(
                InputError("spec.runtimeRef.name", f"QLoRA is not supported for {model} model")
            )
        if "_qlora_single_device" not in config and model in (LLAMA3_2_1B, LLAMA3_2_3B):
            out += [
                InputError(
                    "spec.trainer.numProcPerNode",
                    f"must be auto or 1 for {model} model when using QLoRA",
                ),
                InputError(
                    "spec.trainer.resourcesPerNode",
                    f"must have gpu resource with value 1 for {model} model when using QLoRA",
                ),
            ]
    if nodes > 1 and (_lora(tj.args) or _qlora(tj.args)):
        out.append(
            InputError(
                "spec.trainer.numNodes",
                "LoRA fine-tuning is not supported for multi-node training in TorchTune",
            )
        )
    for i, arg in enumerate(tj.args):
        key = arg.split("=", 1)[0]
        if key in IMMUTABLE_CONFIGS:
            out.append(
                InputError(
                    f"spec.trainer.args[{i}]",
                    f'must not set immutable config "{key}" in trainer args; it is managed by'
                    " the runtime",
                )
            )
    return out
