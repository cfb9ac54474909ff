"""Read an Argo Workflow (v4 wire dict) as trainweave steps. Pure.

Maps ``status.nodes`` (argo ``pkg/apis/workflow/v1alpha1/workflow_types.go``
``NodeStatus``) to one ``StepView`` per entrypoint-DAG task: the rendered
Workflow names each step's task after the step, so the step's node is
``<wf>.<step>`` and its pods are ``<wf>.<step>.<pod-task>`` (a ``Retry`` node
when the template retries) with attempts ``...(0)``, ``...(1)``. Exit codes are
read from the last attempt's Pod node, never from the Retry parent: its
``outputs.exitCode`` when set (argo ``operator.go getExitCode`` copies it only
from a container named ``main``), else the ``(exit code N)`` of its message
(``inferFailedReason``: ``<container>: <reason> (exit code N)...``), which is
where a containerSet pod's code is; every container's code of a failed attempt
comes from its ``Container`` child nodes ``<pod node>.<container>`` (operator.go
podReconciliation marks them from the pod's container statuses). ``status.compressedNodes`` is
base64(gzip(JSON)) (argo ``util/file/fileutil.go``: gzip or pgzip, both gzip
streams; v4.0.7 has no other codec); offloaded nodes
(``offloadNodeStatusVersion``) live in Argo's database and are reported as
unknown.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import re
from dataclasses import dataclass, field
from typing import Any

from trainweave import labels
from trainweave.adapters.argo import retry
from trainweave.adapters.argo.retry import EXIT_CODE_MESSAGE
from trainweave.integrations.views import disruption
from trainweave.integrations.views import verdict as judging
from trainweave.integrations.views.verdict import Verdict
from trainweave.labels import StoppedFor

Json = dict[str, Any]

TERMINAL = frozenset({"Succeeded", "Failed", "Error"})
FAILED = frozenset({"Failed", "Error"})
# A pod the API server refused to create (an admission plugin or webhook: a ServiceAccount the
# namespace lacks, PodSecurity, an invalid spec). Argo v4.0.7 fails the node with the error's
# text (workflowpod.go createWorkflowPod: not transient) and retries it as Error, with backoff,
# as often as its retryStrategy allows; no retry can succeed. The Job controller's event
# reason for it (controller_utils.go FailedCreatePodReason).
FAILED_CREATE = "FailedCreate"
_REFUSED = re.compile(r'pods? "[^"]*" is (forbidden|invalid): ', re.IGNORECASE)

ATTEMPT_SUFFIX = re.compile(r"\((\d+)\)$")  # a retried Pod node's ``(N)``
_MESSAGE_EXIT_CODE = re.compile(EXIT_CODE_MESSAGE.format(codes="[0-9]+"))


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
        done = {p.slot for p in self.pods if p.phase == "Succeeded"}
        return bool(self.slots) and all(slot in done for slot in self.slots)

    @property
    def failed_pod(self) -> PodResult | None:
        """The first pod slot whose last attempt failed (exit code first)."""
        failed = [p for p in self.pods if p.phase in FAILED]
        failed.sort(key=lambda p: (p.exit_code is None, p.slot))
        return failed[0] if failed else None


@dataclass(frozen=True)
class WorkflowView:
    """What the controller needs to know about one Workflow."""

    name: str
    uid: str
    attempt: int
    segment: int
    phase: str
    message: str
    suspend: bool
    shutdown: str
    stopped_for: str
    max_restarts: int
    steps: dict[str, StepView] = field(default_factory=dict)
    backoff_limits: dict[str, dict[str, Json]] = field(default_factory=dict)
    disruptions: disruption.Record = field(default_factory=dict)
    nodes_known: bool = True
    created: str = ""
    finished_at: str = ""

    @property
    def terminal(self) -> bool:
        """Argo has finished with this Workflow."""
        return self.phase in TERMINAL

    @property
    def succeeded_steps(self) -> frozenset[str]:
        """Steps whose node Succeeded in this Workflow, or all of whose pods did."""
        return frozenset(
            n for n, s in self.steps.items() if s.phase == "Succeeded" or s.pods_succeeded
        )

    @property
    def backoff_job(self) -> str:
        """The job the controller stopped this Workflow for ("" if none)."""
        head, _, job = self.stopped_for.partition("/")
        stopped = head in (StoppedFor.JOB_FAILED, StoppedFor.JOB_FAILED_OLD)
        return job if stopped else ""

    def verdict(self) -> Verdict | None:
        """The first job the Job controller would fail now, by the retry policies the controller
        keeps (``backoff_limits``; ``verdict.verdict``, disruptions excused by ``disruptions``);
        first, a pod the API server refused to create (``refused``)."""
        for step_view in self.steps.values():
            for pod in step_view.pods:
                if pod.phase == "Error" and refused(pod.message):
                    job = pod.slot.rsplit("-", 2)[0]
                    return Verdict(step_view.name, job, FAILED_CREATE, pod.message)
        for step, jobs in self.backoff_limits.items():
            view_ = self.steps.get(step)
            for job, wire in jobs.items():
                policy = retry.policy_of_wire(wire)
                found = judging.verdict(step, job, policy, view_, self.disruptions)
                if found is not None:
                    return found
        return None

    def failed_slot(self) -> str:
        """The pod slot (``<job>-<replica>-<index>``) of the first failure ("" if none is known):
        the judged job's first failed pod, else the first failed step's."""
        verdict = self.verdict() if self.backoff_job else None
        for step in self.steps.values():
            pods = [p for p in step.pods if p.failures or p.phase in FAILED]
            if verdict is not None:
                pods = [p for p in pods if p.slot.rsplit("-", 2)[0] == verdict.job]
            elif step.phase not in FAILED:
                continue
            if pods:
                return sorted(pods, key=lambda p: p.slot)[0].slot
        return ""

    def failure(self) -> tuple[str, str]:
        """``(step, message)`` naming the step that failed and its exit code."""
        verdict = self.verdict() if self.backoff_job else None
        if verdict is not None:
            return verdict.step, (
                f"step {verdict.step!r} failed: job {verdict.job!r}: {verdict.reason}:"
                f" {verdict.message}"
            )
        for step in self.steps.values():
            if step.phase not in FAILED:
                continue
            pod = step.failed_pod
            if pod is None:
                return step.name, f"step {step.name!r} failed: {step.message or self.message}"
            code = "" if pod.exit_code is None else f" with exit code {pod.exit_code}"
            detail = pod.message or step.message
            tail = f" ({detail})" if detail else ""
            return step.name, f"step {step.name!r} failed: pod {pod.slot!r} exited{code}{tail}"
        return "", f"workflow {self.name} {self.phase}: {self.message}".rstrip(": ")


def refused(message: str) -> bool:
    """Whether a failed Pod node's message is the API server refusing the pod for good (an
    exceeded ResourceQuota is also Forbidden, but Argo waits for it: not a refusal)."""
    return _REFUSED.match(message) is not None and "exceeded quota" not in message


def decode_nodes(status: Json) -> dict[str, Json] | None:
    """``status.nodes``, or decompressed ``compressedNodes``; None when offloaded."""
    nodes = status.get("nodes")
    if nodes:
        return dict(nodes)
    packed = status.get("compressedNodes")
    if packed:
        raw = base64.b64decode(packed)
        if raw[:2] != b"\x1f\x8b":  # zstd/brotli (argo >= 4.1 option): not supported
            return None
        decoded: dict[str, Json] = json.loads(gzip.decompress(raw))
        return decoded
    if status.get("offloadNodeStatusVersion"):
        return None
    return {}


_VIEWS: dict[tuple[str, str, str], WorkflowView] = {}
_VIEWS_MAX = 4096


def view(workflow: Json) -> WorkflowView:
    """A WorkflowView of a Workflow wire dict (memoised per uid + resourceVersion)."""
    meta = workflow.get("metadata") or {}
    rv = str(meta.get("resourceVersion") or "")
    if not rv:
        return _view(workflow)
    key = (str(meta.get("uid", "")), str(meta.get("name", "")), rv)
    found = _VIEWS.get(key)
    if found is None:
        if len(_VIEWS) >= _VIEWS_MAX:
            _VIEWS.clear()
        found = _VIEWS[key] = _view(workflow)
    return found


def _view(workflow: Json) -> WorkflowView:
    meta = workflow.get("metadata") or {}
    spec = workflow.get("spec") or {}
    status = workflow.get("status") or {}
    name = str(meta.get("name", ""))
    lbls = meta.get("labels") or {}
    ann = meta.get("annotations") or {}
    nodes = decode_nodes(status)
    steps = _steps(name, nodes or {})
    for step in _template_steps(workflow):
        steps.setdefault(step, StepView(step, ""))
    for step, slots in _template_slots(workflow).items():
        if step in steps:
            steps[step] = dataclasses.replace(steps[step], slots=slots)
    return WorkflowView(
        name=name,
        uid=str(meta.get("uid", "")),
        attempt=_int(lbls.get(labels.ATTEMPT)),
        segment=_int(lbls.get(labels.SEGMENT)),
        phase=str(status.get("phase") or ""),
        message=str(status.get("message") or ""),
        suspend=bool(spec.get("suspend")),
        shutdown=str(spec.get("shutdown") or ""),
        stopped_for=str(ann.get(labels.STOPPED_FOR, "")),
        max_restarts=_int(ann.get(labels.MAX_RESTARTS_ANNOTATION)),
        steps=steps,
        backoff_limits=_json(ann.get(labels.BACKOFF_LIMITS_ANNOTATION)),
        disruptions=disruption.decode(str(ann.get(disruption.ANNOTATION) or "")),
        nodes_known=nodes is not None,
        created=str(meta.get("creationTimestamp") or ""),
        finished_at=str(status.get("finishedAt") or ""),
    )


def _steps(wf: str, nodes: dict[str, Json]) -> dict[str, StepView]:
    by_name = {str(n.get("name", "")): n for n in nodes.values()}
    steps: dict[str, StepView] = {}
    prefix = wf + "."
    for node_name, node in by_name.items():
        rest = node_name[len(prefix) :] if node_name.startswith(prefix) else ""
        if not rest or "." in rest:
            continue
        pods = _pods(node_name + ".", by_name)
        steps[rest] = StepView(
            rest, str(node.get("phase") or ""), str(node.get("message") or ""), pods
        )
    return steps


def _pods(prefix: str, by_name: dict[str, Json]) -> tuple[PodResult, ...]:
    last: dict[str, tuple[int, Json]] = {}
    failures: dict[str, list[tuple[int, Attempt]]] = {}
    for node_name, node in by_name.items():
        if node.get("type") != "Pod" or not node_name.startswith(prefix):
            continue
        tail = node_name[len(prefix) :]
        match = ATTEMPT_SUFFIX.search(tail)
        slot, index = (tail[: match.start()], int(match.group(1))) if match else (tail, 0)
        if slot not in last or index >= last[slot][0]:
            last[slot] = (index, node)
        phase = str(node.get("phase") or "")
        if phase in FAILED:
            times = (str(node.get("startedAt") or ""), str(node.get("finishedAt") or ""))
            attempt = Attempt(phase, _exits(node_name, node, by_name), index, *times)
            failures.setdefault(slot, []).append((index, attempt))
    results = []
    for slot, (index, node) in sorted(last.items()):
        results.append(
            PodResult(
                slot=slot,
                phase=str(node.get("phase") or ""),
                exit_code=exit_code(node),
                message=str(node.get("message") or ""),
                attempts=index + 1,
                failures=tuple(a for _, a in sorted(failures.get(slot, []), key=lambda f: f[0])),
            )
        )
    return tuple(results)


def workflow_of(pod: Json) -> str:
    """The Workflow that made a pod (Argo's ``workflows.argoproj.io/workflow`` label)."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(labels.ARGO_WORKFLOW, ""))


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
        if child.get("phase") == "Succeeded":
            out[container] = 0
        elif (code := _message_code(child)) is not None:
            out[container] = code
    message = str(node.get("message") or "")
    if (code := _message_code(node)) is not None:
        out.setdefault(message.partition(":")[0], code)
    elif not out and (code := exit_code(node)) is not None:
        out["main"] = code
    return tuple(out.items())


def _message_code(node: Json) -> int | None:
    match = _MESSAGE_EXIT_CODE.match(str(node.get("message") or ""))
    return int(match.group(1)) if match else None


def exit_code(node: Json) -> int | None:
    """A Pod node's exit code: ``outputs.exitCode``, else the one its failure message names."""
    code = (node.get("outputs") or {}).get("exitCode")
    if code not in (None, ""):
        return int(code)
    return _message_code(node)


def _template_steps(workflow: Json) -> list[str]:
    """Step names in the entrypoint DAG, in order (steps Argo has not reached)."""
    spec = workflow.get("spec") or {}
    entry = spec.get("entrypoint")
    for tpl in spec.get("templates") or []:
        if tpl.get("name") == entry and tpl.get("dag"):
            return [str(t["name"]) for t in tpl["dag"].get("tasks") or []]
    return []


def _template_slots(workflow: Json) -> dict[str, tuple[str, ...]]:
    """Step -> the pod tasks of its DAG template (``<job>-<replica>-<index>``)."""
    spec = workflow.get("spec") or {}
    by_name = {str(t.get("name")): t for t in spec.get("templates") or []}
    entry = by_name.get(str(spec.get("entrypoint")))
    out: dict[str, tuple[str, ...]] = {}
    for task in ((entry or {}).get("dag") or {}).get("tasks") or []:
        dag = (by_name.get(str(task.get("template"))) or {}).get("dag") or {}
        out[str(task["name"])] = tuple(str(t["name"]) for t in dag.get("tasks") or [])
    return out


def step_groups(workflow: Json) -> dict[str, Json]:
    """Pod-group name -> ``{step, role, queue, replicatedJobs}`` from the pod templates."""
    groups: dict[str, Json] = {}
    for tpl in (workflow.get("spec") or {}).get("templates") or []:
        meta = tpl.get("metadata") or {}
        lbls = meta.get("labels") or {}
        ann = meta.get("annotations") or {}
        group = ann.get(labels.KUEUE_POD_GROUP_NAME) or lbls.get(labels.KUEUE_POD_GROUP_NAME)
        step = lbls.get(labels.STEP)
        if not group or not step:
            continue
        entry = groups.setdefault(
            group,
            {
                "step": step,
                "role": lbls.get(labels.ROLE, ""),
                "queue": lbls.get(labels.KUEUE_QUEUE_NAME, ""),
                "replicatedJobs": [],
            },
        )
        rjob = lbls.get(labels.REPLICATED_JOB)
        if rjob and rjob not in entry["replicatedJobs"]:
            entry["replicatedJobs"].append(rjob)
    return groups


def _json(value: object) -> dict[str, dict[str, Json]]:
    try:
        out = json.loads(str(value)) if value else {}
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0
