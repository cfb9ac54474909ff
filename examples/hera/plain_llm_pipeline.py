"""The pipeline of ``llm_pipeline.py`` in plain Hera, without trainweave: Kueue's wiring by hand.

Same steps, queues, gangs and order as ``llm_pipeline.py``, and the same Workflow for what Kueue
and Argo act on (``tests/unit/test_hera_plain.py`` compares the two renders): each step a pod
group on its own queue, the trainer's stable DNS and torch env, retries that do not count
preemption, and an exit handler that releases a failed run's Workloads. It leaves out
trainweave's bookkeeping labels (``trainweave.io/*``, JobSet/Trainer look-alikes), which neither
acts on. Run it to print the Workflow: ``python examples/hera/plain_llm_pipeline.py``.
"""

import json
from typing import Any

from hera.workflows import (
    DAG,
    Container,
    ContainerNode,
    ContainerSet,
    Env,
    FieldEnv,
    Parameter,
    Resource,
    Resources,
    RetryStrategy,
    SecretEnvFrom,
    Workflow,
)
from hera.workflows import models as m

NAMESPACE = "ml-team"
WF = "{{workflow.name}}"
NODES = 2  # the trainer gang: also PET_NNODES and the trainer's pod-group total count
GPUS = 8  # per node: also PET_NPROC_PER_NODE
STEPS = ["dataset-initializer", "model-initializer", "node", "model-exporter"]
WORKSPACE = [m.VolumeMount(name="workspace", mount_path="/workspace")]


def group(step: str) -> str:
    """The step's Kueue pod group, which is also the name of its Workload."""
    return f"{WF}-{step}-a0"


def retry(budget: int) -> RetryStrategy:
    """``budget`` retries per pod, plus up to 10 that a preempted pod (node ``Error``, or exit 143
    from SIGTERM) gets without spending the budget."""
    preempted = (
        "lastRetry.status == 'Error' || "
        "lastRetry.message matches '^[^:]+: [^(]*[(]exit code (143)[)]'"
    )
    return RetryStrategy(
        limit=budget + 10,
        retry_policy="Always",
        expression=f"({preempted}) || (asInt(retries) < {budget})",
        backoff=m.Backoff(duration="10s", factor=2, cap="6m"),
    )


def gang(
    name: str, queue: str, budget: int, pods: int = 1, dns: bool = False, **container: Any
) -> DAG:
    """Pod template ``name`` (one pod of the group) and DAG ``step-<name>`` running ``pods`` of it."""
    hostname = f"{WF}-{name}-{{{{inputs.parameters.replica}}}}-{{{{inputs.parameters.index}}}}"
    with ContainerSet(
        name=name,
        labels={
            "kueue.x-k8s.io/queue-name": queue,
            "kueue.x-k8s.io/pod-group-name": group(name),
            # the pod's rank in its Kueue PodSet: TAS puts rank r on the r-th assigned slot
            "kueue.x-k8s.io/pod-group-pod-index": "{{inputs.parameters.rank}}",
            "jobset.sigs.k8s.io/jobset-name": WF,
        },
        annotations={
            "kueue.x-k8s.io/pod-group-total-count": str(pods),
            "batch.kubernetes.io/job-completion-index": "{{inputs.parameters.index}}",
        },
        inputs=[Parameter(name="replica"), Parameter(name="index"), Parameter(name="rank")],
        pod_spec_patch=(
            json.dumps({"hostname": hostname, "subdomain": WF}, separators=(",", ":"))
            if dns
            else None
        ),
        volume_mounts=WORKSPACE,
        retry_strategy=retry(budget),
    ) as pod:
        ContainerNode(name=name, **container)
    with DAG(name=f"step-{name}", fail_fast=True) as step:
        for index in range(pods):
            pod(
                name=f"{name}-0-{index}",
                arguments={"replica": "0", "index": str(index), "rank": str(index)},
            )
        if dns:
            service(name="service")
    return step


