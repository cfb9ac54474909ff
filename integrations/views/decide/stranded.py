"""Container nodes Argo leaves ``Pending`` under a failed pod, and the status patch that ends them.

Argo v4.0.7 fills a containerSet pod's ``Container`` child nodes from the pod's container
statuses (``workflow/controller/operator.go`` ``assessNodeStatus``). A pod that failed before any
container started has none: Kueue stopping a pod that never got Ready (WaitForPodsReady's
``PodsReadyTimeout``; the pod GC then marks the terminating, unscheduled pod ``Failed``) leaves
the Pod node ``Failed`` ("can't find failed message for pod") and its container nodes ``Pending``
for ever. ``childrenFulfilled`` of the Retry node is then never true, so once a later attempt
succeeds Argo starts yet another attempt (``executeTemplate``), which Kueue keeps gated behind the
Finished Workload: the Workflow never ends. (A pod *deleted* outright takes Argo's own
``markAllContainersDeleted`` path and is not stranded.)

``patch(workflow, now)`` marks each such container node ``Failed`` with a message that names no
exit code (so it counts nothing, ``argo_view._exits``); ``None`` when there is nothing to end.
"""

from __future__ import annotations

from typing import Any

from trainweave.states import ArgoPhase

Json = dict[str, Any]
_ENDED = frozenset({ArgoPhase.FAILED, ArgoPhase.ERROR})
_OPEN = frozenset({"", ArgoPhase.PENDING, ArgoPhase.RUNNING})
MESSAGE = "trainweave: pod {pod} ended before this container started"


def stranded(workflow: Json) -> list[tuple[str, str]]:
    """``(container node id, pod node name)`` of the container nodes left open under a failed
    Pod node of ``workflow``. A Container node is named ``<pod node name>.<container>``: the
    controller's cache keeps names, not ``children`` (``slim.workflow``)."""
    nodes: Json = (workflow.get("status") or {}).get("nodes") or {}
    failed = {
        str(n.get("name"))
        for n in nodes.values()
        if n.get("type") == "Pod" and n.get("phase") in _ENDED
    }
    out = []
    for node_id, node in sorted(nodes.items()):
        pod, dot, _ = str(node.get("name") or "").rpartition(".")
        is_open = node.get("phase", "") in _OPEN
        if node.get("type") == "Container" and dot and pod in failed and is_open:
            out.append((str(node_id), pod))
    return out


def patch(workflow: Json, now: str) -> Json | None:
    """A JSON merge patch of ``status.nodes`` that ends the stranded container nodes (their
    ``finishedAt`` is ``now``)."""
    ends = {
        node_id: {
            "phase": ArgoPhase.FAILED.value,
            "message": MESSAGE.format(pod=pod.rsplit(".", 1)[-1]),
            "finishedAt": now,
        }
        for node_id, pod in stranded(workflow)
    }
    return {"status": {"nodes": ends}} if ends else None
