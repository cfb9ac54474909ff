"""The TrainJobs the Kubeflow SDK 0.5 sends for each runtime: run inside the SDK's own virtualenv.

Drives the SDK's real ``KubernetesBackend.train`` (its TrainJob builder, options and runtime
parsing) against a recording CustomObjectsApi that serves the given runtimes and records every
created TrainJob. Usage: ``python sdk_trainjobs.py RUNTIME.json`` (a JSON list of runtime
objects); prints a JSON list of ``{"case", "runtime", "trainJob"}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from kubeflow.trainer.backends.kubernetes.backend import KubernetesBackend
from kubeflow.trainer.options import kubernetes as opt
from kubeflow.trainer.options.common import Name
from kubeflow.trainer.types import types
from kubernetes.client import ApiException

Json = dict[str, Any]


def train_fn(lr: float = 0.1) -> None:
    """A user's training function, as the SDK packs it into the container command."""
    print("training with", lr)


class _Done:
    def __init__(self, value: Json) -> None:
        self.value = value

    def get(self, timeout: float | None = None) -> Json:
        return self.value


class RecordingApi:
    """The CustomObjectsApi calls ``train`` makes: runtime reads served, creates recorded."""

    def __init__(self, runtimes: list[Json]) -> None:
        self.runtimes = runtimes
        self.created: list[Json] = []

    def get_namespaced_custom_object(self, group, version, ns, plural, name, **kw):  # type: ignore[no-untyped-def]
        for rt in self.runtimes:
            if rt["kind"] == "TrainingRuntime" and rt["metadata"]["name"] == name:
                return _Done(rt)
        raise ApiException(status=404)

    def get_cluster_custom_object(self, group, version, plural, name, **kw):  # type: ignore[no-untyped-def]
        for rt in self.runtimes:
            if rt["kind"] == "ClusterTrainingRuntime" and rt["metadata"]["name"] == name:
                return _Done(rt)
        raise ApiException(status=404)

    def create_namespaced_custom_object(self, group, version, ns, plural, body, **kw):  # type: ignore[no-untyped-def]
        self.created.append(body)
        return body


def backend(api: RecordingApi) -> KubernetesBackend:
    b = KubernetesBackend.__new__(KubernetesBackend)
    b.custom_api = api
    b.namespace = "default"
    return b


def _patch(env: bool) -> opt.RuntimePatch:
    """A RuntimePatch as SDK users write it: a mount, tolerations (and env, which upstream
    forbids on the trainer's node container) on the trainer's node."""
    container = opt.ContainerPatch(
        name="node",
        env=[{"name": "EXTRA", "value": "1"}] if env else None,
        volume_mounts=[{"name": "scratch", "mountPath": "/scratch"}],
        security_context={"runAsUser": 1000},
    )
    pod = opt.PodSpecPatch(
        containers=[container],
        volumes=[{"name": "scratch", "emptyDir": {}}],
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        node_selector={"pool": "gpu"},
    )
    rjob = opt.ReplicatedJobPatch(
        name="node",
        template=opt.JobTemplatePatch(
            spec=opt.JobSpecPatch(template=opt.PodTemplatePatch(spec=pod))
        ),
    )
    spec = opt.JobSetSpecPatch(replicated_jobs=[rjob])
    return opt.RuntimePatch(
        training_runtime_spec=opt.TrainingRuntimeSpecPatch(
            template=opt.JobSetTemplatePatch(spec=spec)
        )
    )


def _initializer() -> types.Initializer:
    return types.Initializer(
        dataset=types.HuggingFaceDatasetInitializer(
            storage_uri="hf://tatsu-lab/alpaca", access_token="hf_token"
        ),
        model=types.S3ModelInitializer(
            storage_uri="s3://models/llama", endpoint="https://s3.local", region="eu-west-1"
        ),
    )


def _torchtune(peft: types.LoraConfig | None, nodes: int) -> types.BuiltinTrainer:
    return types.BuiltinTrainer(
        config=types.TorchTuneConfig(
            dtype=types.DataType.BF16,
            batch_size=2,
            epochs=1,
            num_nodes=nodes,
            peft_config=peft,
            resources_per_node={"gpu": 2},
        )
    )


def shapes(builtin: bool) -> list[tuple[str, dict[str, Any]]]:
    """(case name, train() keyword arguments) for a runtime of the given trainer type."""
    if builtin:
        return [
            ("torchtune-full", {"trainer": _torchtune(None, 1)}),
            (
                "torchtune-lora",
                {"trainer": _torchtune(types.LoraConfig(lora_rank=8, lora_alpha=16), 1)},
            ),
            (
                "torchtune-qlora-2nodes",
                {"trainer": _torchtune(types.LoraConfig(lora_rank=4, quantize_base=True), 2)},
            ),
            (
                "torchtune-dora-init",
                {
                    "trainer": _torchtune(types.LoraConfig(use_dora=True), 1),
                    "initializer": _initializer(),
                },
            ),
        ]
    return [
        (
            "custom-fn-2nodes-fractional-cpu",
            {
                "trainer": types.CustomTrainer(
                    func=train_fn,
                    func_args={"lr": 0.01},
                    num_nodes=2,
                    resources_per_node={"cpu": "1500m", "memory": "2Gi"},
                    env={"SEED": "7"},
                )
            },
        ),
        (
            "custom-fn-gpu",
            {
                "trainer": types.CustomTrainer(
                    func=train_fn, packages_to_install=["numpy"], resources_per_node={"gpu": 2}
                )
            },
        ),
        (
            "container-1node-init",
            {
                "trainer": types.CustomTrainerContainer(
                    image="ghcr.io/me/train:1", num_nodes=1, env={"A": "b"}
                ),
                "initializer": _initializer(),
            },
        ),
        (
            "container-patch-labels",
            {
                "trainer": types.CustomTrainerContainer(image="ghcr.io/me/train:1", num_nodes=2),
                "options": [
                    opt.Labels({"kueue.x-k8s.io/queue-name": "gpu-queue", "team": "a"}),
                    opt.Annotations({"note": "x"}),
                    _patch(env=False),
                ],
            },
        ),
        (
            "container-patch-env",
            {
                "trainer": types.CustomTrainerContainer(image="ghcr.io/me/train:1"),
                "options": [_patch(env=True)],
            },
        ),
        ("no-trainer", {}),
    ]


def main() -> None:
    runtimes: list[Json] = json.loads(Path(sys.argv[1]).read_text())
    out = []
    for rt in runtimes:
        builtin = (rt["metadata"].get("labels") or {}).get(
            "trainer.kubeflow.org/framework"
        ) == "torchtune"
        for case, kwargs in shapes(builtin):
            api = RecordingApi(runtimes)
            # TrainJob names must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ (the CRD's CEL rule)
            name = f"{rt['metadata']['name'][:20].replace('.', '-').rstrip('-')}-{len(out)}"
            options = [*kwargs.pop("options", []), Name(name)]
            backend(api).train(runtime=rt["metadata"]["name"], options=options, **kwargs)
            (job,) = api.created
            out.append({"case": case, "runtime": rt["metadata"]["name"], "trainJob": job})
    json.dump(out, sys.stdout, indent=1, default=str)


if __name__ == "__main__":
    main()
