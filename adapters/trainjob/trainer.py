"""TrainJob + TrainingRuntime -> Pipeline.

Pure: no I/O, no clock. Applies TrainJob fields as kubeflow/trainer@v2.3.0's
JobSet builder and ML plugins do (``plugins/jobset/builder.go``,
``plugins/torch``, ``plugins/mpi``): initializer ``storageUri`` -> ``STORAGE_URI``,
env and ``secretRef`` on the same-named container; trainer image, command, args,
env, resourcesPerNode on the ``node`` container; ``numNodes`` as the trainer
job's pod count; the mlPolicy's validation, env, volumes and pod counts through its module's
``Policy`` (``adapters.trainjob.policies``: the registry; nothing here knows a policy by name),
and its ``PolicyPart`` on the Pipeline; JobSet network, successPolicy, failurePolicy and
volumeClaimPolicies. Steps come from ``adapters.trainjob.graph``; Job
semantics from ``adapters.trainjob.jobspec``.

The queue and priority class of each step: ``adapters.trainjob.step_queue``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from trainweave.adapters import names
from trainweave.adapters.trainjob import (
    graph,
    jobspec,
    patches,
    pod_check,
    policies,
    step_queue,
    validate,
    wirelists,
)
from trainweave.adapters.trainjob.policies import Context
from trainweave.errors import InputError, InputErrors
from trainweave.inputs import ReplicatedJob, Runtime, RuntimeSpec, TrainJob
from trainweave.labels import TRAINJOB_ANCESTOR, Ancestor, Reason
from trainweave.model import HeadlessService, Job, Pipeline, Step

Json = dict[str, Any]
_RJ = "spec.template.spec.replicatedJobs"


def to_pipeline(
    trainjob: TrainJob,
    runtime: Runtime,
    *,
    attempt: int = 0,
    segment: int = 0,
    default_queue: str | None = None,
    registry: policies.Registry = policies.REGISTRY,
) -> Pipeline:
    """The Pipeline of ``trainjob`` run on ``runtime``; raises InputErrors. ``registry``: the
    mlPolicy modules (a test may pass one with a policy of its own)."""
    ref = trainjob.spec.runtime_ref
    if (ref.kind, ref.name) != (runtime.kind, runtime.metadata.name):
        raise InputErrors(
            [
                InputError(
                    "spec.runtimeRef",
                    f"names {ref.kind} {ref.name!r}, given {runtime.kind} {runtime.metadata.name!r}",
                    reason=Reason.TRAINING_RUNTIME_NOT_FOUND,
                )
            ]
        )
    if ref.api_group != "trainer.kubeflow.org":
        raise InputErrors([InputError("spec.runtimeRef.apiGroup", "must be trainer.kubeflow.org")])
    spec = runtime.spec
    policy = registry.of(spec)
    # the policy's own copies: nothing it writes through the context reaches the inputs
    ctx = Context(trainjob.model_copy(deep=True), spec.model_copy(deep=True))
    errors = validate.jobset_errors(spec) + validate.runtime_errors(spec)
    errors += registry.conflict_errors(spec) + registry.unsupported_errors(spec)
    errors += policy.validate(ctx) if not errors else []
    inputs, patch_errors = job_inputs(trainjob, spec)
    raw_jobs = [j.raw for j in inputs]
    errors += patch_errors + validate.initializer_errors(trainjob, raw_jobs)
    errors += validate.manager_errors(trainjob)
    if errors:
        raise InputErrors(errors)
    shapes, graph_errors = graph.steps([j.rjob for j in inputs], [j.ancestor for j in inputs])
    if graph_errors:
        raise InputErrors(graph_errors)
    jobs: list[Job] = []
    for one in inputs:
        job, job_errors = _job(ctx, policy, one)
        jobs.append(job)
        errors += job_errors
    errors += validate.name_errors(trainjob.metadata.name, jobs)
    errors += validate.size_errors(jobs)
    errors += validate.argo_name_errors(jobs, {j.rjob.name: j.index for j in inputs})
    errors += pod_check.rendered_errors(trainjob, spec, jobs)
    steps = []
    for shape in shapes:
        step_jobs = tuple(jobs[i] for i in shape.jobs)
        queue, queue_errors = step_queue.queue(trainjob, raw_jobs, shape.jobs, default_queue)
        errors += queue_errors
        priority = step_queue.priority_class(trainjob, raw_jobs[shape.jobs[0]])
        steps.append(Step(shape.name, shape.role, step_jobs, queue, shape.depends_on, priority))
    steps = _with_daemons(steps, spec)
    index = {j.rjob.name: j.index for j in inputs}
    errors += [
        InputError(
            f"{_RJ}[{index[job.name]}].template.spec.template.spec.containers",
            "must hold exactly one container in a job that keeps running while the"
            " successPolicy target ends (an Argo daemon: Argo v4.0.7 runs it as one container)",
            reason=Reason.UNSUPPORTED_FIELD,
        )
        for step in steps
        for job in step.jobs
        if job.daemon and len(job.containers) > 1
    ]
    if errors:
        raise InputErrors(errors)
    net = spec.template.spec.network
    service = None
    if net is None or net.enable_dns_hostnames is not False:
        service = HeadlessService(
            ctx.subdomain, net.publish_not_ready_addresses is not False if net else True
        )
    failure = spec.template.spec.failure_policy
    return Pipeline(
        name=trainjob.metadata.name,
        namespace=trainjob.metadata.namespace or "default",
        steps=tuple(steps),
        runtime_kind=runtime.kind,
        runtime_name=runtime.metadata.name,
        runtime_snapshot=runtime.snapshot,
        attempt=attempt,
        segment=segment,
        service=service,
        pvcs=tuple(_pvcs(trainjob.metadata.name, spec)),
        pvc_retain=any(
            p.retention_policy is not None and p.retention_policy.when_deleted == "Retain"
            for p in spec.template.spec.volume_claim_policies
        ),
        active_deadline_seconds=trainjob.spec.active_deadline_seconds,
        max_restarts=failure.max_restarts if failure else 0,
        suspend=trainjob.spec.suspend,
        policy=policy.part(ctx),
        ttl_seconds_after_finished=spec.template.spec.ttl_seconds_after_finished,
    )


@dataclass(frozen=True)
class JobInput:
    """One runtime replicatedJob as the translation takes it: its ``index`` in the runtime, the
    typed ``rjob`` (name, replicas, dependsOn: runtimePatches change none of them), ``raw``: its
    wire form with the TrainJob's runtimePatches applied (the translation's own copy, which
    ``_job`` completes into the Job's pod template) and its ancestor label."""

    index: int
    rjob: ReplicatedJob
    raw: Json
    ancestor: Ancestor | None

    @property
    def name(self) -> str:
        """The replicatedJob's name."""
        return self.rjob.name

    @property
    def path(self) -> str:
        """Its Job spec's field path in the runtime."""
        return f"{_RJ}[{self.index}].template.spec"


