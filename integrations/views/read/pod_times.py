"""When each step pod of a TrainJob ran, for the step timeline (``timeline``). Pure.

From the pods' container start and finish (``status.containerStatuses``, Argo's ``wait`` and
``init`` executor containers skipped), else their Argo Pod nodes (``status.nodes``): a node's
``startedAt`` is its pod's creation (argo ``workflow/controller/operator.go initializeNode``),
before Kueue ungates the pod, which ``timeline`` clips to the quota reservation; ``finishedAt``
is the last container's finish (``getLatestFinishedAt``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainweave.integrations.views.read import argo_nodes
from trainweave.integrations.views.read.bodies import Meta
from trainweave.integrations.views.read.observed import Observed, group_of
from trainweave.integrations.views.read.times import parse_time
from trainweave.quantity import QuantityError, is_gpu, parse

Json = dict[str, Any]
SIDECARS = frozenset({"wait", "init"})  # Argo's executor containers


@dataclass(frozen=True)
class Interval:
    """One pod attempt of a pod group: from ``start`` to ``end`` (None: still running)."""

    group: str
    slot: str
    start: datetime
    end: datetime | None
    gpus: float | None  # from the pod spec; None when only the node is left


def intervals(obs: Observed) -> list[Interval]:
    """Pod running intervals by pod group: the live pods', else their Argo Pod nodes'."""
    out: dict[str, Interval] = {}
    uid = Meta.of(obs.trainjob).uid
    for wf, v in zip(obs.workflows, obs.views, strict=True):
        if not Meta.of(wf).controlled_by(uid):
            continue
        groups = {g.step: grp for grp, g in v.groups.items()}
        for node in (argo_nodes.decode_nodes(wf.get("status") or {}) or {}).values():
            name = str(node.get("name") or "")
            m = argo_nodes.pod_node(name)
            start = parse_time(str(node.get("startedAt") or ""))
            if node.get("type") != "Pod" or not m or m.attempt is None or start is None:
                continue
            if m.workflow != v.name or m.step not in groups:
                continue
            end = parse_time(str(node.get("finishedAt") or ""))
            out[name] = Interval(groups[m.step], m.slot, start, end, None)
    for pod in obs.pods:
        meta = Meta.of(pod)
        key = argo_nodes.node_of_pod(pod) or meta.name
        m = argo_nodes.pod_node(key)
        started, finished = container_times(pod)
        if not group_of(pod) or started is None:
            continue
        slot = m.slot if m and m.attempt is not None else meta.name
        out[key] = Interval(group_of(pod), slot, started, finished, pod_gpus(pod))
    return sorted(out.values(), key=lambda iv: (iv.group, iv.start, iv.slot))


def container_times(pod: Json) -> tuple[datetime | None, datetime | None]:
    """First container start and, when all have terminated, last finish (sidecars skipped)."""
    starts: list[datetime] = []
    ends: list[datetime] = []
    running = False
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") in SIDECARS:
            continue
        state = cs.get("state") or {}
        for key in ("running", "terminated"):
            t = parse_time(str((state.get(key) or {}).get("startedAt") or ""))
            if t is not None:
                starts.append(t)
        end = parse_time(str((state.get("terminated") or {}).get("finishedAt") or ""))
        if end is None:
            running = True
        else:
            ends.append(end)
    if not starts:
        return None, None
    return min(starts), (None if running or not ends else max(ends))


def pod_gpus(pod: Json) -> float:
    """The GPUs a pod's containers ask for (limits, requests winning)."""
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        asked = {**(res.get("limits") or {}), **(res.get("requests") or {})}
        total += sum(num(v) for k, v in asked.items() if is_gpu(k))
    return total


def num(value: object) -> float:
    """A quantity as a float (0 when it is none)."""
    try:
        return float(parse(str(value)))
    except (QuantityError, ValueError, TypeError):
        return 0.0
