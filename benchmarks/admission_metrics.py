"""What the admission benchmark measures, from what the cluster recorded. Pure.

A run is a list of TrainJobs (created, finished, outcome), the quota holds of their Kueue
Workloads (GPUs, from QuotaReserved to Finished) and the running spans of their trainer pods.
All times are seconds from the run's start.

- makespan: first creation to last finish;
- job completion time (JCT): finish - creation, mean, p50/p95/p99 and max;
- held-idle GPU-seconds: GPUs reserved by a TrainJob's Workloads while none of that TrainJob's
  GPU pods (trainer, evaluator) runs (the cost of reserving the trainer's GPUs while initializers
  download);
- GPU utilisation: GPU-seconds of running GPU pods / (GPU quota x makespan);
- GPU utilisation of ready work: the same GPU-seconds / the GPU-seconds ready GPU steps could
  have used (``ready_capacity``): what a scheduler loses, apart from the trace's shape (no GPU
  step ready while the first initializers run, one pipeline left at the end);
- admission wait: a Workload's QuotaReserved time - its creation, mean and p95;
- order inversions: see ``inversions``; of them, the backfills (``backfilled``: the earlier
  step did not fit in the GPUs free when the later one was admitted) and the pairs whose
  Workloads were created in the same second (``same_second``: no order Kueue can see);
- hand-off latency: see ``handoff``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
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
    """One GPU pod (trainer, evaluator) running from ``start`` to ``end`` on ``gpus`` GPUs."""

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
    """GPU-seconds each TrainJob's Workloads held while none of its GPU pods ran."""
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


@dataclass(frozen=True)
class GpuStep:
    """One Workload holding GPUs: a step's pod-group Workload (trainweave) or the TrainJob's one
    Workload (upstream). ``ready``: when all its predecessor steps were done (upstream: the
    Workload's creation); ``admitted``: QuotaReserved (None: never)."""

    trainjob: str
    created: float  # the TrainJob's creation
    priority: int
    ready: float
    admitted: float | None
    workload: str = ""


def ready_capacity(steps: Sequence[GpuStep], holds: list[Hold], gpu_quota: float) -> float:
    """GPU-seconds of quota that ready GPU steps could have used: the integral over time of
    min(quota, GPUs of the steps ready and not yet done). A step counts from ``ready`` (or its
    hold's start, if earlier) to its Workload's end, with its Workload's GPUs; a step whose
    Workload never held quota is left out (its GPUs are unknown)."""
    by_workload = {h.workload: h for h in holds}
    edges: list[tuple[float, float]] = []
    for x in steps:
        h = by_workload.get(x.workload)
        if h is not None and h.gpus > 0:
            edges += [(min(x.ready, h.start), h.gpus), (h.end, -h.gpus)]
    total, demand, last = 0.0, 0.0, 0.0
    for t, delta in sorted(edges):
        total += min(gpu_quota, demand) * (t - last) if demand > 0 else 0.0
        demand, last = demand + delta, t
    return total


def inverted(steps: list[GpuStep]) -> list[tuple[GpuStep, GpuStep]]:
    """Pairs (x, y) of GPU steps of TrainJobs a and b of the same priority, a created strictly
    before b, x ready strictly before y, and y admitted strictly before x (x never admitted
    counts as admitted after every admitted y). Equal times count as no inversion: the benchmark
    records ``admitted`` in whole seconds (Kueue's QuotaReserved time), so two steps admitted
    in the same second are not inverted."""
    return [
        (x, y)
        for x in steps
        for y in steps
        if x.priority == y.priority
        and x.created < y.created
        and x.ready < y.ready
        and y.admitted is not None
        and y.admitted < (math.inf if x.admitted is None else x.admitted)
    ]


def inversions(steps: list[GpuStep]) -> int:
    """How many pairs ``inverted`` finds."""
    return len(inverted(steps))


def free_before(y: GpuStep, holds: list[Hold], gpu_quota: float) -> float:
    """GPUs free at ``y``'s admission with ``y``'s own hold left out: the quota less every other
    hold started at or before that second and not yet ended (whole seconds, as Kueue writes
    them: a hold that started the same second counts as held, one that ended then as free)."""
    assert y.admitted is not None
    t = y.admitted
    used = sum(h.gpus for h in holds if h.workload != y.workload and h.start <= t < h.end)
    return gpu_quota - used


def backfilled(
    pairs: list[tuple[GpuStep, GpuStep]], holds: list[Hold], gpu_quota: float
) -> list[tuple[GpuStep, GpuStep]]:
    """The inverted pairs (x, y) where x did not fit when y was admitted: ``x``'s GPUs were more
    than ``free_before(y)``. Kueue's default ``BestEffortFIFO`` tries the next Workload when the
    head does not fit (a 16-GPU trainer behind 8 free GPUs lets an 8-GPU evaluator in): a
    backfill, not a queue-order break. The other pairs are inversions where x would have fit (a
    gate lifted late, or Kueue's order itself). A step whose GPUs are unknown (never held) is
    taken to fit."""
    gpus = {h.workload: h.gpus for h in holds}
    return [
        (x, y) for x, y in pairs if gpus.get(x.workload, 0.0) > free_before(y, holds, gpu_quota)
    ]


