"""Ready-made pipelines built from the step builders.

``llm_finetune_pipeline`` is the Hera twin of ``examples/llm-finetune``: dataset
and model initializers in parallel on a CPU queue, a multi-node torch trainer
on a GPU queue after both, a model exporter on the CPU queue after the trainer,
each step its own Kueue pod group. Its templates equal ``trainweave render``'s
for that example, except that the Workflow also applies its headless Service
(``service`` task in the trainer's step) and, unless ``storage_claim`` names an
existing PVC, makes the shared ``initializer`` volume from a
``volumeClaimTemplate`` (Argo names it ``<workflow>-initializer`` and deletes it
with the run) instead of the runtime's ``volumeClaimPolicies`` PVC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hera.workflows import DAG, Workflow
from hera.workflows import models as m

from trainweave import labels as L
from trainweave.model import ExitCodeRule, RetryPolicy
from trainweave.workflows.gang import exit_cleanup
from trainweave.workflows.steps import (
    EnvLike,
    ResourcesLike,
    initializer,
    post_processor,
    trainer,
)

VOLUME = "initializer"
DATASET_IMAGE = "ghcr.io/kubeflow/trainer/dataset-initializer:v2.3.0"
MODEL_IMAGE = "ghcr.io/kubeflow/trainer/model-initializer:v2.3.0"
INITIALIZER_RESOURCES: Mapping[str, Any] = {"requests": {"cpu": "4", "memory": "16Gi"}}
EXPORTER_RESOURCES: Mapping[str, Any] = {"requests": {"cpu": "8", "memory": "64Gi"}}
TRAINER_RETRY = RetryPolicy(
    2,
    (
        ExitCodeRule("FailJob", "In", (1, 2), container="node"),
        ExitCodeRule("Ignore", disruption=True),
    ),
)
"""Two retries per node; exit codes 1 and 2 of ``node`` fail at once; preemption is not
counted."""


def llm_finetune_pipeline(
    name: str,
    namespace: str,
    *,
    dataset_uri: str,
    model_uri: str,
    trainer_image: str,
    cpu_queue: str,
    gpu_queue: str,
    trainer_command: Sequence[str] = ("torchrun", "/workspace/recipes/finetune.py"),
    trainer_args: Sequence[str] = (),
    trainer_env: EnvLike | None = None,
    trainer_resources: ResourcesLike | None = None,
    nodes: int = 2,
    gpus_per_node: int = 8,
    nproc_per_node: int | None = None,
    trainer_retry: int | RetryPolicy = TRAINER_RETRY,
    dataset_secret: str | None = None,
    model_secret: str | None = None,
    dataset_env: EnvLike | None = None,
    model_env: EnvLike | None = None,
    dataset_image: str = DATASET_IMAGE,
    model_image: str = MODEL_IMAGE,
    initializer_resources: ResourcesLike = INITIALIZER_RESOURCES,
    exporter_image: str | None = None,
    exporter_command: Sequence[str] = (),
    exporter_resources: ResourcesLike = EXPORTER_RESOURCES,
    exporter_retry: int | RetryPolicy = 3,
    mount_path: str = "/workspace",
    storage_claim: str | None = None,
    storage_size: str = "200Gi",
    storage_class: str | None = None,
    service_account: str | None = None,
    cleanup: bool = True,
) -> Workflow:
    """The LLM fine-tuning Workflow; no exporter step when ``exporter_image`` is None.

    ``nproc_per_node`` defaults to ``gpus_per_node`` (Trainer's ``numProcPerNode``).
    """
    mounts = [{"name": VOLUME, "mountPath": mount_path}]
    volumes = []
    claims = None
    if storage_claim:
        volumes = [{"name": VOLUME, "persistentVolumeClaim": {"claimName": storage_claim}}]
    else:
        claims = [_claim(storage_size, storage_class)]
    dataset = initializer(
        "dataset-initializer",
        dataset_image,
        dataset_uri,
        cpu_queue,
        env=dataset_env,
        secret=dataset_secret,
        resources=initializer_resources,
        volume_mounts=mounts,
        volumes=volumes,
        dns=True,
    )
    model = initializer(
        "model-initializer",
        model_image,
        model_uri,
        cpu_queue,
        env=model_env,
        secret=model_secret,
        resources=initializer_resources,
        volume_mounts=mounts,
        volumes=volumes,
        dns=True,
    )
    node = trainer(
        "node",
        trainer_image,
        trainer_command,
        gpu_queue,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        nproc_per_node=nproc_per_node or gpus_per_node or None,
        resources=trainer_resources,
        env=trainer_env,
        args=trainer_args,
        volume_mounts=mounts,
        volumes=volumes,
        retry=trainer_retry,
    )
    steps = [dataset, model, node]
    labels = {
        L.TRAINJOB: name,
        L.COMPONENT: "workflow",
        L.MANAGED_BY: L.MANAGER,
        L.ATTEMPT: "0",
    }
    with Workflow(
        name=name,
        namespace=namespace,
        entrypoint="main",
        labels=labels,
        service_account_name=service_account,
        volume_claim_templates=claims,
    ) as w:
        with DAG(name="main") as main:
            inits = (dataset(), model())
            train = node()
            for task in inits:
                task >> train
            if exporter_image is not None:
                export = post_processor(
                    "model-exporter",
                    exporter_image,
                    exporter_command,
                    cpu_queue,
                    resources=exporter_resources,
                    volume_mounts=mounts,
                    volumes=volumes,
                    retry=exporter_retry,
                    dns=True,
                )
                steps.append(export)
                train >> export()
        main.fail_fast = True
        if cleanup:
            w.on_exit = exit_cleanup(*steps)
    return w


def _claim(size: str, storage_class: str | None) -> m.PersistentVolumeClaim:
    return m.PersistentVolumeClaim(
        metadata=m.ObjectMeta(name=VOLUME),
        spec=m.PersistentVolumeClaimSpec(
            access_modes=["ReadWriteMany"],
            resources=m.VolumeResourceRequirements(requests={"storage": m.Quantity(size)}),
            storage_class_name=storage_class,
        ),
    )