with Workflow(
    generate_name="llama-ft-",
    namespace=NAMESPACE,
    entrypoint="main",
    on_exit="release-workloads",
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
    service = Resource(
        name="headless-service",
        action="apply",
        set_owner_reference=True,
        manifest=f"""apiVersion: v1
kind: Service
metadata:
  name: '{WF}'
  namespace: {NAMESPACE}
spec:
  clusterIP: None
  selector:
    jobset.sigs.k8s.io/jobset-name: '{WF}'
  publishNotReadyAddresses: true
""",
    )
    dataset = gang(
        "dataset-initializer",
        "cpu-queue",
        budget=6,
        image="ghcr.io/kubeflow/trainer/dataset-initializer:v2.3.0",
        env=[Env(name="STORAGE_URI", value="hf://acme/support-tickets")],
        env_from=[SecretEnvFrom(name="hf-token")],
        resources=Resources(cpu_request=4, memory_request="16Gi"),
    )
    model = gang(
        "model-initializer",
        "cpu-queue",
        budget=6,
        image="ghcr.io/kubeflow/trainer/model-initializer:v2.3.0",
        env=[
            Env(name="STORAGE_URI", value="hf://meta-llama/Llama-3.2-1B-Instruct"),
            Env(name="IGNORE_PATTERNS", value="*.pth"),
        ],
        env_from=[SecretEnvFrom(name="hf-token")],
        resources=Resources(cpu_request=4, memory_request="16Gi"),
    )
    node = gang(
        "node",
        "gpu-queue",
        budget=2,
        pods=NODES,
        dns=True,
        image="pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime",
        command=["torchrun", "/workspace/recipes/finetune.py"],
        args=["--epochs", "3", "--lora-rank", "16"],
        env=[
            Env(name="NCCL_DEBUG", value="WARN"),
            Env(name="PET_NNODES", value=str(NODES)),
            Env(name="PET_NPROC_PER_NODE", value=str(GPUS)),
            FieldEnv(
                name="PET_NODE_RANK",
                field_path="metadata.annotations['batch.kubernetes.io/job-completion-index']",
            ),
            Env(name="PET_MASTER_ADDR", value=f"{WF}-node-0-0.{WF}"),
            Env(name="PET_MASTER_PORT", value="29500"),
        ],
        ports=[m.ContainerPort(container_port=29500)],
        resources=Resources(cpu_request=32, memory_request="256Gi", gpus=GPUS),
    )
    exporter = gang(
        "model-exporter",
        "cpu-queue",
        budget=3,
        image="ghcr.io/example/model-exporter:1.4",
        command=["python", "-m", "exporter", "--merge-lora", "--input", "/workspace/output"],
        args=["--push", "hf://acme/llama-3.2-1b-support"],
        resources=Resources(cpu_request=8, memory_request="64Gi"),
    )
    notify = Container(
        name="notify",
        image="curlimages/curl:8.11.1",
        command=["curl", "-fsS", "-d", "fine-tune {{workflow.name}} done"],
        args=["https://hooks.example.com/ml-team"],
    )
    release = Resource(
        name="release-workload",
        action="delete",
        flags=["--ignore-not-found"],
        inputs=[Parameter(name="workload")],
        manifest=f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: '{{{{inputs.parameters.workload}}}}'
  namespace: {NAMESPACE}
""",
    )
    with DAG(name="release-workloads"):
        release(
            name="release",
            arguments={"workload": "{{item}}"},
            with_items=[group(s) for s in STEPS],
            when="'{{workflow.status}}' != 'Succeeded'",
        )
    with DAG(name="main"):
        (
            [dataset(name="dataset-initializer"), model(name="model-initializer")]
            >> node(name="train")
            >> exporter(name="model-exporter")
            >> notify()
        )

if __name__ == "__main__":
    print(w.to_yaml())
