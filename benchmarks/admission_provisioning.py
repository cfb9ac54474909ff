"""GPU nodes under Kueue's ProvisioningRequest check (issue 40): the figures of the admission
benchmark's provisioning traces (``prov-*``), from what the cluster recorded. Pure.

A run is the GPU nodes the ProvisioningRequest stand-in (hack/provisioner.py) made, the GPU pods
bound to them, the ProvisioningRequests Kueue made, and per TrainJob when its trainer's
predecessors were done and when its trainer ran. Times are seconds from the run's start; ``end``
is when the recording stopped (a node or pod still there counts until then).

- GPU node-seconds: each node's life, from its creation to its deletion;
- idle GPU node-seconds: a node up with no GPU pod bound to it, split into ``scale-down`` (after
  its last GPU pod ended: the autoscaler's scale-down-unneeded time, paid by every setup once its
  queue empties) and ``unused`` (the rest: before its first pod, between pods, a node never used),
  of which ``between`` is the gaps between one GPU pod's end and the next one's binding (a node
  handed from one trainer to the next: quota released, the next Workload admitted and checked,
  its pods ungated and bound), with the number of such hand-overs;
- bookings expired: requests whose booking ended by time (``BookingExpired`` with reason
  ``CapacityReservationTimeExpired``, cluster-autoscaler's ``processor.go``); a booking ended
  because its pods were bound (``CapacityBookingConsumed``, CA master) did not expire;
- requests per TrainJob, mean and max (over every TrainJob of the trace, none counted as 0);
- trainer start delay: the trainer's pods all running - its predecessors' pods all Succeeded,
  p50 and max over the trainers that ran;
- trainers stranded: a TrainJob whose trainer never ran though its pods were created, and one
  of whose requests expired (Kueue makes no new request for an Admitted Workload, v0.19.2
  ``pkg/controller/admissionchecks/provisioning/controller.go:290-292``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

TIME_EXPIRED = "CapacityReservationTimeExpired"  # conditions.go, CA 1.36.1 and master
CONSUMED = "CapacityBookingConsumed"  # CA master (kubernetes/autoscaler PR 9806)
Interval = tuple[float, float]


@dataclass(frozen=True)
class NodeLife:
    """A GPU node the provisioner made: created, first seen Ready, deleted (None: not seen)."""

    name: str
    created: float
    ready: float | None = None
    deleted: float | None = None
    request: str = ""  # the request it was made for (its ``provisioner.trainweave.test/for``)


@dataclass(frozen=True)
class BoundPod:
    """A GPU pod bound to ``node`` at ``bound``; ``ended``: it no longer held the node
    (Succeeded, Failed or deleted; None: still there)."""

    trainjob: str
    node: str
    bound: float
    ended: float | None = None


@dataclass(frozen=True)
class RequestLife:
    """A ProvisioningRequest: its TrainJob, when it was made, Provisioned, and when and why its
    booking ended (``BookingExpired``; None and "" while it holds)."""

    trainjob: str
    name: str
    created: float
    provisioned: float | None = None
    booking_ended: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class TrainerStart:
    """A TrainJob's trainer: its predecessors done, its pods created and all running (None:
    never)."""

    trainjob: str
    ready: float | None
    created: float | None
    running: float | None


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, merged intervals (empty ones dropped)."""
    out: list[Interval] = []
    for start, stop in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


def up(node: NodeLife, end: float) -> Interval:
    """The node's life, creation to deletion (or ``end``)."""
    stop = node.deleted if node.deleted is not None else end
    return node.created, max(node.created, stop)


def busy(node: NodeLife, pods: Sequence[BoundPod], end: float) -> list[Interval]:
    """When a GPU pod was bound to the node, merged and clipped to its life."""
    start, stop = up(node, end)
    spans = (
        (max(start, p.bound), min(stop, p.ended if p.ended is not None else end))
        for p in pods
        if p.node == node.name
    )
    return union(spans)


@dataclass(frozen=True)
class Idle:
    """A node's idle seconds: after its last pod (scale-down), and the rest (unused), of which
    ``between`` came between two pods, over ``handovers`` gaps."""

    unused: float
    scale_down: float
    between: float = 0.0
    handovers: int = 0

    @property
    def total(self) -> float:
        return self.unused + self.scale_down


def node_idle(node: NodeLife, pods: Sequence[BoundPod], end: float) -> Idle:
    """Seconds the node was up with no GPU pod bound, split as the module docstring says."""
    start, stop = up(node, end)
    spans = busy(node, pods, end)
    idle = (stop - start) - sum(b - a for a, b in spans)
    tail = stop - spans[-1][1] if spans else 0.0
    gaps = [b[0] - a[1] for a, b in itertools.pairwise(spans)]
    return Idle(max(0.0, idle - tail), tail, sum(gaps), len(gaps))


def node_seconds(nodes: Sequence[NodeLife], end: float) -> float:
    return sum(b - a for a, b in (up(n, end) for n in nodes))


def idle_seconds(nodes: Sequence[NodeLife], pods: Sequence[BoundPod], end: float) -> Idle:
    """The nodes' idle seconds, summed."""
    each = [node_idle(n, pods, end) for n in nodes]
    return Idle(
        sum(i.unused for i in each),
        sum(i.scale_down for i in each),
        sum(i.between for i in each),
        sum(i.handovers for i in each),
    )


def expired(requests: Sequence[RequestLife]) -> list[RequestLife]:
    """The requests whose booking ran out by time."""
    return [r for r in requests if r.booking_ended is not None and r.reason == TIME_EXPIRED]


