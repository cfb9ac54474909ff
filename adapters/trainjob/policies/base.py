"""What an mlPolicy module sees and the two calls it answers (Trainer's plugin pair).

Pure. Mirrors kubeflow/trainer@v2.3.0 ``pkg/runtime/framework/interface.go``: a
``CustomValidationPlugin`` (``validate``: the TrainJob's errors, on upstream's field paths)
and an ``EnforceMLPolicyPlugin`` (``enforce``: env, ports, volumes and pod counts on one
replicatedJob's pod spec).
"""

from __future__ import annotations

from typing import Any, Protocol

from trainweave.adapters import names
from trainweave.adapters.trainjob import mlpolicy, validate, wirelists
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec, TrainJob
from trainweave.labels import TRAINJOB_ANCESTOR, Ancestor

Json = dict[str, Any]


class Context:
    """What every job needs to know about the TrainJob and runtime."""

    def __init__(self, trainjob: TrainJob, spec: RuntimeSpec) -> None:
        self.trainjob = trainjob
        self.name = trainjob.metadata.name
        self.spec = spec
        net = spec.template.spec.network
        self.subdomain = (net.subdomain if net and net.subdomain else None) or self.name
        policy = spec.ml_policy
        tj_trainer = trainjob.spec.trainer
        self.num_nodes = (
            tj_trainer.num_nodes if tj_trainer and tj_trainer.num_nodes else None
        ) or (policy.num_nodes if policy else 1)
        self.nproc = tj_trainer.num_proc_per_node if tj_trainer else None
        self.mpi_slots = 0
        self.resources: Json = trainer_resources(trainjob, spec)


class Policy(Protocol):
    """One mlPolicy: its validation and its enforcement.

    ``trainer_env_first``: the TrainJob's trainer env goes on the node container before the
    policy's own env (torch.go does it; so does plainml.go, which also runs for xgboost);
    otherwise only the JobSet builder adds it, after.
    """

    trainer_env_first: bool

    def validate(self, ctx: Context) -> list[InputError]:
        """The TrainJob's errors under this policy (Trainer's ``Validate``)."""
        ...

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: Json
    ) -> int | None:
        """Apply the policy to one job's pod spec; the job's pod count where it sets one."""
        ...


def trainer_node(ctx: Context, ancestor: Ancestor | None, pod_spec: Json) -> Json | None:
    """The trainer job's ``node`` container, where the plugins set env, when the TrainJob has
    a trainer (``FindContainerByPodSetAncestorContainerName``); else None."""
    node = validate.container(pod_spec, "node")
    if ancestor is not Ancestor.TRAINER or node is None or ctx.trainjob.spec.trainer is None:
        return None
    return node


def rank0(ctx: Context) -> str:
    """``<trainjob>-node-0-0.<trainjob>``: the first trainer pod, as every plugin names it."""
    return f"{names.pod_hostname(ctx.name, 'node', 0, 0)}.{ctx.name}"


def open_port(node: Json) -> None:
    """containerPort 29500 on the node container (upstream's ContainerTrainerPort)."""
    wirelists.upsert_by_name(node.setdefault("ports", []), [{"containerPort": mlpolicy.TORCH_PORT}])


def trainer_pod(spec: RuntimeSpec) -> Json | None:
    """The runtime's trainer-ancestor pod spec (before TrainJob fields), if any."""
    for rj in spec.template.spec.replicated_jobs:
        labels = (rj.template.get("metadata") or {}).get("labels") or {}
        if labels.get(TRAINJOB_ANCESTOR) == Ancestor.TRAINER.value:
            pod: Json = ((rj.template.get("spec") or {}).get("template") or {}).get("spec") or {}
            return pod
    return None


def trainer_resources(trainjob: TrainJob, spec: RuntimeSpec) -> Json:
    """Per-node resources: TrainJob resourcesPerNode, else the runtime's node container
    (Trainer's ``ExtractResourcePerNodeFromRuntime`` then the TrainJob override)."""
    tj = trainjob.spec.trainer
    if tj and tj.resources_per_node is not None:
        return tj.resources_per_node
    node = validate.container(trainer_pod(spec) or {}, "node")
    return dict(node.get("resources") or {}) if node is not None else {}


def reserved_env_errors(
    trainjob: TrainJob, reserved: tuple[str, ...], setter: str = "the runtime's mlPolicy"
) -> list[InputError]:
    """``spec.trainer.env[i].name``: a variable the policy (``setter``) sets itself."""
    trainer = trainjob.spec.trainer
    return [
        InputError(f"spec.trainer.env[{i}].name", f"{var['name']} is reserved: {setter} sets it")
        for i, var in enumerate(trainer.env if trainer else [])
        if var.get("name") in reserved
    ]