def job_inputs(trainjob: TrainJob, spec: RuntimeSpec) -> tuple[list[JobInput], list[InputError]]:
    """The runtime's replicatedJobs in order, patched by ``trainjob``'s runtimePatches
    (``patches.apply``), and the patches' errors. Pure; ``trainjob`` and ``spec`` are not
    modified."""
    rjobs = spec.template.spec.replicated_jobs
    raw = [{"name": rj.name, "template": copy.deepcopy(rj.template)} for rj in rjobs]
    wanted = [
        {"trainingRuntimeSpec": p.training_runtime_spec} for p in trainjob.spec.runtime_patches
    ]
    patched, _, errors = patches.apply(raw, wanted)
    return [
        JobInput(i, rj, doc, _ancestor(doc))
        for i, (rj, doc) in enumerate(zip(rjobs, patched, strict=True))
    ], errors


def _job(ctx: Context, policy: policies.Policy, one: JobInput) -> tuple[Job, list[InputError]]:
    path, rjob, ancestor = one.path, one.rjob, one.ancestor
    job_spec: Json = one.raw["template"].get("spec") or {}  # to_pipeline's own copy
    pod_template: Json = job_spec.get("template") or {}
    pod_spec: Json = pod_template.setdefault("spec", {})
    pod_template.setdefault("metadata", {})
    containers = pod_spec.get("containers") or []
    errors: list[InputError] = []
    if not containers:
        errors.append(
            InputError(
                f"{path}.template.spec.containers",
                "must hold at least one container",
                reason=Reason.INVALID_RUNTIME,
            )
        )
        containers = [{"name": "main", "image": "invalid"}]
        pod_spec["containers"] = containers
    for key in ("ephemeralContainers", "nodeName"):
        if key in pod_spec:
            errors.append(
                InputError(
                    f"{path}.template.spec.{key}",
                    "is not supported for step pods",
                    reason=Reason.UNSUPPORTED_FIELD,
                )
            )
    replicas = 1 if ancestor is not None else rjob.replicas
    _apply_trainjob(ctx, policy, rjob.name, ancestor, pod_spec)
    enforced = policy.enforce(ctx, rjob.name, ancestor, pod_spec)
    _apply_trainer_env(ctx, policy, rjob.name, ancestor, pod_spec)
    pods, count_errors = _pods(ctx, policy, one, job_spec, enforced)
    _add_claim_volumes(ctx, pod_spec)
    _quantities_as_strings(pod_spec)
    retry, retry_errors = jobspec.retry_policy(
        job_spec,
        pods * replicas,
        [str(c.get("name", "")) for c in pod_spec["containers"]],
        [str(c.get("name", "")) for c in pod_spec.get("initContainers") or []],
        path,
    )
    if job_spec.get("podFailurePolicy") and pod_spec.get("restartPolicy", "OnFailure") != "Never":
        errors.append(
            InputError(
                f"{path}.template.spec.restartPolicy",
                "must be Never with a podFailurePolicy (JobSet defaults it to OnFailure, and the"
                " Job API then refuses the Job: upstream's JobSet would never create it)",
                reason=Reason.INVALID_RUNTIME,
            )
        )
    if pod_spec.get("restartPolicy") == "Always":
        errors.append(
            InputError(
                f"{path}.template.spec.restartPolicy",
                "must be Never or OnFailure for a Job",
                reason=Reason.INVALID_RUNTIME,
            )
        )
    pod_spec.pop("restartPolicy", None)  # Argo pods run with Never; failures retry as new pods
    job = Job(rjob.name, ancestor, replicas, pods, pod_template, retry)
    return job, errors + count_errors + retry_errors


