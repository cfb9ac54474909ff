"""Pipeline -> Argo Workflow (through Hera's models) + the objects it needs.

Pure. One Workflow per TrainJob attempt, in the TrainJob's namespace:

- entrypoint DAG ``main``: one task per step (``depends`` = the step's
  ``Complete`` predecessors); each step task runs a DAG template
  ``step-<step>`` with one task per pod (``<job>-<replica>-<index>``);
- one containerSet template per replicatedJob (the runtime's containers, keeping
  their names: ``node``, ``dataset-initializer``... as a Job's pod has them; a
  container template would rename it ``main``), taking ``replica``,
  ``index`` and ``rank`` parameters; its pods carry the step's Kueue pod-group labels
  (queue, group name, total count = pods in the step), trainweave's and
  JobSet's labels, the completion index as label and annotation, the pod's
  rank in its Kueue PodSet as ``kueue.x-k8s.io/pod-group-pod-index`` (TAS
  places rank r on the r-th slot of the topologyAssignment), the runtime's
  ``kueue.x-k8s.io/podset-*`` annotations as they are, and a
  ``podSpecPatch`` for the pod fields Argo templates lack (hostname/subdomain
  for stable DNS among them);
- ``retryStrategy`` from the Job's RetryPolicy (``adapters.argo.retry``);
- no queue label at workflow level (docs/design.md, D8);
- an exit handler deleting the step Workloads of a failed run, where no
  controller does it (``Options.exit_cleanup``, ``adapters.options``).

Other objects (headless Service, runtime snapshot ConfigMap, PVCs, MPI
hostfile) come from ``adapters.argo.objects``.
"""

from __future__ import annotations

import json
from typing import Any

from trainweave import codecs
from trainweave import labels as L
from trainweave.adapters import names
from trainweave.adapters.argo import objects
from trainweave.adapters.argo.hera_models import models as m
from trainweave.adapters.argo.retry import retry_strategy
from trainweave.adapters.kueue import tas
from trainweave.adapters.options import DEFAULTS, Options
from trainweave.errors import InputError, InputErrors
from trainweave.labels import Reason
from trainweave.model import Job, Pipeline, Step

Json = dict[str, Any]
# PodSpec fields an Argo template carries natively; the rest go to podSpecPatch.
_NATIVE = {
    "containers",
    "initContainers",
    "volumes",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulerName",
    "priorityClassName",
    "serviceAccountName",
    "automountServiceAccountToken",
    "securityContext",
    "hostAliases",
    "activeDeadlineSeconds",
}
_CONTAINER_FIELDS = {f.alias or k for k, f in m.Container.model_fields.items()}
CLEANUP = "trainweave-cleanup"


def render(pipeline: Pipeline, options: Options = DEFAULTS) -> list[Json]:
    """The Workflow, then Service, ConfigMaps, PVCs (``adapters.render`` puts every object of a
    render in ``CREATION_ORDER``)."""
    return [workflow(pipeline, options), *objects.supporting(pipeline)]


def workflow(pipeline: Pipeline, options: Options = DEFAULTS) -> Json:
    """The Argo Workflow of one pipeline attempt, as a wire dict."""
    templates = [main_template(pipeline, options.skip_steps)]
    for step in pipeline.steps:
        templates.append(step_template(pipeline, step))
    for step in pipeline.steps:
        for job in step.jobs:
            templates.append(pod_template(pipeline, step, job, options.controller))
    on_exit = None
    if options.exit_cleanup:
        templates += [cleanup_handler(), *cleanup_templates(pipeline)]
        on_exit = CLEANUP
    meta_labels = {
        **objects.base_labels(pipeline, "workflow"),
        L.ATTEMPT: codecs.encode_int(pipeline.attempt),
        L.SEGMENT: codecs.encode_int(options.segment),
    }
    ttl = None
    if pipeline.ttl_seconds_after_finished is not None:
        ttl = m.TTLStrategy(seconds_after_completion=pipeline.ttl_seconds_after_finished)
    wf = m.Workflow(
        api_version="argoproj.io/v1alpha1",
        kind="Workflow",
        metadata=m.ObjectMeta(
            name=names.segment_name(
                names.workflow_name(pipeline.name, pipeline.attempt), options.segment
            ),
            namespace=pipeline.namespace,
            labels=meta_labels,
            annotations=_annotations(pipeline, options.controller),
        ),
        spec=m.WorkflowSpec(
            entrypoint="main",
            templates=templates,
            on_exit=on_exit,
            service_account_name=options.service_account,
            suspend=True if pipeline.suspend or options.suspend else None,
            ttl_strategy=ttl,
        ),
    )
    return wf.model_dump(by_alias=True, exclude_none=True)


