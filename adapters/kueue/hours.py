"""Resource-hours held by per-step vs whole-pipeline admission. Pure.

Steps run in DAG order: a step starts when all its dependencies end, so
parallel steps overlap and the pipeline takes its critical path
(``makespan``). For each resource, with ``U`` a step's total request and
``d`` its duration:

- per-step admission (trainweave) holds ``U x d`` per step: exactly what runs;
- whole-pipeline admission (Kueue's TrainJob/JobSet integration: one Workload
  for all replicatedJobs) holds ``sum(U) x makespan``;
- the same with ``reclaimablePods``: a step's pods stop counting when it
  finishes (``ReclaimablePods`` in kueue v0.19.2 ``trainjob_controller.go``),
  so each step holds ``U x end``; steps not yet started still count.

Idle = held - used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from trainweave.model import Pipeline
from trainweave.quantity import is_gpu


@dataclass(frozen=True)
class ResourceHours:
    """Resource-hours of one resource (in the resource's base unit, e.g. GPUs or bytes)."""

    resource: str
    used: Decimal  # held by per-step admission
    whole: Decimal  # held by one whole-pipeline Workload
    whole_reclaim: Decimal  # the same, with reclaimablePods

    @property
    def idle_whole(self) -> Decimal:
        """Held but unused under whole-pipeline admission."""
        return self.whole - self.used

    @property
    def idle_reclaim(self) -> Decimal:
        """Held but unused under whole-pipeline admission with reclaimablePods."""
        return self.whole_reclaim - self.used


def schedule(
    pipeline: Pipeline, durations: Mapping[str, float]
) -> dict[str, tuple[Decimal, Decimal]]:
    """(start, end) in hours of each step; steps are in topological order."""
    times: dict[str, tuple[Decimal, Decimal]] = {}
    for step in pipeline.steps:
        start = max((times[d][1] for d in step.depends_on if d in times), default=Decimal(0))
        times[step.name] = (start, start + Decimal(str(durations[step.name])))
    return times


def resource_hours(
    pipeline: Pipeline,
    usage: Mapping[str, Mapping[str, Decimal]],
    durations: Mapping[str, float],
) -> tuple[ResourceHours, ...]:
    """Per resource, hours held by each admission mode; GPUs first, then by name."""
    times = schedule(pipeline, durations)
    makespan = max((end for _, end in times.values()), default=Decimal(0))
    resources = sorted({r for u in usage.values() for r in u}, key=_order)
    out = []
    for resource in resources:
        used = whole = reclaim = Decimal(0)
        for step, (start, end) in times.items():
            amount = usage.get(step, {}).get(resource, Decimal(0))
            used += amount * (end - start)
            whole += amount * makespan
            reclaim += amount * end
        out.append(ResourceHours(resource, used, whole, reclaim))
    return tuple(out)


def _order(resource: str) -> tuple[int, str]:
    return (0 if is_gpu(resource) else 1, resource)
