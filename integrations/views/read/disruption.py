"""Which failed pod attempts a disruption excuses, read from pod conditions. Pure.

A Job never counts the pods Kueue stops (it suspends the Job, and the Job controller removes
their tracking finalizer before deleting them: k8s.io/kubernetes v1.36
pkg/controller/job/job_controller.go ``deleteJobPods``); trainweave counts no pod that
Kubernetes disrupts either. Argo's retry expression cannot tell why a pod stopped (its node
reads ``node: Error (exit code 143)`` either way), so the controller reads the pods:

- **stopped**: condition ``TerminationTarget``, which Kueue v0.19.2 sets on every running pod of
  a pod group it evicts (reason ``WorkloadEvictedDueTo<reason>``, e.g. ``...Preempted``;
  pkg/controller/jobs/pod/pod_controller.go ``Stop``);
- **disrupted**: condition ``DisruptionTarget`` (k8s.io/api v0.36 core/v1/types.go: reasons
  ``PreemptionByScheduler``, ``DeletionByTaintManager``, ``EvictionByEvictionAPI`` (an eviction,
  a node drain), ``DeletionByPodGC``, ``TerminationByKubelet``), status True;
- **a peer of one of them**: a failed attempt of another pod of the same step in the same
  Workflow (the same pod group) that already existed when the condition was set (its Argo
  node's ``startedAt`` <= the condition's ``lastTransitionTime``) and failed at or after that
  time (the node's ``finishedAt``): a rank that lost its gang (a "peer lost" exit). It is
  judged as the disruption it follows. An attempt created after the disruption (a retry, the
  re-admitted gang) is judged on its own: a real failure then counts.

Kueue deletes a stopped pod once its replacement exists, so what the controller sees is
recorded on the Workflow (annotation ``trainweave.io/disruptions``): per step, one ``Mark`` per
condition (type, reason, time) with the attempts (``<slot>(<n>)``) that carried it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainweave import codecs
from trainweave.adapters.argo.retry import Disrupted
from trainweave.integrations.views.read import argo_nodes
from trainweave.integrations.views.read.times import parse_time

Json = dict[str, Any]
ANNOTATION = "trainweave.io/disruptions"  # on a Workflow: the Record, as JSON
DISRUPTION_TARGET = "DisruptionTarget"  # k8s.io/api core/v1 PodConditionType
TERMINATION_TARGET = "TerminationTarget"  # kueue pkg/controller/jobs/pod (podcondition)
MARKS = {TERMINATION_TARGET: Disrupted.STOPPED, DISRUPTION_TARGET: Disrupted.DISRUPTED}


@dataclass(frozen=True)
class Mark:
    """One disruption of a step: the condition ``type``, its ``reason`` and time ``at``, and
    the attempts (``<slot>(<n>)``) that carried it."""

    at: str
    type: str
    reason: str
    pods: tuple[str, ...]

    @property
    def kind(self) -> Disrupted:
        """How the retry policy judges the attempts this mark excuses."""
        return MARKS.get(self.type, Disrupted.DISRUPTED)


Record = dict[str, tuple[Mark, ...]]  # step -> its marks, oldest first


def decode(text: str) -> Record:
    """The annotation's Record ({} when absent or unreadable)."""
    raw = codecs.json_object(text)
    out: Record = {}
    for step, marks in raw.items():
        if not isinstance(marks, list):
            continue
        out[str(step)] = tuple(
            Mark(str(m.get("at", "")), str(m.get("type", "")), str(m.get("reason", "")),
                 tuple(str(p) for p in _list(m.get("pods"))))
            for m in marks
            if isinstance(m, dict)
        )  # fmt: skip
    return out


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def encode(record: Record) -> str:
    """The Record as compact JSON (steps and marks in a stable order)."""
    wire = {
        step: [
            {"at": m.at, "type": m.type, "reason": m.reason, "pods": list(m.pods)} for m in marks
        ]
        for step, marks in sorted(record.items())
        if marks
    }
    return json.dumps(wire, separators=(",", ":"))


def pod_mark(pod: Json) -> tuple[str, str, str] | None:
    """``(type, reason, lastTransitionTime)`` of the pod's first disruption condition that is
    True (None: none)."""
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") in MARKS and cond.get("status") == "True":
            return (
                str(cond["type"]),
                str(cond.get("reason") or ""),
                str(cond.get("lastTransitionTime") or ""),
            )
    return None


def attempt_of(pod: Json, workflow: str) -> tuple[str, str] | None:
    """``(step, "<slot>(<n>)")`` of a pod from Argo's node name ``<wf>.<step>.<slot>(<n>)``
    (a pod task without retryStrategy has no ``(n)``: attempt 0)."""
    ref = argo_nodes.pod_node(argo_nodes.node_of_pod(pod))
    if ref is None or ref.workflow != workflow:
        return None
    return ref.step, f"{ref.slot}({ref.index})"


def observe(record: Record, workflow: str, pods: Iterable[Json]) -> Record:
    """``record`` plus the marks the Workflow's ``pods`` carry now. Pure."""
    found: dict[tuple[str, str, str, str], set[str]] = {}
    for step, marks in record.items():
        for m in marks:
            found.setdefault((step, m.at, m.type, m.reason), set()).update(m.pods)
    for pod in pods:
        if argo_nodes.workflow_of(pod) != workflow:
            continue
        mark, where = pod_mark(pod), attempt_of(pod, workflow)
        if mark is None or where is None:
            continue
        kind, reason, at = mark
        found.setdefault((where[0], at, kind, reason), set()).add(where[1])
    out: dict[str, list[Mark]] = {}
    for (step, at, kind, reason), refs in sorted(found.items()):
        out.setdefault(step, []).append(Mark(at, kind, reason, tuple(sorted(refs))))
    return {step: tuple(marks) for step, marks in out.items()}


def new_marks(old: Record, new: Record) -> list[tuple[str, Mark]]:
    """``(step, mark)`` of what ``new`` adds to ``old``, each mark with only its new attempts."""
    seen = {(step, m.at, m.type, m.reason): set(m.pods) for step, ms in old.items() for m in ms}
    out = []
    for step, marks in new.items():
        for m in marks:
            fresh = tuple(
                p for p in m.pods if p not in seen.get((step, m.at, m.type, m.reason), ())
            )
            if fresh:
                out.append((step, Mark(m.at, m.type, m.reason, fresh)))
    return out


def cause(
    record: Record, step: str, slot: str, index: int, started: str, finished: str
) -> Disrupted:
    """What disruption excuses attempt ``index`` of pod ``slot`` of ``step`` (its Argo node
    ``started``/``finished``): its own mark, else the first mark it was a gang peer of (it
    existed at the mark's time and failed at or after it); ``Disrupted.NO`` when none."""
    marks = record.get(step, ())
    ref = f"{slot}({index})"
    for m in marks:
        if ref in m.pods:
            return m.kind
    start, end = _time(started), _time(finished)
    if start is None or end is None:
        return Disrupted.NO
    for m in marks:
        at = _time(m.at)
        if at is not None and start <= at <= end:
            return m.kind
    return Disrupted.NO


def _time(value: str) -> datetime | None:
    try:
        return parse_time(value)
    except ValueError:  # an annotation edited by hand
        return None