def _annotations(pipeline: Pipeline, controller: bool = False) -> dict[str, str]:
    """maxRestarts, and the retry policies the controller keeps: every job's when it runs the
    Workflow (``controller``), else the ones only it can keep (shared backoffLimits, pods of
    several containers)."""
    out = {L.MAX_RESTARTS_ANNOTATION: codecs.encode_int(pipeline.max_restarts)}
    kept = {
        step.name: {
            job.name: job.retry for job in step.jobs if controller or job.retry.by_controller
        }
        for step in pipeline.steps
    }
    if (limits := codecs.encode_backoff_limits(kept)) is not None:
        out[L.BACKOFF_LIMITS_ANNOTATION] = limits
    return out


def main_template(pipeline: Pipeline, skip_steps: frozenset[str] = frozenset()) -> m.Template:
    """The entrypoint DAG: one task per step not in ``skip_steps``."""
    tasks = [
        m.DAGTask(
            name=step.name,
            template=f"step-{step.name}",
            depends=" && ".join(d for d in step.depends_on if d not in skip_steps) or None,
        )
        for step in pipeline.steps
        if step.name not in skip_steps
    ]
    return m.Template(name="main", dag=m.DAGTemplate(tasks=tasks, fail_fast=True))


def step_template(pipeline: Pipeline, step: Step) -> m.Template:
    """The step's DAG: one task per pod, with its replica, index and Kueue rank
    (``adapters.kueue.tas.rank_bases``)."""
    tasks = []
    bases = tas.step_rank_bases(step)
    for job in step.jobs:
        for replica in range(job.replicas):
            for index in range(job.pods_per_replica):
                rank = bases.get(job.name, 0) + replica * job.pods_per_replica + index
                tasks.append(
                    m.DAGTask(
                        name=names.slot(job.name, replica, index),
                        template=job.name,
                        arguments=m.Arguments(
                            parameters=[
                                m.Parameter(name="replica", value=str(replica)),
                                m.Parameter(name="index", value=str(index)),
                                m.Parameter(name="rank", value=str(rank)),
                            ]
                        ),
                    )
                )
    return m.Template(name=f"step-{step.name}", dag=m.DAGTemplate(tasks=tasks, fail_fast=True))


def pod_labels(pipeline: Pipeline, step: Step, job: Job) -> dict[str, str]:
    """Labels on every pod of ``job`` in ``step`` (template metadata)."""
    return {
        L.TRAINJOB: pipeline.name,
        L.STEP: step.name,
        L.REPLICATED_JOB: job.name,
        L.ROLE: step.role.value,
        L.ATTEMPT: codecs.encode_int(pipeline.attempt),
        L.MANAGED_BY: L.MANAGER,
        L.JOBSET_NAME: pipeline.name,
        L.JOBSET_REPLICATED_JOB_NAME: job.name,
        L.JOBSET_JOB_INDEX: "{{inputs.parameters.replica}}",
        L.JOB_COMPLETION_INDEX: "{{inputs.parameters.index}}",
        L.KUEUE_QUEUE_NAME: step.queue,
        L.KUEUE_POD_GROUP_NAME: names.step_group(pipeline, step),
        L.KUEUE_POD_GROUP_POD_INDEX: "{{inputs.parameters.rank}}",
    }


def container_errors(containers: list[Json], where: str) -> list[InputError]:
    """The fields of ``containers`` (at ``where``) that Argo's Container type lacks: refused,
    as Argo would drop them."""
    return [
        InputError(
            f"{where}[{i}].{key}",
            "is not supported by Argo's Container type",
            reason=Reason.UNSUPPORTED_FIELD,
        )
        for i, container in enumerate(containers)
        for key in sorted(set(container) - _CONTAINER_FIELDS)
    ]


