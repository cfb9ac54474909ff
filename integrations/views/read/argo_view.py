"""Read an Argo Workflow (v4 wire dict) once, as a typed ``WorkflowView``. Pure.

One walk of ``spec.templates`` (the entrypoint DAG, each step's DAG, the pod templates'
labels, ``adapters.argo.workflow``) gives the steps in order, each step's pod slots, the Kueue pod
groups and the pods per Job; ``status.nodes`` (argo ``pkg/apis/workflow/v1alpha1/
workflow_types.go`` ``NodeStatus``) gives one ``StepView`` per entrypoint-DAG task: the step's
node is ``<wf>.<step>`` and its pods' nodes ``<wf>.<step>.<slot>`` (``argo_nodes``), attempts
``...(0)``, ``...(1)`` under a ``Retry`` node. Exit codes are read from the last attempt's Pod
node, never from the Retry parent: its ``outputs.exitCode`` when set (argo ``operator.go
getExitCode`` copies it only from a container named ``main``), else the ``(exit code N)`` of its
message, which is where a containerSet pod's code is; every container's code of a failed attempt
comes from its ``Container`` child nodes ``<pod node>.<container>`` (operator.go
podReconciliation marks them from the pod's container statuses). The controller reads each
Workflow once per reconcile (``observed.Observed.views``); what is judged from a view (a Job's
failure, the failure message) is in ``verdict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainweave import codecs, labels
from trainweave.adapters import names
from trainweave.codecs import BackoffLimits, Stop
from trainweave.integrations.views.read import argo_nodes, disruption
from trainweave.integrations.views.read.argo_nodes import PodNode
from trainweave.states import ArgoPhase

Json = dict[str, Any]

TERMINAL = frozenset({ArgoPhase.SUCCEEDED, ArgoPhase.FAILED, ArgoPhase.ERROR})
FAILED = frozenset({ArgoPhase.FAILED, ArgoPhase.ERROR})


@dataclass(frozen=True)
class Attempt:
    """One failed attempt of a pod slot: its node phase, ``(container, exit code)`` of its
    terminated containers, its index ``(n)`` and its node's ``startedAt``/``finishedAt``."""

    phase: str
    exits: tuple[tuple[str, int], ...] = ()
    index: int = 0
    started: str = ""
    finished: str = ""


@dataclass(frozen=True)
class PodResult:
    """The last attempt of one pod slot of a step."""

    slot: str  # pod task name inside the step DAG
    phase: str
    exit_code: int | None
    message: str
    attempts: int
    failures: tuple[Attempt, ...] = ()  # the failed attempts, in order

    @property
    def job(self) -> tuple[str, str] | None:
        """``(replicatedJob, jobIndex)`` of the Job this pod belongs to (``names.job_of_slot``)."""
        return names.job_of_slot(self.slot)


@dataclass(frozen=True)
class StepView:
    """One step's node in one Workflow."""

    name: str
    phase: str  # "" when Argo has not reached the step yet
    message: str = ""
    pods: tuple[PodResult, ...] = ()
    slots: tuple[str, ...] = ()  # every pod task of the step's DAG, from the Workflow's spec

    @property
    def pods_succeeded(self) -> bool:
        """Every pod slot of the step succeeded: its work is done even when the step's DAG node
        is Failed because the Workflow was stopped right after (Argo marks a stopped Workflow's
        unfinished DAG nodes Failed)."""
        done = {p.slot for p in self.pods if p.phase == ArgoPhase.SUCCEEDED}
        return bool(self.slots) and all(slot in done for slot in self.slots)

    @property
    def failed_pod(self) -> PodResult | None:
        """The first pod slot whose last attempt failed (exit code first)."""
        failed = [p for p in self.pods if p.phase in FAILED]
        failed.sort(key=lambda p: (p.exit_code is None, p.slot))
        return failed[0] if failed else None


@dataclass(frozen=True)
class StepGroup:
    """One step's Kueue pod group (``kueue.x-k8s.io/pod-group-name``) in one Workflow: the
    labels of its pod templates (``adapters.argo.workflow.pod_labels``)."""

    step: str
    role: str = ""
    queue: str = ""
    replicated_jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Templates:
    """What one walk of a Workflow's ``spec.templates`` gives."""

    steps: tuple[str, ...] = ()  # the entrypoint DAG's tasks, in order
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)  # step -> its pod tasks
    groups: dict[str, StepGroup] = field(default_factory=dict)  # pod-group name -> group
    replicated_jobs: tuple[str, ...] = ()  # the pod templates' replicatedJobs, in order
    job_sizes: dict[tuple[str, str], int] = field(default_factory=dict)  # (rjob, replica) -> pods


