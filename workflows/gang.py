"""GangStep: one step of an author's Hera Workflow, admitted by Kueue as one pod group.

A :class:`GangStep` is a trainweave ``Step`` holding one ``Job``
(``trainweave.model``): ``pods`` identical pods on one ``queue``. Calling it
inside a Hera ``DAG`` adds to the enclosing Workflow exactly the templates
``trainweave render`` makes for a step (``adapters.argo.workflow``) and returns the DAG task
that runs the step:

- ``step-<name>``: a DAG with one task per pod, ``<name>-<replica>-<index>``;
- ``<name>``: the pod's containerSet template (the container keeps its
  name). Its pod labels carry the step's queue (``kueue.x-k8s.io/queue-name``)
  and pod group
  (``kueue.x-k8s.io/pod-group-name`` = ``<workflow>-<name>-a0``, 63 characters
  at most), its annotation ``kueue.x-k8s.io/pod-group-total-count`` = pods, a
  ``retryStrategy`` from the RetryPolicy (``adapters.argo.retry``) and, with
  ``dns``, JobSet's hostname ``<workflow>-<name>-<replica>-<index>`` and the
  subdomain (default: the Workflow's name);
- with ``service``, a ``service`` task in the step's DAG applying the headless
  Service behind that subdomain (owned by the Workflow; ``trainweave render``
  emits it as a separate manifest instead).

Fan-out: a step called with ``with_items``/``with_param`` (or ``instance=``) runs
once per item, each run its own pod group: both templates take an input
parameter ``instance`` (default ``{{item}}``), which goes into the pod-group
name ``<workflow>-<name>-<instance>-a0`` and the hostnames
``<workflow>-<name>-<instance>-<replica>-<index>`` (so the PET_MASTER_ADDR of
each run is its own rank 0); the pod template may use
``{{inputs.parameters.instance}}`` (e.g. in ``args``).

A second task of one step must name its own ``instance`` (``tasks.check_call``), and a
step's Task has no outputs (``tasks.StepTask``).

``exit_cleanup`` adds render's exit handler, which deletes the step Workloads
of a run that did not succeed (Kueue never finishes a failed pod group), one per
literal instance of a fanned-out step.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from hera.workflows import Task, Workflow
from hera.workflows import models as m

from trainweave.adapters import names
from trainweave.adapters.argo import objects
from trainweave.adapters.argo import workflow as argo
from trainweave.adapters.trainjob import policies
from trainweave.adapters.trainjob.jobspec import DEFAULT_BACKOFF_LIMIT
from trainweave.errors import InputError
from trainweave.k8s_names import DNS1123_LABEL
from trainweave.labels import Ancestor, StepRole
from trainweave.model import HeadlessService, Job, Pipeline, RetryPolicy, Step
from trainweave.workflows import checks, context, tasks

Json = dict[str, Any]
SERVICE_TEMPLATE = "trainweave-service"
DEFAULT_RETRY = RetryPolicy(DEFAULT_BACKOFF_LIMIT)  # batch/v1 Job default backoffLimit, per pod
INSTANCE = tasks.INSTANCE
INSTANCE_VALUE = "{{inputs.parameters.instance}}"


@dataclass(frozen=True)
class GangStep:
    """One step as Kueue admits it: ``pods`` pods of one container on ``queue``.

    Pure until called: ``templates(workflow)`` gives the Argo templates for a
    Workflow named ``workflow``; calling the step inside ``with DAG(...)`` adds
    them to the enclosing Workflow and returns the step's ``Task``.
    """

    name: str
    role: StepRole
    queue: str
    container: Json
    pods: int = 1
    ancestor: Ancestor | None = None
    pod_spec: Json = field(default_factory=dict)
    retry: RetryPolicy = DEFAULT_RETRY
    torch: bool = False
    nproc_per_node: int | None = None
    dns: bool = False
    service: bool = False
    subdomain: str | None = None
    priority_class: str | None = None

    def __post_init__(self) -> None:
        errors = []
        if not DNS1123_LABEL.match(self.name) or len(self.name) > names.MAX_LABEL:
            errors.append(InputError("name", "must be a DNS label (a-z, 0-9, '-'; 63 at most)"))
        if self.pods < 1:
            errors.append(InputError("pods", f"must be at least 1, got {self.pods}"))
        checks.refuse(f"step {self.name!r}", errors)

    def job(self, workflow: str) -> Job:
        """The trainweave Job: the final pod template (PET_* env when ``torch``)."""
        container = copy.deepcopy(self.container)
        policy = policies.of_builder(torch=self.torch)
        policy.step_env(
            container,
            workflow,
            self.name,
            self.pods,
            self.nproc_per_node,
            self._subdomain(workflow),
        )
        spec = {**copy.deepcopy(self.pod_spec), "containers": [container]}
        return Job(
            self.name, self.ancestor, 1, self.pods, {"metadata": {}, "spec": spec}, self.retry
        )

    def step(self, workflow: str) -> Step:
        """The trainweave Step (no ``depends_on``: the author's DAG orders steps)."""
        return Step(
            self.name, self.role, (self.job(workflow),), self.queue, (), self.priority_class
        )

    def pipeline(self, workflow: str, namespace: str | None = None) -> Pipeline:
        """A one-step Pipeline, the unit ``adapters.argo.workflow`` renders."""
        return pipeline_of([self], workflow, namespace)

    def group_name(self, workflow: str) -> str:
        """The Kueue pod-group (and Workload) name of this step in ``workflow``."""
        return names.group_name(workflow, self.name, 0)

    def templates(
        self, workflow: str, namespace: str | None = None, fan_out: bool = False
    ) -> list[m.Template]:
        """``step-<name>`` (+ the Service template with ``service``) and the pod template;
        with ``fan_out``, both per ``instance`` (module docstring)."""
        pipeline = self.pipeline(workflow, namespace)
        step = pipeline.steps[0]
        dag = argo.step_template(pipeline, step)
        pod = workflow_volume_mounts(argo.pod_template(pipeline, step, step.jobs[0]))
        if fan_out:
            pod = per_instance(dag, pod, f"{workflow}-{self.name}-")
        out = [dag, pod]
        if self.service:
            assert dag.dag is not None
            dag.dag.tasks.append(m.DAGTask(name="service", template=SERVICE_TEMPLATE))
            out.append(service_template(pipeline))
        return out

    def check(self, workflow: Workflow, instance: int = 0) -> None:
        """Raise if a name would pass 63 characters once Argo names the Workflow (and an
        ``instance`` of that many characters is added)."""
        wf = context.workflow_name(workflow)
        extra = instance + 1 if instance else 0
        candidates = [self.group_name(wf)]
        if self.dns:
            candidates.append(names.pod_hostname(wf, self.name, 0, self.pods - 1))
        for value in candidates:
            size = max(len(value), context.longest(value, workflow)) + extra
            if size > names.MAX_LABEL:
                raise ValueError(
                    f"step {self.name!r}: {value!r} can reach {size} characters (at most"
                    f" {names.MAX_LABEL}); shorten the Workflow's name or the step's"
                )

    def __call__(
        self, name: str | None = None, *, workflow: Workflow | None = None, **task: Any
    ) -> Task:
        """Add this step's templates to the Workflow; return its Task (in the open DAG).

        With ``with_items``/``with_param`` each item runs as its own pod group, named by
        ``instance`` (default ``{{item}}``: items must then be DNS-label strings or numbers).
        """
        wf = workflow or context.active_workflow()
        context.refuse_steps(f"{self.name}(name={name or self.name!r})")
        instance = task.pop(INSTANCE, None)
        if instance is None and (task.get("with_items") is not None or task.get("with_param")):
            instance = "{{item}}"
        self.check(wf, _instance_length(instance, task.get("with_items")))
        fan_out = instance is not None
        shapes = [self.templates(context.workflow_name(wf), wf.namespace, f) for f in (False, True)]
        if context.template(wf, f"step-{self.name}") in (None, shapes[0][0], shapes[1][0]):
            group = self.group_name(context.workflow_name(wf))  # not another step's name:
            tasks.check_call(self.name, group, self.torch, wf, name or self.name, instance, task)
        mounts = tasks.mount_errors(wf, self.container, self.pod_spec.get("volumes") or [])
        checks.refuse(f"{self.name}(name={name or self.name!r})", mounts)
        for template in shapes[fan_out]:
            context.add_template(wf, template)
        if fan_out:
            task["arguments"] = {**(task.get("arguments") or {}), INSTANCE: instance}
        return tasks.StepTask(name=name or self.name, template=f"step-{self.name}", **task)

    def _subdomain(self, workflow: str) -> str:
        return self.subdomain or workflow


def workflow_volume_mounts(pod: m.Template) -> m.Template:
    """Move the container's mounts of volumes the template does not define (the Workflow's
    ``volumes`` / ``volumeClaimTemplates``) to ``containerSet.volumeMounts``: Argo v4.0.7 adds a
    Workflow volume to a pod only when the template's own mounts name it, and for a containerSet
    those are the set's, not its containers' (workflow/controller/workflowpod.go
    addVolumeReferences -> Template.GetVolumeMounts), so the pod was invalid ("volumeMounts[0].name:
    Not found"). The set's mounts go to every container: with one container, the same pod."""
    if pod.container_set is None or len(pod.container_set.containers) != 1:
        return pod
    (container,) = pod.container_set.containers
    own = {v.name for v in pod.volumes or []}
    outer = [vm for vm in container.volume_mounts or [] if vm.name not in own]
    if outer:
        container.volume_mounts = [
            vm for vm in container.volume_mounts or [] if vm.name in own
        ] or None
        pod.container_set.volume_mounts = outer
    return pod


def per_instance(dag: m.Template, pod: m.Template, prefix: str) -> m.Template:
    """Give ``dag`` and ``pod`` the input ``instance`` and put it after ``prefix``
    (``<workflow>-<step>-``) in every name of the pod template: its pod group, hostnames,
    PET_MASTER_ADDR. Returns the new pod template (``dag`` is changed in place)."""
    assert dag.dag is not None
    dag.inputs = m.Inputs(parameters=[m.Parameter(name=INSTANCE)])
    for t in dag.dag.tasks:
        args = t.arguments.parameters if t.arguments and t.arguments.parameters else []
        t.arguments = m.Arguments(
            parameters=[*args, m.Parameter(name=INSTANCE, value=INSTANCE_VALUE)]
        )

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(prefix, f"{prefix}{INSTANCE_VALUE}-")
        if isinstance(value, list):
            return [rename(v) for v in value]
        if isinstance(value, dict):
            return {k: rename(v) for k, v in value.items()}
        return value

    wire = rename(pod.model_dump(by_alias=True, exclude_none=True))
    wire["inputs"]["parameters"].append({"name": INSTANCE})
    return m.Template.model_validate(wire)


def _instance_length(instance: str | None, items: Any) -> int:
    """Characters an instance adds at most: the longest literal item, else the literal value
    (a ``with_param`` list is unknown until run time: not checked)."""
    if instance is None:
        return 0
    if instance == "{{item}}" and isinstance(items, list):
        for item in items:
            if not isinstance(item, (str, int)) or not DNS1123_LABEL.match(str(item)):
                raise ValueError(
                    f"item {item!r} cannot name a pod group: give instance= (a DNS label)"
                )
        return max((len(str(i)) for i in items), default=0)
    return 0 if "{{" in instance else len(instance)


def pipeline_of(steps: Sequence[GangStep], workflow: str, namespace: str | None = None) -> Pipeline:
    """The Pipeline of ``steps`` in a Workflow named ``workflow`` (in step order)."""
    dns = {s._subdomain(workflow) for s in steps if s.dns}
    if len(dns) > 1:
        raise ValueError(f"steps of one Workflow name different subdomains: {sorted(dns)}")
    return Pipeline(
        name=workflow,
        namespace=namespace or "{{workflow.namespace}}",
        steps=tuple(s.step(workflow) for s in steps),
        runtime_kind="",
        runtime_name="",
        runtime_snapshot={},
        service=HeadlessService(dns.pop()) if dns else None,
    )


def service_template(pipeline: Pipeline) -> m.Template:
    """Apply the headless Service of the pipeline's subdomain, owned by the Workflow."""
    service = objects.supporting(pipeline)[0]
    return m.Template(
        name=SERVICE_TEMPLATE,
        resource=m.ResourceTemplate(
            action="apply",
            set_owner_reference=True,
            manifest=yaml.safe_dump(service, sort_keys=False),
        ),
    )


def exit_cleanup(*steps: GangStep, workflow: Workflow | None = None) -> str:
    """Add the exit handler releasing ``steps``' Workloads; returns its name for ``on_exit``."""
    wf = workflow or context.active_workflow()
    wf_name = context.workflow_name(wf)
    pipeline = pipeline_of(steps, wf_name, wf.namespace)
    release, delete = argo.cleanup_templates(pipeline)
    assert release.dag is not None
    release.dag.tasks = [
        task
        for step, own in zip(steps, release.dag.tasks, strict=True)
        for task in _release_instances(step, own, wf, wf_name)
    ]
    for template in [argo.cleanup_handler(), release, delete]:
        context.add_template(wf, template)
    return argo.CLEANUP


def _release_instances(
    step: GangStep, own: m.DAGTask, wf: Workflow, wf_name: str
) -> list[m.DAGTask]:
    """The release tasks of ``step``: its own group's (``own``), or one per literal instance
    its tasks in ``wf`` ran as (``<workflow>-<step>-<instance>-a0``); a ``with_param``
    instance is known only at run time, so it is not released."""
    instances = tasks.instances_of(wf, step.name)
    if not instances or "" in instances:
        return [own]
    prefix = f"{wf_name}-{step.name}-"
    group = step.group_name(wf_name)
    return [
        m.DAGTask(
            name=f"{own.name}-{instance}",
            template=own.template,
            arguments=m.Arguments(
                parameters=[
                    m.Parameter(
                        name="workload", value=group.replace(prefix, f"{prefix}{instance}-", 1)
                    )
                ]
            ),
        )
        for instance in sorted(instances)
    ]