def requests_per_trainjob(
    requests: Sequence[RequestLife], trainjobs: Sequence[str]
) -> tuple[float, int]:
    """Mean and max requests per TrainJob of ``trainjobs`` (one with none counts as 0)."""
    counts = {tj: 0 for tj in trainjobs}
    for r in requests:
        if r.trainjob in counts:
            counts[r.trainjob] += 1
    if not counts:
        return 0.0, 0
    return sum(counts.values()) / len(counts), max(counts.values())


def start_delays(starts: Sequence[TrainerStart]) -> list[float]:
    """Trainer running - predecessors done, for each trainer that ran (never negative)."""
    return [
        max(0.0, s.running - s.ready)
        for s in starts
        if s.running is not None and s.ready is not None
    ]


def stranded(starts: Sequence[TrainerStart], requests: Sequence[RequestLife]) -> list[str]:
    """TrainJobs whose trainer's pods were created but never ran, one of whose requests expired
    by time."""
    lapsed = {r.trainjob for r in expired(requests)}
    return sorted(
        s.trainjob
        for s in starts
        if s.created is not None and s.running is None and s.trainjob in lapsed
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values), as admission_metrics.percentile."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass(frozen=True)
class Records:
    """What one run recorded of its GPU nodes, GPU pods, requests and trainers."""

    nodes: tuple[NodeLife, ...] = ()
    pods: tuple[BoundPod, ...] = ()
    requests: tuple[RequestLife, ...] = ()
    starts: tuple[TrainerStart, ...] = ()
    end: float = 0.0  # the recording stopped (after the nodes' scale-down was awaited)
    stopped: float = 0.0  # the run stopped: every TrainJob ended, or none moved (stalled)
    trainjobs: tuple[str, ...] = ()  # every TrainJob submitted


def records_from(doc: dict[str, Any]) -> Records:
    """Records read back from a ``--dump`` line (``dataclasses.asdict`` of them)."""
    return Records(
        tuple(NodeLife(**n) for n in doc.get("nodes") or []),
        tuple(BoundPod(**p) for p in doc.get("pods") or []),
        tuple(RequestLife(**r) for r in doc.get("requests") or []),
        tuple(TrainerStart(**s) for s in doc.get("starts") or []),
        float(doc.get("end", 0.0)),
        float(doc.get("stopped", 0.0)),
        tuple(doc.get("trainjobs") or ()),
    )


def figures(records: Records) -> dict[str, float]:
    """A run's provisioning figures (the module docstring), ``prov_``-prefixed."""
    end = records.end
    idle = idle_seconds(records.nodes, records.pods, end)
    mean, most = requests_per_trainjob(records.requests, records.trainjobs)
    delays = start_delays(records.starts)
    reasons = [r.reason for r in records.requests if r.booking_ended is not None]
    return {
        "prov_gpu_nodes": float(len(records.nodes)),
        "prov_gpu_node_s": node_seconds(records.nodes, end),
        "prov_idle_gpu_node_s": idle.total,
        "prov_idle_unused_gpu_node_s": idle.unused,
        "prov_idle_scale_down_gpu_node_s": idle.scale_down,
        "prov_idle_between_gpu_node_s": idle.between,
        "prov_handovers": float(idle.handovers),
        "prov_requests": float(len(records.requests)),
        "prov_requests_per_trainjob": mean,
        "prov_requests_per_trainjob_max": float(most),
        "prov_bookings_expired": float(len(expired(records.requests))),
        "prov_bookings_consumed": float(reasons.count(CONSUMED)),
        "prov_trainers_started": float(len(delays)),
        "prov_trainers_stranded": float(len(stranded(records.starts, records.requests))),
        "prov_start_delay_p50_s": percentile(delays, 0.5),
        "prov_start_delay_max_s": max(delays, default=0.0),
        "prov_run_s": records.stopped,
        "prov_trainjobs": float(len(records.trainjobs)),
    }


def makespan_ratio(trainweave: dict[str, float], upstream: dict[str, float]) -> str:
    """trainweave's makespan / upstream's; when upstream did not complete every TrainJob, its
    run's length bounds its makespan from below, so the ratio is an upper bound: ``<R``."""
    tw = trainweave["makespan_s"]
    if upstream["completed"] < upstream["prov_trainjobs"]:
        run = upstream.get("prov_run_s", 0.0)
        return f"<{tw / run:.2f}" if run else "n/a"
    return f"{tw / upstream['makespan_s']:.2f}" if upstream["makespan_s"] else "n/a"


def line(name: str, trainweave: dict[str, float], upstream: dict[str, float]) -> str:
    """The machine-readable line of a provisioning trace (``bench-provisioning``): the figures
    issue 40 asks for, then the idle split, stranded trainers and TrainJobs completed."""

    def pair(key: str, fmt: str = ".0f") -> str:
        return f"trainweave={trainweave[key]:{fmt}} upstream={upstream[key]:{fmt}}"

    def done(f: dict[str, float]) -> str:
        return f"{f['completed']:.0f}/{f['prov_trainjobs']:.0f}"

    return (
        f"bench-provisioning: trace={name} idle-gpu-node-s {pair('prov_idle_gpu_node_s')}"
        f" expired {pair('prov_bookings_expired')} node-s {pair('prov_gpu_node_s')}"
        f" makespan-ratio={makespan_ratio(trainweave, upstream)}"
        f" idle-unused {pair('prov_idle_unused_gpu_node_s')}"
        f" idle-scale-down {pair('prov_idle_scale_down_gpu_node_s')}"
        f" idle-between-pods {pair('prov_idle_between_gpu_node_s')}"
        f" handovers {pair('prov_handovers')}"
        f" stranded {pair('prov_trainers_stranded')}"
        f" requests-per-trainjob {pair('prov_requests_per_trainjob', '.2f')}"
        f" start-delay-p50 {pair('prov_start_delay_p50_s', '.1f')}"
        f" complete trainweave={done(trainweave)} upstream={done(upstream)}"
    )
