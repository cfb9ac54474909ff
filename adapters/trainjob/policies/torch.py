"""mlPolicy.torch -> PET_* env, port 29500, envInjection; torchtune's ``tune run`` rewriting.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/torch/torch.go``: when the TrainJob has a
trainer, its env then ``PET_NNODES`` / ``PET_NPROC_PER_NODE`` / ``PET_NODE_RANK`` (and
``PET_MASTER_ADDR`` / ``PET_MASTER_PORT`` unless torchtune rewrites the command) on the
trainer's ``node`` container, plus its port; every envInjection target gets all five.
Validation: envInjection targets name no ``node`` (the CRD's CEL rule) and exist (on
``spec.runtimeRef``), reserved PET_* env,
torchtune's checks (``policies.torchtune``).
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from trainweave.adapters import names
from trainweave.adapters.trainjob import validate, wirelists
from trainweave.adapters.trainjob.policies import torchtune
from trainweave.adapters.trainjob.policies.base import (
    Context,
    Policy,
    open_port,
    reserved_env_errors,
    trainer_node,
)
from trainweave.adapters.trainjob.policies.shared import (
    TRAINER_PORT,
    completion_index,
    cpus_per_node,
    gpus_per_node,
)
from trainweave.errors import InputError
from trainweave.inputs import TrainJob
from trainweave.labels import Ancestor, Reason

Json = dict[str, Any]
RESERVED = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)


def torch_env(
    trainjob: str,
    num_nodes: int,
    nproc: int | None,
    resources: Json,
    subdomain: str | None = None,
) -> tuple[list[Json], list[Json]]:
    """(PET_* env every torch target gets, PET_MASTER_* env) for one TrainJob.

    For a TrainJob the master address is ``<trainjob>-node-0-0.<trainjob>`` whatever the
    runtime's network subdomain, as torch.go writes it; Hera steps pass their own subdomain.
    """
    if nproc is not None:
        procs = str(nproc)
    elif gpus_per_node(resources) == 0:
        procs = str(max(1, cpus_per_node(resources)))
    else:
        procs = "auto"
    pet: list[Json] = [
        {"name": "PET_NNODES", "value": str(num_nodes)},
        {"name": "PET_NPROC_PER_NODE", "value": procs},
        {"name": "PET_NODE_RANK", "valueFrom": completion_index()},
    ]
    master = [
        {
            "name": "PET_MASTER_ADDR",
            "value": f"{names.pod_hostname(trainjob, 'node', 0, 0)}.{subdomain or trainjob}",
        },
        {"name": "PET_MASTER_PORT", "value": str(TRAINER_PORT)},
    ]
    return pet, master


def _quoted(text: str) -> str:
    """``"text"``, as Go's ``%q`` writes a plain string."""
    return json.dumps(text, ensure_ascii=False)


def _pods(ctx: Context) -> dict[str, list[dict[str, Any]]]:
    """Pod spec by replicatedJob name, as the runtime gives them."""
    return {
        rj.name: [((rj.template.get("spec") or {}).get("template") or {}).get("spec") or {}]
        for rj in ctx.spec.template.spec.replicated_jobs
    }


class Torch(Policy):
    """mlPolicy.torch."""

    trainer_env_first: ClassVar[bool] = True

    def validate(self, ctx: Context) -> list[InputError]:
        policy = ctx.spec.ml_policy.torch if ctx.spec.ml_policy else None
        errors: list[InputError] = []
        pods = _pods(ctx)
        targets = policy.env_injection.targets if policy and policy.env_injection else []
        for i, target in enumerate(targets):
            if "node" in target.container_names:
                # the CRD's CEL rule on containerNames (trainingruntime_types.go)
                errors.append(
                    InputError(
                        f"spec.mlPolicy.torch.envInjection.targets[{i}].containerNames",
                        "containerNames must not include the main node container because PET_*"
                        " envs are always injected into it",
                        reason=Reason.INVALID_RUNTIME,
                    )
                )
        for target in targets:
            for name in target.container_names:
                pod = (pods.get(target.job_name) or [{}])[0]
                if validate.container(pod, name, init=True) is None:
                    errors.append(
                        InputError(
                            "spec.runtimeRef",
                            f"envInjection target podSet {_quoted(target.job_name)} container"
                            f" {_quoted(name)} not found in runtime template",
                        )
                    )
        if ctx.trainjob.spec.trainer is not None:
            errors += reserved_env_errors(ctx.trainjob, RESERVED)
            if torchtune.is_torchtune(ctx):
                errors += torchtune.errors(ctx)
        return errors

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        policy = ctx.spec.ml_policy.torch if ctx.spec.ml_policy else None
        pet, master = torch_env(ctx.name, ctx.num_nodes, ctx.nproc, ctx.resources)
        node = trainer_node(ctx, ancestor, pod_spec)
        if node is not None:
            wirelists.upsert_env(node, pet)
            if torchtune.is_torchtune(ctx):
                node["command"] = torchtune.command(ctx)
            else:
                wirelists.upsert_env(node, master)
            open_port(node)
        for target in policy.env_injection.targets if policy and policy.env_injection else []:
            if target.job_name == job:
                for name in target.container_names:
                    found = validate.container(pod_spec, name, init=True)
                    if found is not None:
                        wirelists.upsert_env(found, pet + master)
        return None

    def step_errors(self, trainjob: TrainJob) -> list[InputError]:
        return reserved_env_errors(trainjob, RESERVED, "the torch plugin")

    def step_env(
        self,
        container: Json,
        workflow: str,
        step: str,
        pods: int,
        nproc: int | None,
        subdomain: str,
    ) -> None:
        resources = container.get("resources") or {}
        pet, master = torch_env(workflow, pods, nproc, resources, subdomain)
        master[0]["value"] = f"{names.pod_hostname(workflow, step, 0, 0)}.{subdomain}"
        wirelists.upsert_env(container, pet + master)
        open_port(container)
