"""What the admission benchmark measures, from what the cluster recorded. Pure.

A run is a list of TrainJobs (created, finished, outcome), the quota holds of their Kueue
Workloads (GPUs, from QuotaReserved to Finished) and the running spans of their trainer pods.
All times are seconds from the run's start.

- makespan: first creation to last finish;
- job completion time (JCT): finish - creation, mean and p95;
- held-idle GPU-seconds: GPUs reserved by a TrainJob's Workloads while none of that TrainJob's
  trainer pods runs (the cost of reserving the trainer's GPUs while initializers download);
- GPU utilisation: GPU-seconds of running trainer pods / (GPU quota x makespan);
- admission wait: a Workload's QuotaReserved time - its creation, mean and p95.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class TrainJobTimes:
    name: str
    created: float
    finished: float
    outcome: str


@dataclass(frozen=True)
class Hold:
    """One Workload's reservation: ``gpus`` held from ``start`` to ``end``."""

    trainjob: str
    workload: str
    gpus: float
    created: float
    start: float
    end: float


@dataclass(frozen=True)
class Span:
    """One trainer pod running from ``start`` to ``end`` on ``gpus`` GPUs."""

    trainjob: str
    start: float
    end: float
    gpus: float


def union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, merged intervals."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def outside(interval: tuple[float, float], covered: list[tuple[float, float]]) -> float:
    """Length of ``interval`` not covered by the merged intervals ``covered``."""
    start, end = interval
    inside = sum(max(0.0, min(end, e) - max(start, s)) for s, e in covered)
    return max(0.0, end - start - inside)


def held_idle(holds: list[Hold], spans: list[Span]) -> dict[str, float]:
    """GPU-seconds each TrainJob's Workloads held while none of its trainer pods ran."""
    running = {
        tj: union((s.start, s.end) for s in spans if s.trainjob == tj)
        for tj in {h.trainjob for h in holds}
    }
    out: dict[str, float] = {}
    for h in holds:
        if h.gpus > 0:
            idle = h.gpus * outside((h.start, h.end), running[h.trainjob])
            out[h.trainjob] = out.get(h.trainjob, 0.0) + idle
    return out


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(
    jobs: list[TrainJobTimes], holds: list[Hold], spans: list[Span], gpu_quota: float
) -> dict[str, float]:
    """The run's figures (see the module docstring)."""
    start = min((j.created for j in jobs), default=0.0)
    makespan = max((j.finished for j in jobs), default=start) - start
    jct = [j.finished - j.created for j in jobs]
    waits = [h.start - h.created for h in holds]
    busy = sum(s.gpus * (s.end - s.start) for s in spans)
    idle = held_idle(holds, spans)
    return {
        "trainjobs": float(len(jobs)),
        "completed": float(sum(1 for j in jobs if j.outcome == "Complete")),
        "makespan_s": makespan,
        "jct_mean_s": sum(jct) / len(jct) if jct else 0.0,
        "jct_p95_s": percentile(jct, 0.95),
        "held_idle_gpu_s": sum(idle.values()),
        "gpu_utilisation": busy / (gpu_quota * makespan) if makespan and gpu_quota else 0.0,
        "admission_wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
        "admission_wait_p95_s": percentile(waits, 0.95),
        "workloads": float(len(holds)),
    }
