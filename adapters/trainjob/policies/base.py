"""What an mlPolicy module sees and the calls it answers (Trainer's plugin set).

Pure. Mirrors kubeflow/trainer@v2.3.0 ``pkg/runtime/framework/interface.go``: a
``CustomValidationPlugin`` (``validate``: the TrainJob's errors, on upstream's field paths),
an ``EnforceMLPolicyPlugin`` (``enforce``: env, ports, volumes and pod counts on one
replicatedJob's pod spec) and a ``ComponentBuilderPlugin`` (``part``: what the Pipeline keeps
of the policy, whose ``objects``/``secrets`` are the objects beside the pods). ``Context`` is
frozen: enforcing writes pod specs, never the context; its TrainJob and runtime are the
translation's copies (``trainer.to_pipeline``), never the caller's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

from trainweave.adapters import names
from trainweave.adapters.trainjob import validate, wirelists
from trainweave.adapters.trainjob.policies.shared import TRAINER_PORT
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec, TrainJob
from trainweave.labels import TRAINJOB_ANCESTOR, Ancestor
from trainweave.model import PolicyPart

Json = dict[str, Any]


@dataclass(frozen=True)
class Context:
    """What every job needs to know about the TrainJob and runtime (read-only)."""

    trainjob: TrainJob
    spec: RuntimeSpec

    @cached_property
    def name(self) -> str:
        """The TrainJob's name."""
        return self.trainjob.metadata.name

    @cached_property
    def subdomain(self) -> str:
        """The runtime's network subdomain, else the TrainJob's name."""
        net = self.spec.template.spec.network
        return (net.subdomain if net and net.subdomain else None) or self.name

    @cached_property
    def num_nodes(self) -> int:
        """TrainJob ``numNodes``, else the runtime's ``mlPolicy.numNodes``, else 1."""
        tj = self.trainjob.spec.trainer
        policy = self.spec.ml_policy
        return (tj.num_nodes if tj and tj.num_nodes else None) or (
            policy.num_nodes if policy else 1
        )

    @cached_property
    def nproc(self) -> int | None:
        """TrainJob ``numProcPerNode``, if set."""
        tj = self.trainjob.spec.trainer
        return tj.num_proc_per_node if tj else None

    @property
    def resources(self) -> Json:
        """Per-node resources (``trainer_resources``): a fresh copy at each read, so a policy
        that writes it changes neither the TrainJob nor what the next job reads."""
        return trainer_resources(self.trainjob, self.spec)


class Policy:
    """One mlPolicy. A policy module subclasses it and overrides what its policy does; the
    defaults are PlainML's (nothing to validate, set or build).

    ``trainer_env_first``: the TrainJob's trainer env goes on the node container before the
    policy's own env (torch.go does it; so does plainml.go, which also runs for xgboost);
    otherwise only the JobSet builder adds it, after. ``needs_ssh_keys``: the policy's part
    builds a Secret from the edge's key pair (``adapters.render.with_ssh_keys``).
    """

    trainer_env_first: ClassVar[bool] = False
    needs_ssh_keys: ClassVar[bool] = False

    def validate(self, ctx: Context) -> list[InputError]:
        """The TrainJob's errors under this policy (Trainer's ``Validate``)."""
        return []

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: Json
    ) -> int | None:
        """Apply the policy to one job's pod spec; the job's pod count where it sets one."""
        return None

    def sized_by_nodes(self, ctx: Context, job: str) -> bool:
        """Besides the trainer ancestor, ``job``'s pod count is numNodes (its own count
        errors dropped)."""
        return False

    def takes_trainer(self, ctx: Context, job: str) -> bool:
        """Besides the trainer ancestor, ``job``'s node container takes the TrainJob's
        ``resourcesPerNode`` and env."""
        return False

    def part(self, ctx: Context) -> PolicyPart | None:
        """What the Pipeline keeps of the policy (``Pipeline.policy``), whose Build half
        makes the objects beside the pods; None when it builds none."""
        return None

    # The Hera builders (``workflows``): a step is one gang of ``pods`` pods of one container,
    # with no TrainJob; ``policies.of_builder`` gives the policy of a builder's arguments.

    def step_errors(self, trainjob: TrainJob) -> list[InputError]:
        """What this policy refuses in the TrainJob a Hera step's arguments make
        (``workflows.checks``)."""
        return []

    def step_env(
        self,
        container: Json,
        workflow: str,
        step: str,
        pods: int,
        nproc: int | None,
        subdomain: str,
    ) -> None:
        """This policy's env and port on a Hera step's container (``workflows.gang``), rank 0
        being ``<workflow>-<step>-0-0.<subdomain>``."""


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
    wirelists.upsert_by_name(node.setdefault("ports", []), [{"containerPort": TRAINER_PORT}])


def env_and_port(ctx: Context, ancestor: Ancestor | None, pod_spec: Json, env: list[Json]) -> None:
    """``env`` upserted on the trainer's node container, and its port opened (jax.go,
    xgboost.go); nothing when the job has none (``trainer_node``)."""
    node = trainer_node(ctx, ancestor, pod_spec)
    if node is not None:
        wirelists.upsert_env(node, env)
        open_port(node)


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
        return copy.deepcopy(tj.resources_per_node)
    node = validate.container(trainer_pod(spec) or {}, "node")
    return copy.deepcopy(node.get("resources") or {}) if node is not None else {}


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
