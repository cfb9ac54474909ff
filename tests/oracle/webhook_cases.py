"""Inputs Kubeflow Trainer v2.3.0 refuses at admission, one per ``Validate`` branch, with its field.

Each case is built to hit exactly one branch of upstream's admission checks and names the field
upstream's ``field.ErrorList`` gives there:

- ``runtime-webhook``: ``pkg/webhooks/trainingruntime_webhook.go`` ``validateReplicatedJobs``
  (also ``clustertrainingruntime_webhook.go``), run when the runtime is created;
- ``trainjob-webhook``: ``pkg/webhooks/trainjob_webhook.go`` ``ValidateCreate``'s own check (a
  runtimeRef naming no runtime kind), before it calls the runtime's ``ValidateObjects``;
- ``crd``: the TrainingRuntime CRD's CEL rules (``x-kubernetes-validations`` of
  ``manifests/base/crds``), run by the kube-apiserver before any webhook;
- ``torch``, ``torchtune``, ``mpi``, ``xgboost``, ``jobset``: the ``Validate`` of
  ``pkg/runtime/framework/plugins/<name>``, run by the TrainJob webhook through
  ``pkg/runtime/core`` ``ValidateObjects`` -> ``framework/core`` ``RunCustomValidationPlugins``.

``tests/unit/test_webhook_cases.py`` runs ``hack/oracle`` (upstream's own code) on every case and
checks that upstream refuses naming ``field`` and that trainweave refuses naming ``field`` or a field
under it; ``tests/unit/test_webhook_refusals.py`` checks trainweave's side alone (no Go). The base
inputs, which both accept, are checked too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]
NAMESPACE = "default"
ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
MANAGER = "example.com/test"


@dataclass(frozen=True)
class WebhookCase:
    """``edit`` applied to (TrainJob, runtime) of ``base``; upstream refuses naming ``field``."""

    name: str
    judge: str  # runtime-webhook, crd, or the plugin whose Validate refuses
    field: str
    edit: Callable[[Json, Json], None]
    base: str = "torch"  # torch, torchtune, mpi, xgboost
    # set when upstream's refusal names no field, only says this (the TrainJob webhook's
    # "unsupported runtime"); ``field`` is then the field trainweave names
    unnamed: str = ""
    # False: a branch upstream's code has but never reaches (``unreached`` says why); upstream
    # accepts the input, trainweave refuses it naming ``field`` or a field under it
    reached: bool = True

    def inputs(self) -> tuple[Json, Json]:
        """(TrainJob, runtime) of the case."""
        trainjob, runtime = BASES[self.base]()
        self.edit(trainjob, runtime)
        return trainjob, runtime


# --- the accepted bases ------------------------------------------------------------------------


def _job(name: str, ancestor: str | None, containers: list[Json], **pod: Any) -> Json:
    meta = {"labels": {ANCESTOR: ancestor}} if ancestor else {}
    return {
        "name": name,
        "template": {
            "metadata": meta,
            "spec": {"template": {"spec": {"containers": containers, **pod}}},
        },
    }


_MOUNT = [{"name": "initializer", "mountPath": "/workspace"}]
_VOLUMES = [{"name": "initializer", "emptyDir": {}}]


def _initializer(name: str) -> Json:
    return _job(
        name, name, [{"name": name, "image": "init:1", "volumeMounts": _MOUNT}], volumes=_VOLUMES
    )


def _runtime(name: str, ml_policy: Json, jobs: list[Json]) -> Json:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"mlPolicy": ml_policy, "template": {"spec": {"replicatedJobs": jobs}}},
    }


def _trainjob(runtime: str, trainer: Json) -> Json:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj", "namespace": NAMESPACE},
        "spec": {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime"}, "trainer": trainer},
    }


def _node(**extra: Any) -> Json:
    return {"name": "node", "image": "trainer:1", "volumeMounts": _MOUNT, **extra}


def torch_base() -> tuple[Json, Json]:
    """A torch runtime with both initializers; a TrainJob using both."""
    runtime = _runtime(
        "torch-rt",
        {"numNodes": 1, "torch": {}},
        [
            _initializer("dataset-initializer"),
            _initializer("model-initializer"),
            _job("node", "trainer", [_node()], volumes=_VOLUMES),
        ],
    )
    trainjob = _trainjob("torch-rt", {"numNodes": 2, "env": [{"name": "SEED", "value": "1"}]})
    trainjob["spec"]["initializer"] = {
        "dataset": {"storageUri": "hf://org/data"},
        "model": {"storageUri": "hf://org/model"},
    }
    return trainjob, runtime


def torchtune_base() -> tuple[Json, Json]:
    """A torchtune runtime (the model comes from its name) and a one-GPU ``tune run``."""
    command = ["tune", "run", "output_dir=/workspace/output", "tokenizer.path=/workspace/model"]
    runtime = _runtime(
        "torchtune-llama3.2-1b",
        {"numNodes": 1, "torch": {}},
        [_job("node", "trainer", [_node(command=command)], volumes=_VOLUMES)],
    )
    trainer = {"command": ["tune", "run"], "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}}}
    return _trainjob("torchtune-llama3.2-1b", trainer), runtime


def mpi_base() -> tuple[Json, Json]:
    """An MPI runtime whose launcher runs as a node; two nodes."""
    runtime = _runtime(
        "mpi-rt",
        {"numNodes": 1, "mpi": {"runLauncherAsNode": True}},
        [
            _job("launcher", None, [_node()], volumes=_VOLUMES),
            _job("node", "trainer", [_node()], volumes=_VOLUMES),
        ],
    )
    return _trainjob("mpi-rt", {"numNodes": 2}), runtime


def xgboost_base() -> tuple[Json, Json]:
    runtime = _runtime(
        "xgboost-rt",
        {"numNodes": 1, "xgboost": {}},
        [_job("node", "trainer", [_node()], volumes=_VOLUMES)],
    )
    return _trainjob("xgboost-rt", {"numNodes": 2}), runtime


BASES: dict[str, Callable[[], tuple[Json, Json]]] = {
    "torch": torch_base,
    "torchtune": torchtune_base,
    "mpi": mpi_base,
    "xgboost": xgboost_base,
}


# --- edits ---------------------------------------------------------------------------------------


def _rjobs(runtime: Json) -> list[Json]:
    jobs: list[Json] = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    return jobs


def _pod(runtime: Json, i: int) -> Json:
    pod: Json = _rjobs(runtime)[i]["template"]["spec"]["template"]["spec"]
    return pod


def _set_replicas(i: int) -> Callable[[Json, Json], None]:
    def edit(_: Json, runtime: Json) -> None:
        _rjobs(runtime)[i]["replicas"] = 2

    return edit


def _rename_container(i: int, to: str, *, init: bool = False) -> Callable[[Json, Json], None]:
    """Job ``i``'s first container gets name ``to`` (moved to initContainers with ``init``)."""

    def edit(trainjob: Json, runtime: Json) -> None:
        pod = _pod(runtime, i)
        (first, *rest) = pod["containers"]
        first["name"] = to
        if init:
            pod["initContainers"] = [first]
            pod["containers"] = rest or [{"name": "sidecar", "image": "side:1"}]
        trainjob["spec"].pop("initializer", None)  # jobset.go's checks would refuse it too

    return edit


