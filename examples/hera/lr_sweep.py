"""A learning-rate sweep: trainweave steps beside plain Hera templates, a parameter, a ``when``.

A plain Hera ``prepare`` container and the dataset initializer (CPU queue) run first; then the
trainer fans out over the learning rates (``with_items``): each rate is its own 2-node gang on the
GPU queue, one Kueue pod group ``<workflow>-node-<rate>-a0`` admitted on its own, its rate in
``{{inputs.parameters.instance}}``. The exporter runs only ``when`` the Workflow parameter
``export`` is ``true``. Run it to print the Workflow: ``python examples/hera/lr_sweep.py``.
"""

from hera.workflows import DAG, Container, Parameter, Resources, Workflow
from hera.workflows import models as m

from trainweave.workflows import initializer, post_processor, trainer

RATES = ["1e-4", "3e-4"]
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
node = trainer(
    "node",
    "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
    ["torchrun", "/workspace/recipes/finetune.py"],
    "gpu-queue",
    nodes=2,
    gpus_per_node=4,
    nproc_per_node=4,
    args=["--lr", "{{inputs.parameters.instance}}", "--epochs", "{{workflow.parameters.epochs}}"],
    resources=Resources(cpu_request=16, memory_request="128Gi"),
    volume_mounts=WORKSPACE,
)
exporter = post_processor(
    "model-exporter",
    "ghcr.io/example/model-exporter:1.4",
    ["python", "-m", "exporter", "--best-of", "/workspace/output"],
    "cpu-queue",
    resources=Resources(cpu_request=8, memory_request="64Gi"),
    volume_mounts=WORKSPACE,
)

with Workflow(
    generate_name="lr-sweep-",
    namespace="ml-team",
    entrypoint="main",
    arguments=[Parameter(name="epochs", value="3"), Parameter(name="export", value="true")],
    volumes=[
        m.Volume(
            name="workspace",
            persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(claim_name="ml-workspace"),
        )
    ],
) as w:
    prepare = Container(
        name="prepare",
        image="alpine/git:2.47.1",
        command=["git", "clone", "https://example.com/acme/recipes", "/workspace/recipes"],
        volume_mounts=WORKSPACE,
    )
    with DAG(name="main"):
        train = node(name="train", with_items=RATES)
        [prepare(), dataset()] >> train >> exporter(when="{{workflow.parameters.export}} == true")

if __name__ == "__main__":
    print(w.to_yaml())
