"""LLM fine-tuning in your own Hera Workflow, each step admitted by Kueue on its own queue.

The dataset and model initializers run on the CPU queue, the 2 x 8-GPU trainer
on the GPU queue once both are done (so no GPU is held during downloads), the
exporter on the CPU queue, then a plain Hera ``notify`` template that Kueue
does not manage. Run it to print the Workflow: ``python examples/hera/llm_pipeline.py``.
"""

from hera.workflows import DAG, Container, Resources, Workflow
from hera.workflows import models as m

from trainweave.workflows import exit_cleanup, initializer, post_processor, trainer

WORKSPACE = [m.VolumeMount(name="workspace", mount_path="/workspace")]

dataset = initializer(
    "dataset-initializer",
    "ghcr.io/kubeflow/trainer/dataset-initializer:v2.3.0",
    "hf://acme/support-tickets",
    "cpu-queue",
    secret="hf-token",
    resources=Resources(cpu_request=4, memory_request="16Gi"),
    volume_mounts=WORKSPACE,
)
model = initializer(
    "model-initializer",
    "ghcr.io/kubeflow/trainer/model-initializer:v2.3.0",
    "hf://meta-llama/Llama-3.2-1B-Instruct",
    "cpu-queue",
    env={"IGNORE_PATTERNS": "*.pth"},
    secret="hf-token",
    resources=Resources(cpu_request=4, memory_request="16Gi"),
    volume_mounts=WORKSPACE,
)
node = trainer(
    "node",
    "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    ["torchrun", "/workspace/recipes/finetune.py"],
    "gpu-queue",
    nodes=2,
    gpus_per_node=8,
    nproc_per_node=8,
    args=["--epochs", "3", "--lora-rank", "16"],
    env={"NCCL_DEBUG": "WARN"},
    resources=Resources(cpu_request=32, memory_request="256Gi"),
    volume_mounts=WORKSPACE,
    retry=2,
)
exporter = post_processor(
    "model-exporter",
    "ghcr.io/example/model-exporter:1.4",
    ["python", "-m", "exporter", "--merge-lora", "--input", "/workspace/output"],
    "cpu-queue",
    args=["--push", "hf://acme/llama-3.2-1b-support"],
    resources=Resources(cpu_request=8, memory_request="64Gi"),
    volume_mounts=WORKSPACE,
    retry=3,
)

with Workflow(
    generate_name="llama-ft-",
    namespace="ml-team",
    entrypoint="main",
    volume_claim_templates=[
        m.PersistentVolumeClaim(
            metadata=m.ObjectMeta(name="workspace"),
            spec=m.PersistentVolumeClaimSpec(
                access_modes=["ReadWriteMany"],
                resources=m.VolumeResourceRequirements(requests={"storage": m.Quantity("200Gi")}),
            ),
        )
    ],
) as w:
    notify = Container(
        name="notify",
        image="curlimages/curl:8.11.1",
        command=["curl", "-fsS", "-d", "fine-tune {{workflow.name}} done"],
        args=["https://hooks.example.com/ml-team"],
    )
    with DAG(name="main"):
        [dataset(), model()] >> node(name="train") >> exporter() >> notify()
    w.on_exit = exit_cleanup(dataset, model, node, exporter)

if __name__ == "__main__":
    print(w.to_yaml())