def pod_template(pipeline: Pipeline, step: Step, job: Job, controller: bool = False) -> m.Template:
    """One job's pod template; ``controller``: its retries are judged by the controller."""
    meta = job.pod_template.get("metadata") or {}
    spec: Json = job.pod_template["spec"]
    labels = {**(meta.get("labels") or {}), **pod_labels(pipeline, step, job)}
    if job.ancestor is not None:
        labels[L.TRAINJOB_ANCESTOR] = job.ancestor.value
    if step.priority_class:
        labels[L.KUEUE_PRIORITY_CLASS] = step.priority_class
    annotations = {
        **(meta.get("annotations") or {}),
        L.KUEUE_POD_GROUP_TOTAL_COUNT: str(step.pods),
        L.JOB_COMPLETION_INDEX: "{{inputs.parameters.index}}",
    }
    errors = container_errors(job.containers, f"replicatedJob {job.name!r} containers")
    errors += tas.annotation_errors(
        meta.get("annotations") or {}, f"replicatedJob {job.name!r} template.metadata.annotations"
    )
    if errors:
        raise InputErrors(errors)
    patch = {k: v for k, v in spec.items() if k not in _NATIVE}
    if pipeline.service is not None:
        patch["hostname"] = names.pod_hostname(
            pipeline.name, job.name, "{{inputs.parameters.replica}}", "{{inputs.parameters.index}}"
        )
        patch["subdomain"] = pipeline.service.name
    return m.Template(
        name=job.name,
        inputs=m.Inputs(
            parameters=[
                m.Parameter(name="replica"),
                m.Parameter(name="index"),
                m.Parameter(name="rank"),
            ]
        ),
        metadata=m.Metadata(labels=labels, annotations=annotations),
        # A daemon is a plain container template (Argo names its container ``main``): Argo v4.0.7
        # never fulfils a daemoned pod's containerSet child nodes, so its DAG would not end.
        container=m.Container.model_validate(job.main_container) if job.daemon else None,
        container_set=None
        if job.daemon
        else m.ContainerSetTemplate(
            containers=[m.ContainerNode.model_validate(c) for c in job.containers]
        ),
        init_containers=[
            m.UserContainer.model_validate(c) for c in spec.get("initContainers") or []
        ]
        or None,
        volumes=[m.Volume.model_validate(v) for v in spec.get("volumes") or []] or None,
        node_selector=spec.get("nodeSelector"),
        affinity=m.Affinity.model_validate(spec["affinity"]) if "affinity" in spec else None,
        tolerations=[m.Toleration.model_validate(t) for t in spec.get("tolerations") or []] or None,
        scheduler_name=spec.get("schedulerName"),
        priority_class_name=spec.get("priorityClassName"),
        service_account_name=spec.get("serviceAccountName"),
        automount_service_account_token=spec.get("automountServiceAccountToken"),
        security_context=m.PodSecurityContext.model_validate(spec["securityContext"])
        if "securityContext" in spec
        else None,
        host_aliases=[m.HostAlias.model_validate(h) for h in spec.get("hostAliases") or []] or None,
        active_deadline_seconds=spec.get("activeDeadlineSeconds"),
        pod_spec_patch=json.dumps(patch, sort_keys=True, separators=(",", ":")) if patch else None,
        # No retryStrategy on a daemon: Argo v4.0.7 does not persist ``daemoned`` on a daemon's
        # Retry node (operator.go processNodeRetries sets it on a copy), so the step's DAG would
        # wait for it forever after its target succeeded (docs/engines.md).
        retry_strategy=None if job.daemon else retry_strategy(job.retry, controller),
        daemon=True if job.daemon else None,
    )


def cleanup_handler() -> m.Template:
    """Exit handler: on a run that did not succeed, delete its steps' Workloads.

    Kueue never finishes a failed pod group (its Workload keeps the quota and
    its pods stay Terminating under Kueue's finalizer); deleting the Workload
    releases both (kueue v0.19.2 pod_controller.go Stop on WorkloadDeleted).
    """
    return m.Template(
        name=CLEANUP,
        dag=m.DAGTemplate(
            tasks=[
                m.DAGTask(
                    name="release",
                    template=f"{CLEANUP}-steps",
                    when="'{{workflow.status}}' != 'Succeeded'",
                )
            ]
        ),
    )


def cleanup_templates(pipeline: Pipeline) -> list[m.Template]:
    """The templates the exit handler calls (listed after the handler itself)."""
    tasks = [
        m.DAGTask(
            name=f"release-{step.name}",
            template=f"{CLEANUP}-delete",
            arguments=m.Arguments(
                parameters=[
                    m.Parameter(
                        name="workload",
                        value=names.step_group(pipeline, step),
                    )
                ]
            ),
        )
        for step in pipeline.steps
    ]
    delete = m.Template(
        name=f"{CLEANUP}-delete",
        inputs=m.Inputs(parameters=[m.Parameter(name="workload")]),
        resource=m.ResourceTemplate(
            action="delete",
            flags=["--ignore-not-found"],
            manifest=(
                "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n"
                "  name: '{{inputs.parameters.workload}}'\n"
                f"  namespace: {pipeline.namespace}\n"
            ),
        ),
    )
    return [m.Template(name=f"{CLEANUP}-steps", dag=m.DAGTemplate(tasks=tasks)), delete]