def _cluster_runtime(trainjob: Json, runtime: Json) -> None:
    runtime["kind"] = "ClusterTrainingRuntime"
    del runtime["metadata"]["namespace"]
    trainjob["spec"]["runtimeRef"]["kind"] = "ClusterTrainingRuntime"
    _rjobs(runtime)[2]["replicas"] = 3


def _claim_policy(**metadata: str) -> Callable[[Json, Json], None]:
    """A volumeClaimPolicies template (named ``claim``) with ``metadata``."""

    def edit(_: Json, runtime: Json) -> None:
        claim = {
            "metadata": {"name": "claim", **metadata},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
        runtime["spec"]["template"]["spec"]["volumeClaimPolicies"] = [{"templates": [claim]}]

    return edit


def _in_order_with_depends_on(_: Json, runtime: Json) -> None:
    runtime["spec"]["template"]["spec"]["startupPolicy"] = {"startupPolicyOrder": "InOrder"}
    _rjobs(runtime)[2]["dependsOn"] = [{"name": "model-initializer", "status": "Complete"}]


def _runtime_ref(**fields: str) -> Callable[[Json, Json], None]:
    def edit(trainjob: Json, _: Json) -> None:
        trainjob["spec"]["runtimeRef"].update(fields)

    return edit


def _policy(**extra: Json) -> Callable[[Json, Json], None]:
    def edit(_: Json, runtime: Json) -> None:
        runtime["spec"]["mlPolicy"].update(extra)

    return edit


def _env(name: str) -> Callable[[Json, Json], None]:
    def edit(trainjob: Json, _: Json) -> None:
        trainjob["spec"]["trainer"]["env"] = [{"name": "SEED", "value": "1"}, {"name": name}]

    return edit


def _trainer(**fields: Any) -> Callable[[Json, Json], None]:
    def edit(trainjob: Json, _: Json) -> None:
        trainjob["spec"]["trainer"].update(fields)

    return edit


def _env_injection(job: str, container: str) -> Callable[[Json, Json], None]:
    targets = [{"jobName": job, "containerNames": [container]}]
    return _policy(torch={"envInjection": {"targets": targets}})


def _rename_runtime(name: str) -> Callable[[Json, Json], None]:
    def edit(trainjob: Json, runtime: Json) -> None:
        runtime["metadata"]["name"] = name
        trainjob["spec"]["runtimeRef"]["name"] = name

    return edit


def _both(*edits: Callable[[Json, Json], None]) -> Callable[[Json, Json], None]:
    def edit(trainjob: Json, runtime: Json) -> None:
        for e in edits:
            e(trainjob, runtime)

    return edit


def _drop_job(name: str) -> Callable[[Json, Json], None]:
    def edit(_: Json, runtime: Json) -> None:
        jobs = _rjobs(runtime)
        jobs[:] = [j for j in jobs if j["name"] != name]

    return edit


def _initializer_container(job_name: str, **container: Any) -> Callable[[Json, Json], None]:
    """The ``job_name`` job's container replaced; the job loses its ancestor label, so only
    jobset.go's check (by job name) refuses it, not the runtime webhook (by label)."""

    def edit(_: Json, runtime: Json) -> None:
        (job,) = [j for j in _rjobs(runtime) if j["name"] == job_name]
        job["template"]["metadata"] = {}
        job["template"]["spec"]["template"]["spec"]["containers"] = [
            {"name": job_name, "image": "init:1", **container}
        ]

    return edit


def _patch(manager: str = MANAGER, **job: Any) -> Callable[[Json, Json], None]:
    """A runtimePatch of one replicatedJob (``name`` and pod spec ``pod``)."""
    pod = job.pop("pod", None)
    rjob: Json = {"name": job["name"]}
    if pod is not None:
        rjob["template"] = {"spec": {"template": {"spec": pod}}}
    patch = {"manager": manager, "trainingRuntimeSpec": {"template": {"spec": {
        "replicatedJobs": [rjob]}}}}  # fmt: skip

    def edit(trainjob: Json, _: Json) -> None:
        trainjob["spec"]["runtimePatches"] = [patch]

    return edit


_RJ = "spec.template.spec.replicatedJobs"
_CONTAINERS = "template.spec.template.spec.containers"

CASES: list[WebhookCase] = [
    # trainingruntime_webhook.go validateReplicatedJobs: an ancestor job runs once ...
    WebhookCase("runtime/trainer-replicas-2", "runtime-webhook", f"{_RJ}[2].replicas",
                _set_replicas(2)),
    WebhookCase("runtime/dataset-initializer-replicas-2", "runtime-webhook", f"{_RJ}[0].replicas",
                _set_replicas(0)),
    WebhookCase("runtime/model-initializer-replicas-2", "runtime-webhook", f"{_RJ}[1].replicas",
                _set_replicas(1)),
    WebhookCase("runtime/cluster-runtime-trainer-replicas-3", "runtime-webhook",
                f"{_RJ}[2].replicas", _cluster_runtime),
    # ... and has its container: node (trainer), or the initializer's own name
    WebhookCase("runtime/trainer-without-node", "runtime-webhook", f"{_RJ}[2].{_CONTAINERS}",
                _rename_container(2, "main")),
    WebhookCase("runtime/trainer-node-only-as-init-container", "runtime-webhook",
                f"{_RJ}[2].{_CONTAINERS}", _rename_container(2, "node", init=True)),
    WebhookCase("runtime/dataset-initializer-without-its-container", "runtime-webhook",
                f"{_RJ}[0].{_CONTAINERS}", _rename_container(0, "fetch")),
    WebhookCase("runtime/model-initializer-without-its-container", "runtime-webhook",
                f"{_RJ}[1].{_CONTAINERS}", _rename_container(1, "fetch")),
    # trainjob_webhook.go ValidateCreate: the runtimeRef's group and kind name a runtime kind
    WebhookCase("trainjob/runtime-ref-of-another-kind", "trainjob-webhook", "spec.runtimeRef.kind",
                _runtime_ref(kind="Runtime"), unnamed="unsupported runtime: Runtime.trainer.kubeflow.org"),
    WebhookCase("trainjob/runtime-ref-of-another-group", "trainjob-webhook",
                "spec.runtimeRef.apiGroup", _runtime_ref(apiGroup="example.com"),
                unnamed="unsupported runtime: TrainingRuntime.example.com"),
    # the TrainingRuntime CRD's CEL rules
    WebhookCase("crd/torch-and-mpi", "crd", "spec.mlPolicy", _policy(mpi={})),
    WebhookCase("crd/torch-and-jax", "crd", "spec.mlPolicy", _policy(jax={})),
    WebhookCase("crd/envinjection-into-node", "crd",
                "spec.mlPolicy.torch.envInjection.targets[0].containerNames",
                _env_injection("node", "node")),
    WebhookCase("crd/volume-claim-template-with-namespace", "crd",
                "spec.template.spec.volumeClaimPolicies[0]", _claim_policy(namespace="other")),
    WebhookCase("crd/in-order-startup-with-depends-on", "crd", "spec.template.spec",
                _in_order_with_depends_on),
    # torch.go Validate
    WebhookCase("torch/envinjection-target-not-found", "torch", "spec.runtimeRef",
                _env_injection("node", "sidecar")),
    WebhookCase("torch/reserved-env", "torch", "spec.trainer.env", _env("PET_NNODES")),
    # torchtune.go validateTorchTune
    WebhookCase("torchtune/unsupported-model", "torchtune", "spec.runtimeRef.name",
                _rename_runtime("torchtune-llama3.1-8b"), base="torchtune"),
    WebhookCase("torchtune/multi-node-small-model", "torchtune", "spec.trainer.numNodes",
                _trainer(numNodes=2), base="torchtune"),
    WebhookCase("torchtune/qlora-on-qwen", "torchtune", "spec.runtimeRef.name",
                _both(_rename_runtime("torchtune-qwen2.5-1.5b"),
                      _trainer(args=["model.quantize_base=True"])), base="torchtune"),
    WebhookCase("torchtune/qlora-multi-device-small-model", "torchtune",
                "spec.trainer.numProcPerNode",
                _trainer(args=["model.quantize_base=True"], numProcPerNode=2,
                         resourcesPerNode={"limits": {"nvidia.com/gpu": "2"}}), base="torchtune"),
    WebhookCase("torchtune/lora-multi-node", "torchtune", "spec.trainer.numNodes",
                _both(_rename_runtime("torchtune-llama3.3-70b"),
                      _trainer(numNodes=2, args=["model.lora_attn_modules=[q_proj]"])),
                base="torchtune"),
    WebhookCase("torchtune/immutable-arg", "torchtune", "spec.trainer.args[1]",
                _trainer(args=["epochs=2", "output_dir=/tmp/out"]), base="torchtune"),
    # mpi.go Validate
    WebhookCase("mpi/launcher-as-node-without-launcher", "mpi", "spec.trainer.numNodes",
                _drop_job("launcher"), base="mpi"),
    WebhookCase("mpi/launcher-as-node-without-node", "mpi", "spec.trainer.numNodes",
                _drop_job("node"), base="mpi"),
    WebhookCase("mpi/reserved-env", "mpi", "spec.trainer.env",
                _env("OMPI_MCA_orte_default_hostfile"), base="mpi"),
    # xgboost.go Validate
    WebhookCase("xgboost/reserved-env", "xgboost", "spec.trainer.env[1]", _env("DMLC_TASK_ID"),
                base="xgboost"),
    # jobset.go Validate: what spec.initializer uses ...
    WebhookCase("jobset/no-dataset-initializer-job", "jobset", "spec.runtimeRef",
                _drop_job("dataset-initializer")),
    WebhookCase("jobset/no-dataset-initializer-container", "jobset", "spec.runtimeRef",
                _initializer_container("dataset-initializer", name="fetch")),
    WebhookCase("jobset/no-dataset-initializer-mount", "jobset", "spec.runtimeRef",
                _initializer_container("dataset-initializer")),
    WebhookCase("jobset/no-model-initializer-job", "jobset", "spec.runtimeRef",
                _drop_job("model-initializer")),
    WebhookCase("jobset/no-model-initializer-container", "jobset", "spec.runtimeRef",
                _initializer_container("model-initializer", name="fetch")),
    WebhookCase("jobset/no-model-initializer-mount", "jobset", "spec.runtimeRef",
                _initializer_container("model-initializer")),
    # ... and what runtimePatches may touch
    WebhookCase("jobset/patch-manager-not-domain-prefixed", "jobset", "spec.runtimePatches.manager",
                _patch("trainweave", name="node")),
    WebhookCase("jobset/patch-unknown-job", "jobset", "spec.runtimePatches", _patch(name="worker"),
                reached=False),
    WebhookCase("jobset/patch-unknown-container", "jobset", "spec.runtimePatches",
                _patch(name="node", pod={"containers": [{"name": "sidecar"}]}), reached=False),
    WebhookCase("jobset/patch-unknown-init-container", "jobset", "spec.runtimePatches",
                _patch(name="node", pod={"initContainers": [{"name": "warmup"}]}), reached=False),
    WebhookCase("jobset/patch-env-of-node", "jobset", "spec.runtimePatches",
                _patch(name="node", pod={"containers": [
                    {"name": "node", "env": [{"name": "A", "value": "1"}]}]})),
    WebhookCase("jobset/patch-env-of-dataset-initializer", "jobset", "spec.runtimePatches",
                _patch(name="dataset-initializer", pod={"containers": [
                    {"name": "dataset-initializer", "env": [{"name": "A", "value": "1"}]}]})),
    WebhookCase("jobset/patch-env-of-model-initializer", "jobset", "spec.runtimePatches",
                _patch(name="model-initializer", pod={"containers": [
                    {"name": "model-initializer", "env": [{"name": "A", "value": "1"}]}]})),
]  # fmt: skip


# Why the ``reached=False`` branches are never reached: ValidateObjects (pkg/runtime/core
# trainingruntime.go) hands the plugins the runtime *with the TrainJob's runtimePatches already
# merged* (newRuntimeInfo), so jobset.go's "replicated job / container / initContainer that
# doesn't exist in the runtime" finds the patch's own job or container there and passes. Upstream
# then builds a JobSet with a job without containers or a container without an image, which the
# API server refuses when the JobSet controller creates the Job: trainweave refuses it at once.
UNREACHED = (
    "jobset.go's runtimePatches checks look at the runtime with the patches already merged"
    " (trainingruntime.go ValidateObjects -> newRuntimeInfo), so a patched job or container"
    " that the runtime lacks is always found"
)


def under(path: str, field: str) -> bool:
    """``path`` is ``field`` or a field under it (``field.x``, ``field[i]``)."""
    return path == field or path.startswith((field + ".", field + "["))


def names_field(path: str, field: str) -> bool:
    """trainweave's ``path`` names upstream's ``field``: the same field or one under it, or so
    once ``path``'s list indices are dropped (upstream names ``spec.runtimePatches.manager``
    for the manager of any patch; trainweave says which: ``spec.runtimePatches[1].manager``)."""
    return under(path, field) or under(re.sub(r"\[\d+\]", "", path), field)


def case(name: str) -> WebhookCase:
    """The case called ``name``."""
    return next(c for c in CASES if c.name == name)
