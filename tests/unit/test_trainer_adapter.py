"""TrainJob + runtime -> Pipeline: steps, roles, queues, overrides, torch and MPI env."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_runtime, make_trainjob
from trainweave.adapters.trainjob.policies.mpi import MpiPart
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import StepRole
from trainweave.model import Pipeline

Json = dict[str, Any]
EXAMPLES = Path(__file__).parents[2] / "examples"


def pipeline(tj: Json, rt: Json, **kwargs: Any) -> Pipeline:
    return to_pipeline(parse_trainjob(tj), parse_runtime(rt), **kwargs)


def example(name: str) -> Pipeline:
    folder = EXAMPLES / name
    return pipeline(
        yaml.safe_load((folder / "trainjob.yaml").read_text()),
        yaml.safe_load((folder / "runtime.yaml").read_text()),
    )


def env_of(container: Json) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def test_llm_finetune_steps_roles_queues_and_gang() -> None:
    p = example("llm-finetune")
    shape = [(s.name, s.role, s.depends_on, s.queue, s.pods) for s in p.steps]
    assert shape == [
        ("dataset-initializer", StepRole.INITIALIZER, (), "cpu-queue", 1),
        ("model-initializer", StepRole.INITIALIZER, (), "cpu-queue", 1),
        ("node", StepRole.TRAINER, ("dataset-initializer", "model-initializer"), "gpu-queue", 2),
        ("model-exporter", StepRole.POST_PROCESSOR, ("node",), "cpu-queue", 1),
    ]


def test_llm_finetune_trainjob_fields_applied() -> None:
    p = example("llm-finetune")
    data = p.step("dataset-initializer").jobs[0].main_container
    assert env_of(data)["STORAGE_URI"] == "hf://acme/support-tickets"
    assert data["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    model = p.step("model-initializer").jobs[0].main_container
    assert env_of(model)["IGNORE_PATTERNS"] == "*.pth"
    node = p.step("node").jobs[0].main_container
    assert node["args"] == ["--epochs", "3", "--lora-rank", "16"]
    assert node["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    env = env_of(node)
    assert env["PET_NNODES"] == "2"
    assert env["PET_NPROC_PER_NODE"] == "8"
    assert env["PET_MASTER_ADDR"] == "llama-support-ft-node-0-0.llama-support-ft"
    assert env["PET_MASTER_PORT"] == "29500"
    assert env["NCCL_DEBUG"] == "WARN"
    assert {"containerPort": 29500} in node["ports"]
    assert p.step("node").jobs[0].retry.budget == 2
    assert p.pvcs[0]["metadata"]["name"] == "initializer-llama-support-ft"


@pytest.mark.parametrize(
    ("resources", "nproc", "expected"),
    [
        pytest.param({"limits": {"nvidia.com/gpu": "4"}}, None, "auto", id="gpu-auto"),
        pytest.param({"requests": {"cpu": "6"}}, None, "6", id="cpu-count"),
        pytest.param({"limits": {"cpu": "500m"}}, None, "1", id="fractional-cpu-at-least-1"),
        pytest.param({"limits": {"nvidia.com/gpu": "4"}}, 2, "2", id="explicit"),
    ],
)
def test_nproc_per_node(resources: Json, nproc: int | None, expected: str) -> None:
    trainer: Json = {"resourcesPerNode": resources}
    if nproc:
        trainer["numProcPerNode"] = nproc
    p = pipeline(make_trainjob(trainer=trainer), make_runtime().build())
    assert env_of(p.step("node").jobs[0].main_container)["PET_NPROC_PER_NODE"] == expected


def test_mpi_ready_edge_joins_one_gang_with_daemon_nodes() -> None:
    p = example("mpi")
    (step,) = p.steps
    assert [(j.name, j.pods, j.daemon) for j in step.jobs] == [
        ("node", 2, True),
        ("launcher", 1, False),
    ]
    assert step.pods == 3 and isinstance(p.policy, MpiPart) and p.policy.slots == 4
    launcher = step.jobs[1].main_container
    assert env_of(launcher)["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"
    assert {"name": "mpi-hostfile", "mountPath": "/etc/mpi"} in launcher["volumeMounts"]


def test_queue_annotation_overrides_runtime_label() -> None:
    tj = make_trainjob()
    tj["metadata"]["annotations"] = {"queue.trainweave.io/node": "team-a-gpu"}
    assert pipeline(tj, make_runtime().build()).step("node").queue == "team-a-gpu"


def test_default_queue_fills_steps_without_one() -> None:
    rt = make_runtime()
    del rt.job("node")["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert (
        pipeline(make_trainjob(), rt.build(), default_queue="fallback").step("node").queue
        == "fallback"
    )


@pytest.mark.parametrize(
    ("runtime_label", "annotation", "trainjob_label", "default", "want"),
    [
        ("rt-q", "ann-q", "tj-q", "dflt", "ann-q"),
        ("rt-q", None, "tj-q", "dflt", "rt-q"),
        (None, None, "tj-q", "dflt", "tj-q"),
        (None, None, None, "dflt", "dflt"),
    ],
    ids=["annotation-first", "runtime-label", "trainjob-label", "default-queue"],
)
def test_queue_precedence(
    runtime_label: str | None,
    annotation: str | None,
    trainjob_label: str | None,
    default: str,
    want: str,
) -> None:
    """Per step: annotation > runtime job label > TrainJob label (the SDK's Labels) > default."""
    rt = make_runtime()
    labels = rt.job("node")["template"]["metadata"]["labels"]
    labels.pop("kueue.x-k8s.io/queue-name")
    if runtime_label:
        labels["kueue.x-k8s.io/queue-name"] = runtime_label
    tj = make_trainjob()
    if annotation:
        tj["metadata"]["annotations"] = {"queue.trainweave.io/node": annotation}
    if trainjob_label:
        tj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": trainjob_label}
    assert pipeline(tj, rt.build(), default_queue=default).step("node").queue == want


def test_trainjob_priority_class_reaches_every_step_unless_the_job_names_one() -> None:
    rt = make_runtime().with_initializers()
    rt.job("node")["template"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    tj = make_trainjob()
    tj["metadata"]["labels"] = {"kueue.x-k8s.io/priority-class": "batch"}
    p = pipeline(tj, rt.build())
    assert {s.name: s.priority_class for s in p.steps} == {
        "dataset-initializer": "batch",
        "model-initializer": "batch",
        "node": "urgent",
    }


def test_runtime_patch_applies_to_pod_and_queue_label() -> None:
    tj = make_trainjob(
        runtimePatches=[
            {
                "manager": "example.com/tuner",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "metadata": {
                                            "labels": {"kueue.x-k8s.io/queue-name": "patched"}
                                        },
                                        "spec": {
                                            "template": {
                                                "spec": {
                                                    "nodeSelector": {"gpu": "h100"},
                                                    "tolerations": [
                                                        {"key": "gpu", "operator": "Exists"}
                                                    ],
                                                }
                                            }
                                        },
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ]
    )
    p = pipeline(tj, make_runtime().build())
    spec = p.step("node").jobs[0].pod_template["spec"]
    assert (p.step("node").queue, spec["nodeSelector"], spec["tolerations"]) == (
        "patched",
        {"gpu": "h100"},
        [{"key": "gpu", "operator": "Exists"}],
    )


def test_multi_replica_job_pods_and_hostnames() -> None:
    rt = make_runtime().with_exporter()
    rt.job("exporter")["replicas"] = 2
    rt.job_spec("exporter").update(parallelism=3, completions=3, backoffLimit=0)
    p = pipeline(make_trainjob(), rt.build())
    job = p.step("exporter").jobs[0]
    assert (job.replicas, job.pods_per_replica, job.pods) == (2, 3, 6)