def same_second(
    pairs: list[tuple[GpuStep, GpuStep]], holds: list[Hold]
) -> list[tuple[GpuStep, GpuStep]]:
    """The inverted pairs (x, y) whose Workloads were created in the same second. Kueue orders a
    queue by priority, then the Workload's ``creationTimestamp`` (whole seconds), then its UID
    (v0.19.2 ``pkg/cache/queue/cluster_queue.go``, ``baseCompareFunc``): two TrainJobs created
    a fraction of a second apart whose Workloads share a second are in no order Kueue can see."""
    created = {h.workload: h.created for h in holds}
    return [
        (x, y)
        for x, y in pairs
        if x.workload in created and created.get(x.workload) == created.get(y.workload)
    ]


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(
    jobs: list[TrainJobTimes],
    holds: list[Hold],
    spans: list[Span],
    gpu_quota: float,
    steps: Sequence[GpuStep] = (),
) -> dict[str, float]:
    """The run's figures (see the module docstring)."""
    start = min((j.created for j in jobs), default=0.0)
    makespan = max((j.finished for j in jobs), default=start) - start
    jct = [j.finished - j.created for j in jobs]
    waits = [h.start - h.created for h in holds]
    busy = sum(s.gpus * (s.end - s.start) for s in spans)
    idle = held_idle(holds, spans)
    ready = ready_capacity(steps, holds, gpu_quota)
    pairs = inverted(list(steps))
    return {
        "trainjobs": float(len(jobs)),
        "completed": float(sum(1 for j in jobs if j.outcome == "Complete")),
        "makespan_s": makespan,
        "jct_mean_s": sum(jct) / len(jct) if jct else 0.0,
        "jct_p50_s": percentile(jct, 0.5),
        "jct_p95_s": percentile(jct, 0.95),
        "jct_p99_s": percentile(jct, 0.99),
        "jct_max_s": max(jct, default=0.0),
        "held_idle_gpu_s": sum(idle.values()),
        "gpu_utilisation": busy / (gpu_quota * makespan) if makespan and gpu_quota else 0.0,
        "gpu_utilisation_of_ready": busy / ready if ready else 0.0,
        "admission_wait_mean_s": sum(waits) / len(waits) if waits else 0.0,
        "admission_wait_p95_s": percentile(waits, 0.95),
        "workloads": float(len(holds)),
        "inversions": float(len(pairs)),
        "inversions_backfill": float(len(backfilled(pairs, holds, gpu_quota))),
        "inversions_same_second": float(len(same_second(pairs, holds))),
    }


# Hand-off latency of the admission benchmark, broken down per step start. Pure.
#
# For every step that waits for others (each step after the first of a pipeline), the times the
# benchmark's watches first saw (seconds, sub-second: the watcher's clock, not the API server's
# second-precision timestamps):
#
# - ``done``: the step's predecessors done, the latest of their pods first seen Succeeded;
# - ``started``: the step's Argo Workflow node first seen Pending/Running with ``startedAt``;
# - ``created``: the step's pods created, the latest of them first seen (Kueue builds a pod
#   group's Workload once all of its pods exist);
# - ``admitted``: the step's Workload first seen ``Admitted`` True (else ``QuotaReserved``);
# - ``ungated``: the latest of the step's pods first seen with no scheduling gates;
# - ``running``: the latest of the step's pods first seen with every container running.
#
# The parts are the differences of consecutive times, and ``total`` is running - done. A part is
# left out for a step that lacks either end. With kept position a part may be negative (a gate
# lifted by the controller before Argo created the pods: admitted before created).
STAGES = ("done", "started", "created", "admitted", "ungated", "running")


@dataclass(frozen=True)
class StepStart:
    """When each stage of one step start was first seen (None: never seen)."""

    trainjob: str
    step: str
    done: float | None
    started: float | None
    created: float | None
    admitted: float | None
    ungated: float | None
    running: float | None


def parts(start: StepStart) -> dict[str, float]:
    """The step start's parts (``done->started`` ... and ``total``), where both ends are known."""
    times = [getattr(start, s) for s in STAGES]
    out: dict[str, float] = {}
    for (a, ta), (b, tb) in itertools.pairwise(zip(STAGES, times, strict=True)):
        if ta is not None and tb is not None:
            out[f"{a}->{b}"] = tb - ta
    if start.done is not None and start.running is not None:
        out["total"] = start.running - start.done
    return out


def handoff(starts: list[StepStart]) -> dict[str, dict[str, float]]:
    """Per part: n, p50 and p99 (nearest rank) over the step starts, in seconds (3 decimals)."""
    values: dict[str, list[float]] = {}
    for start in starts:
        for name, value in parts(start).items():
            values.setdefault(name, []).append(value)
    order = [f"{a}->{b}" for a, b in itertools.pairwise(STAGES)] + ["total"]
    return {
        name: {
            "n": float(len(values[name])),
            "p50": round(percentile(values[name], 0.5), 3),
            "p99": round(percentile(values[name], 0.99), 3),
        }
        for name in order
        if name in values
    }