def _pods(
    ctx: Context, policy: policies.Policy, one: JobInput, job_spec: Json, enforced: int | None
) -> tuple[int, list[InputError]]:
    """Pods per replica and the errors of the Job's own count: the count the policy's
    ``enforce`` set, else numNodes for the trainer and the jobs the policy sizes by nodes (their
    own count's errors dropped), else the Job's (``jobspec.pods_per_replica``)."""
    if one.ancestor is Ancestor.TRAINER or policy.sized_by_nodes(ctx, one.name):
        by_nodes: tuple[int, list[InputError]] = (ctx.num_nodes, [])
        pods, errors = by_nodes
    else:
        pods, errors = jobspec.pods_per_replica(job_spec, one.path)
    return (pods if enforced is None else enforced), errors


def _quantities_as_strings(pod_spec: Json) -> None:
    """YAML lets ``nvidia.com/gpu: 2`` be a number; the wire form is a string."""
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            for section in ("limits", "requests"):
                values = (container.get("resources") or {}).get(section)
                if values:
                    container["resources"][section] = {k: str(v) for k, v in values.items()}


def _add_claim_volumes(ctx: Context, pod_spec: Json) -> None:
    """JobSet addVolumes: a volumeClaimPolicies template mounted by a container becomes a volume."""
    mounted = {
        m.get("name")
        for key in ("containers", "initContainers")
        for c in pod_spec.get(key) or []
        for m in c.get("volumeMounts") or []
    }
    for policy in ctx.spec.template.spec.volume_claim_policies:
        for tpl in policy.templates:
            name = (tpl.get("metadata") or {}).get("name", "")
            if name in mounted:
                claim = {"claimName": names.pvc_name(ctx.name, name)}
                pod_spec.setdefault("volumes", []).append(
                    {"name": name, "persistentVolumeClaim": claim}
                )


