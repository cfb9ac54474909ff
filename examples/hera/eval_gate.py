"""One trainer step run twice, and a value passed from a step to a ``when``.

The trainer step runs as two tasks, ``pretrain`` then ``finetune``. Each call names its own
``instance``, so each task is its own Kueue pod group (``<workflow>-node-pretrain-a0``,
``<workflow>-node-finetune-a0``) with its own torch master, and the stage reaches the container
as ``{{inputs.parameters.instance}}``. A trainweave step has no outputs, so the trainer writes its
eval loss to the shared volume. The plain Hera template ``read-loss`` mounts the same volume and
declares the file as its output parameter ``loss``. The exporter runs only ``when`` that loss is
below 0.5. Run it to print the Workflow: ``python examples/hera/eval_gate.py``.
"""

from hera.workflows import DAG, Container, Parameter, Resources, Workflow
from hera.workflows import models as m

from trainweave.workflows import exit_cleanup, post_processor, trainer

WORKSPACE = [m.VolumeMount(name="workspace", mount_path="/workspace")]
LOSS = "/workspace/output/eval-loss"

node = trainer(
    "node",
    "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    ["torchrun", "/workspace/recipes/train.py"],
    "gpu-queue",
    nodes=2,
    gpus_per_node=4,
    nproc_per_node=4,
    args=["--stage", "{{inputs.parameters.instance}}", "--eval-loss-file", LOSS],
    resources=Resources(cpu_request=16, memory_request="128Gi"),
    volume_mounts=WORKSPACE,
)
exporter = post_processor(
    "model-exporter",
    "ghcr.io/example/model-exporter:1.4",
    ["python", "-m", "exporter", "--input", "/workspace/output"],
    "cpu-queue",
    resources=Resources(cpu_request=8, memory_request="64Gi"),
    volume_mounts=WORKSPACE,
)

with Workflow(
    generate_name="eval-gate-",
    namespace="ml-team",
    entrypoint="main",
    volumes=[
        m.Volume(
            name="workspace",
            persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(claim_name="ml-workspace"),
        )
    ],
) as w:
    read_loss = Container(
        name="read-loss",
        image="busybox:1.37",
        command=["cat", LOSS],
        volume_mounts=WORKSPACE,
        outputs=[Parameter(name="loss", value_from=m.ValueFrom(path=LOSS))],
    )
    with DAG(name="main"):
        pretrain = node(name="pretrain", instance="pretrain")
        finetune = node(name="finetune", instance="finetune")
        loss = read_loss(name="loss")
        export = exporter(when="{{tasks.loss.outputs.parameters.loss}} < 0.5")
        pretrain >> finetune >> loss >> export
    w.on_exit = exit_cleanup(node, exporter)

if __name__ == "__main__":
    print(w.to_yaml())