# Where the GPU quota's time went, per GPU Workload (trainweave's step Workloads), from the times
# the watches first saw (sub-second): ``reserved`` (QuotaReserved), ``created`` (the last of the
# step's pods created), ``running`` (the last of them running), ``succeeded`` (the last of them
# Succeeded) and ``released`` (the Workload Finished, or deleted). The quota's GPU-seconds over the
# makespan split into: held before the step's pods existed (a Workload admitted before Argo
# created its pods: kept position's early gate lift), held from then until they all ran
# (ungating, binding, container start), held while they ran, held after they succeeded (until
# Kueue finished the Workload and freed its quota), and not held at all.
HOLD_STAGES = ("reserved", "created", "running", "succeeded", "released")


@dataclass(frozen=True)
class QuotaHold:
    """One GPU Workload's reservation, its stages first seen (None: never seen)."""

    trainjob: str
    gpus: float
    reserved: float | None
    created: float | None
    running: float | None
    succeeded: float | None
    released: float | None


def quota_account(
    quota_holds: list[QuotaHold], gpu_quota: float, makespan: float
) -> dict[str, float]:
    """GPU-seconds of each hold part summed over the holds seen at every stage (``<part>_gpu_s``),
    the same as shares of quota x makespan (``<part>_share``; ``free_share`` is the rest), and
    p50/p99 seconds of each part (``<part>_p50_s``, ``<part>_p99_s``). Pods created before the
    reservation (the usual case: they wait for quota) count as created at it. ``holds`` counts the
    holds used, ``holds_incomplete`` those left out (a stage never seen)."""
    names = [f"{a}->{b}" for a, b in itertools.pairwise(HOLD_STAGES)]
    seconds: dict[str, list[float]] = {n: [] for n in names}
    gpu_s = dict.fromkeys(names, 0.0)
    used = 0
    for h in quota_holds:
        if (
            h.gpus <= 0
            or h.reserved is None
            or h.created is None
            or h.running is None
            or h.succeeded is None
            or h.released is None
        ):
            continue
        used += 1
        times = [h.reserved, max(h.reserved, h.created), h.running, h.succeeded, h.released]
        for name, (a, b) in zip(names, itertools.pairwise(times), strict=True):
            length = max(0.0, b - a)
            seconds[name].append(length)
            gpu_s[name] += h.gpus * length
    capacity = gpu_quota * makespan
    out = {"holds": float(used), "holds_incomplete": float(len(quota_holds) - used)}
    for name in names:
        out[f"{name}_gpu_s"] = round(gpu_s[name], 1)
        out[f"{name}_share"] = round(gpu_s[name] / capacity, 3) if capacity else 0.0
        out[f"{name}_p50_s"] = round(percentile(seconds[name], 0.5), 3)
        out[f"{name}_p99_s"] = round(percentile(seconds[name], 0.99), 3)
    held = sum(gpu_s.values())
    out["free_share"] = round(1.0 - held / capacity, 3) if capacity else 0.0
    return out


def free_account(
    steps: Sequence[GpuStep], holds: list[Hold], gpu_quota: float, start: float, end: float
) -> dict[str, float]:
    """The quota's GPU-seconds not held from ``start`` to ``end``, split by what was waiting:
    ``free_fit_gpu_s`` while a ready GPU step not yet admitted would have fit in the free GPUs
    (what hand-off latency and the scheduler lose), ``free_fragmented_gpu_s`` while steps waited
    but none fit (a 16-GPU trainer behind 8 free GPUs: any scheduler's loss without smaller
    work), ``free_idle_gpu_s`` while no GPU step was ready (the trace's ramp, tail and gaps).
    A step waits from ``ready`` to ``admitted`` with its Workload's GPUs."""
    gpus = {h.workload: h.gpus for h in holds}
    waiting = [
        (x.ready, math.inf if x.admitted is None else x.admitted, gpus[x.workload])
        for x in steps
        if gpus.get(x.workload, 0.0) > 0
    ]
    cuts = sorted(
        {start, end}
        | {t for h in holds for t in (h.start, h.end) if start < t < end}
        | {t for r, a, _ in waiting for t in (r, a) if start < t < end}
    )
    out = {"free_fit_gpu_s": 0.0, "free_fragmented_gpu_s": 0.0, "free_idle_gpu_s": 0.0}
    for a, b in itertools.pairwise(cuts):
        mid = (a + b) / 2
        free = gpu_quota - sum(h.gpus for h in holds if h.start <= mid < h.end)
        if free <= 0:
            continue
        wanted = [g for r, adm, g in waiting if r <= mid < adm]
        key = "free_idle_gpu_s"
        if wanted:
            key = "free_fit_gpu_s" if min(wanted) <= free else "free_fragmented_gpu_s"
        out[key] += free * (b - a)
    return {k: round(v, 1) for k, v in out.items()}