def _apply_trainjob(
    ctx: Context, policy: policies.Policy, name: str, ancestor: Ancestor | None, pod_spec: Json
) -> None:
    tj = ctx.trainjob.spec
    container = validate.container(
        pod_spec,
        name if ancestor in (Ancestor.DATASET_INITIALIZER, Ancestor.MODEL_INITIALIZER) else "node",
    )
    if container is None:
        return
    if ancestor in (Ancestor.DATASET_INITIALIZER, Ancestor.MODEL_INITIALIZER) and tj.initializer:
        init = (
            tj.initializer.dataset
            if ancestor is Ancestor.DATASET_INITIALIZER
            else tj.initializer.model
        )
        if init is not None:
            if init.storage_uri:
                wirelists.upsert_env(
                    container, [{"name": "STORAGE_URI", "value": init.storage_uri}]
                )
            wirelists.upsert_env(container, init.env)
            if init.secret_ref is not None:
                container.setdefault("envFrom", []).append(
                    {"secretRef": {"name": init.secret_ref.name}}
                )
    if ancestor is Ancestor.TRAINER and tj.trainer:
        trainer = tj.trainer
        if trainer.image:
            container["image"] = trainer.image
        if trainer.command:
            container["command"] = list(trainer.command)
        if trainer.args:
            container["args"] = list(trainer.args)
    if (ancestor is Ancestor.TRAINER or policy.takes_trainer(ctx, name)) and tj.trainer:
        # trainingruntime.go newRuntimeInfo: resourcesPerNode merges into the node container's
        # resources (a strategic merge: per-resource keys replaced, others kept); on the job
        # the policy names too (MPI's `node` when the launcher runs as a node).
        if tj.trainer.resources_per_node is not None:
            container["resources"] = merge_resources(
                container.get("resources") or {}, tj.trainer.resources_per_node
            )
        if policy.trainer_env_first and ancestor is Ancestor.TRAINER:
            wirelists.upsert_env(container, tj.trainer.env)


def _apply_trainer_env(
    ctx: Context, policy: policies.Policy, name: str, ancestor: Ancestor | None, pod_spec: Json
) -> None:
    """builder.go Trainer(): the TrainJob's env upserted last, after the mlPolicy's env."""
    tj = ctx.trainjob.spec.trainer
    container = validate.container(pod_spec, "node")
    trainer_job = ancestor is Ancestor.TRAINER or policy.takes_trainer(ctx, name)
    if tj and container is not None and trainer_job:
        wirelists.upsert_env(container, tj.env)


def merge_resources(base: Json, override: Json) -> Json:
    """Trainer's MergeResourceRequirements: ``limits``/``requests`` merged key by key."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if key in ("limits", "requests") and isinstance(value, dict):
            out[key] = {**(out.get(key) or {}), **value}
        else:
            out[key] = copy.deepcopy(value)
    return out


def _ancestor(raw: Json) -> Ancestor | None:
    value = step_queue.label(raw, TRAINJOB_ANCESTOR)
    return Ancestor(value) if value in {a.value for a in Ancestor} else None


def _with_daemons(steps: list[Step], spec: RuntimeSpec) -> list[Step]:
    """JobSet successPolicy targets: other jobs in a target's step keep running as daemons."""
    policy = spec.template.spec.success_policy
    if policy is None or not policy.target_replicated_jobs:
        return steps
    targets = set(policy.target_replicated_jobs)
    out = []
    for step in steps:
        names_in = {j.name for j in step.jobs}
        if names_in & targets and names_in - targets:
            jobs = tuple(j if j.name in targets else _daemon(j) for j in step.jobs)
            step = Step(
                step.name, step.role, jobs, step.queue, step.depends_on, step.priority_class
            )
        out.append(step)
    return out


def _daemon(job: Job) -> Job:
    return Job(
        job.name,
        job.ancestor,
        job.replicas,
        job.pods_per_replica,
        job.pod_template,
        job.retry,
        daemon=True,
    )


def _pvcs(trainjob: str, spec: RuntimeSpec) -> list[Json]:
    out = []
    for policy in spec.template.spec.volume_claim_policies:
        for tpl in policy.templates:
            pvc = copy.deepcopy(tpl)
            meta = pvc.setdefault("metadata", {})
            meta["name"] = names.pvc_name(trainjob, meta.get("name", ""))
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", **pvc})
    return out