def templates(workflow: Json) -> Templates:
    """One walk of the Workflow's templates: the entrypoint DAG (a task per step), each step's
    DAG (a task per pod, named ``names.slot``, parameter ``replica`` = the Job's index
    ``jobset.sigs.k8s.io/job-index``) and the pod templates' labels. Total: a template or task
    without a string name, or anything else not of its wire type, is skipped (``slim.workflow``
    keeps only well-typed ones; this holds for a raw Workflow too)."""
    tpls = [t for t in _dicts(_obj(workflow.get("spec")).get("templates")) if _name(t)]
    by_name = {_name(t): t for t in tpls}
    groups: dict[str, StepGroup] = {}
    rjobs: dict[str, None] = {}
    rjob_of: dict[str, str] = {}
    for tpl in tpls:
        meta = _obj(tpl.get("metadata"))
        lbls, ann = _obj(meta.get("labels")), _obj(meta.get("annotations"))
        rjob = _text(lbls.get(labels.REPLICATED_JOB))
        if rjob:
            rjobs.setdefault(rjob)
            rjob_of[_name(tpl)] = rjob
        group = _text(ann.get(labels.KUEUE_POD_GROUP_NAME)) or _text(
            lbls.get(labels.KUEUE_POD_GROUP_NAME)
        )
        step = _text(lbls.get(labels.STEP))
        if not group or not step:
            continue
        found = groups.get(group) or StepGroup(
            step, _text(lbls.get(labels.ROLE)), _text(lbls.get(labels.KUEUE_QUEUE_NAME))
        )
        if rjob and rjob not in found.replicated_jobs:
            found = StepGroup(found.step, found.role, found.queue, (*found.replicated_jobs, rjob))
        groups[group] = found
    sizes: dict[tuple[str, str], int] = {}
    for tpl in tpls:
        for task in _tasks(tpl):
            job = rjob_of.get(_text(task.get("template")))
            if job is None:
                continue
            params = _dicts(_obj(task.get("arguments")).get("parameters"))
            replica = next(
                (_text(p.get("value"), "0") for p in params if p.get("name") == "replica"), "0"
            )
            sizes[(job, replica)] = sizes.get((job, replica), 0) + 1
    entry = by_name.get(_text(_obj(workflow.get("spec")).get("entrypoint"))) or {}
    steps: list[str] = []
    slots: dict[str, tuple[str, ...]] = {}
    for task in _tasks(entry):
        step = _name(task)
        if step in slots:
            continue
        steps.append(step)
        inner = by_name.get(_text(task.get("template"))) or {}
        slots[step] = tuple(_name(t) for t in _tasks(inner))
    return Templates(tuple(steps), slots, groups, tuple(rjobs), sizes)


def _obj(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Json]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: Any, default: str = "") -> str:
    """A wire string ("" or ``default`` for anything else; numbers as Argo prints them)."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return default


def _name(obj: Json) -> str:
    name = obj.get("name")
    return name if isinstance(name, str) else ""


def _tasks(tpl: Json) -> list[Json]:
    """A template's DAG tasks that have a string name."""
    return [t for t in _dicts(_obj(tpl.get("dag")).get("tasks")) if _name(t)]


@dataclass(frozen=True)
class WorkflowView:
    """What the controller needs to know about one Workflow, read once."""

    name: str
    uid: str
    attempt: int
    segment: int
    phase: str
    message: str
    suspend: bool
    shutdown: str
    stopped_for: Stop | None  # the controller stopped it (``codecs.decode_stop``)
    max_restarts: int
    steps: dict[str, StepView] = field(default_factory=dict)
    backoff_limits: BackoffLimits = field(default_factory=dict)
    disruptions: disruption.Record = field(default_factory=dict)
    nodes_known: bool = True
    created: str = ""
    finished_at: str = ""
    templates: Templates = field(default_factory=Templates)

    @property
    def terminal(self) -> bool:
        """Argo has finished with this Workflow."""
        return self.phase in TERMINAL

    @property
    def groups(self) -> dict[str, StepGroup]:
        """Pod-group name -> its step's group (``Templates.groups``)."""
        return self.templates.groups

    @property
    def succeeded_steps(self) -> frozenset[str]:
        """Steps whose node Succeeded in this Workflow, or all of whose pods did."""
        return frozenset(
            n for n, s in self.steps.items() if s.phase == ArgoPhase.SUCCEEDED or s.pods_succeeded
        )

    @property
    def backoff_job(self) -> str:
        """The job the controller stopped this Workflow for ("" if none)."""
        return self.stopped_for.failed_job if self.stopped_for else ""


def view(workflow: Json) -> WorkflowView:
    """The WorkflowView of a Workflow wire dict: one template walk, one pass over its nodes."""
    meta = workflow.get("metadata") or {}
    spec = workflow.get("spec") or {}
    status = workflow.get("status") or {}
    name = str(meta.get("name", ""))
    lbls = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    nodes = argo_nodes.decode_nodes(status)
    walked = templates(workflow)
    steps = _steps(name, nodes or {})
    for step in walked.steps:
        found = steps.get(step) or StepView(step, "")
        steps[step] = StepView(
            found.name, found.phase, found.message, found.pods, walked.slots[step]
        )
    return WorkflowView(
        name=name,
        uid=str(meta.get("uid", "")),
        attempt=codecs.decode_int(_opt(lbls.get(labels.ATTEMPT))),
        segment=codecs.decode_int(_opt(lbls.get(labels.SEGMENT))),
        phase=str(status.get("phase") or ""),
        message=str(status.get("message") or ""),
        suspend=bool(spec.get("suspend")),
        shutdown=str(spec.get("shutdown") or ""),
        stopped_for=codecs.decode_stop(_opt(ann.get(labels.STOPPED_FOR))),
        max_restarts=codecs.decode_int(_opt(ann.get(labels.MAX_RESTARTS_ANNOTATION))),
        steps=steps,
        backoff_limits=codecs.decode_backoff_limits(
            _opt(ann.get(labels.BACKOFF_LIMITS_ANNOTATION))
        ),
        disruptions=disruption.decode(str(ann.get(disruption.ANNOTATION) or "")),
        nodes_known=nodes is not None,
        created=str(meta.get("creationTimestamp") or ""),
        finished_at=str(status.get("finishedAt") or ""),
        templates=walked,
    )


def _steps(wf: str, nodes: dict[str, Json]) -> dict[str, StepView]:
    """One StepView per step node ``<wf>.<step>``, with its pods (one pass over the nodes)."""
    by_name = {str(n.get("name", "")): n for n in nodes.values()}
    pods: dict[str, list[tuple[PodNode, Json]]] = {}
    steps: dict[str, Json] = {}
    prefix = wf + "."
    for node_name, node in by_name.items():
        if not node_name.startswith(prefix):
            continue
        rest = node_name[len(prefix) :]
        if "." not in rest:
            steps[rest] = node
        elif node.get("type") == "Pod" and (ref := argo_nodes.pod_node(node_name)) is not None:
            pods.setdefault(ref.step, []).append((ref, node))
    return {
        step: StepView(
            step,
            str(node.get("phase") or ""),
            str(node.get("message") or ""),
            _pods(pods.get(step, []), by_name),
        )
        for step, node in steps.items()
    }


def _pods(found: list[tuple[PodNode, Json]], by_name: dict[str, Json]) -> tuple[PodResult, ...]:
    """The last attempt of each pod slot, with its failed attempts in order."""
    last: dict[str, tuple[int, Json]] = {}
    failures: dict[str, list[tuple[int, Attempt]]] = {}
    for ref, node in found:
        slot, index = ref.slot, ref.index
        if slot not in last or index >= last[slot][0]:
            last[slot] = (index, node)
        phase = str(node.get("phase") or "")
        if phase in FAILED:
            times = (str(node.get("startedAt") or ""), str(node.get("finishedAt") or ""))
            attempt = Attempt(phase, _exits(str(node.get("name")), node, by_name), index, *times)
            failures.setdefault(slot, []).append((index, attempt))
    return tuple(
        PodResult(
            slot=slot,
            phase=str(node.get("phase") or ""),
            exit_code=argo_nodes.exit_code(node),
            message=str(node.get("message") or ""),
            attempts=index + 1,
            failures=tuple(a for _, a in sorted(failures.get(slot, []), key=lambda f: f[0])),
        )
        for slot, (index, node) in sorted(last.items())
    )


def _exits(name: str, node: Json, by_name: dict[str, Json]) -> tuple[tuple[str, int], ...]:
    """``(container, exit code)`` of a Pod node's terminated containers: its Container child
    nodes (a containerSet pod), plus the container its failure message names (an init
    container has no child node), else ``main``'s ``outputs.exitCode``."""
    out: dict[str, int] = {}
    prefix = name + "."
    for child_name, child in by_name.items():
        if child.get("type") != "Container" or not child_name.startswith(prefix):
            continue
        container = child_name[len(prefix) :]
        if child.get("phase") == ArgoPhase.SUCCEEDED:
            out[container] = 0
        elif (code := argo_nodes.message_code(child)) is not None:
            out[container] = code
    message = str(node.get("message") or "")
    if (code := argo_nodes.message_code(node)) is not None:
        out.setdefault(message.partition(":")[0], code)
    elif not out and (code := argo_nodes.exit_code(node)) is not None:
        out["main"] = code
    return tuple(out.items())


def _opt(value: object) -> str | None:
    """A label or annotation value as text (None: absent)."""
    return None if value is None else str(value)
