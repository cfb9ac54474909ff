"""Text rendering of a quota ``Plan`` and the ``trainweave plan`` exit code. Pure."""

from __future__ import annotations

from decimal import Decimal

from trainweave.adapters.kueue.hours import ResourceHours
from trainweave.adapters.kueue.plan import Fit, Plan, StepPlan
from trainweave.errors import InputError
from trainweave.labels import Reason
from trainweave.quantity import format_quantity, is_gpu

_HEADER = ("STEP", "ROLE", "PODS", "REQUESTS (all pods)", "QUEUE -> CLUSTERQUEUE", "FLAVOR", "FITS")


def format_plan(plan: Plan) -> str:
    """A table per step plus the resource-hours summary; ends with a newline."""
    rows = [_HEADER] + [_row(step) for step in plan.steps]
    lines = [f"TrainJob {plan.namespace}/{plan.pipeline}"]
    lines += _table(rows)
    notes = [f"{s.step}: {f}" for s in plan.steps for f in s.findings] + list(plan.findings)
    notes += plan_errors(plan)
    if plan.hours:
        lines += ["", *_hours(plan.hours)]
    if notes:
        lines += ["", *(f"note: {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def plan_errors(plan: Plan) -> list[str]:
    """One message per (step, resource) that no ClusterQueue state could ever admit."""
    out = []
    for step, res in plan.never():
        if res.maximum is None:
            why = f"is not covered by ClusterQueue {step.cluster_queue}"
            if res.flavor is None and res.nominal is None:
                why += (
                    " (or no flavor matches the pods' nodeSelector/affinity/tolerations/topology)"
                )
        else:
            why = (
                f"exceeds the most ClusterQueue {step.cluster_queue} could ever hold "
                f"({res.maximum}, nominal {res.nominal})"
            )
        out.append(f"step {step.step}: {res.resource} {res.total} {why}: never admitted")
    return out


def missing_errors(plan: Plan, source: str) -> list[InputError]:
    """One error per queue object a step needs that the queue files (``source``) lack."""
    return [
        InputError(
            f"step {step.step}",
            f"{what} is not in the queue files: Kueue would never admit the step",
            source,
            Reason.INVALID_QUEUES,
        )
        for step, what in plan.missing()
    ]


def plan_exit_code(plan: Plan) -> int:
    """1 when some step can never be admitted, else 0 (missing queues: ``missing_errors``)."""
    return 1 if plan.never() else 0


def _row(step: StepPlan) -> tuple[str, ...]:
    totals = step.totals()
    requests = ", ".join(f"{r}={format_quantity(v, r)}" for r, v in sorted(totals.items()))
    flavors = sorted({r.flavor for r in step.resources if r.flavor})
    target = f"{step.local_queue} -> {step.cluster_queue or '?'}"
    fit = step.fit.value
    if step.fit is Fit.NEVER:
        fit += (
            " ("
            + ", ".join(sorted({r.resource for r in step.resources if r.fit is Fit.NEVER}))
            + ")"
        )
    return (
        step.step,
        step.role,
        str(step.pods),
        requests or "-",
        target,
        ",".join(flavors) or "-",
        fit,
    )


def _hours(hours: tuple[ResourceHours, ...]) -> list[str]:
    header = ("RESOURCE-HOURS", "PER-STEP", "WHOLE", "IDLE", "WHOLE+RECLAIM", "IDLE")
    rows = [header] + [
        (
            h.resource,
            *(
                _amount(h.resource, v)
                for v in (h.used, h.whole, h.idle_whole, h.whole_reclaim, h.idle_reclaim)
            ),
        )
        for h in hours
    ]
    lines = _table(rows)
    gpu = [h for h in hours if is_gpu(h.resource)]
    if gpu:
        idle = sum((h.idle_whole for h in gpu), Decimal(0))
        idle_reclaim = sum((h.idle_reclaim for h in gpu), Decimal(0))
        lines.append(
            f"Idle GPU-hours avoided by per-step admission: {_num(idle)} "
            f"(vs whole-pipeline admission), {_num(idle_reclaim)} (vs whole with reclaimablePods)"
        )
    return lines


def _amount(resource: str, value: Decimal) -> str:
    if resource == "memory" or resource.endswith("storage"):
        return f"{_num(value / Decimal(2**30))}Gi"
    return _num(value)


def _num(value: Decimal) -> str:
    # format, not quantize: quantize raises past the context's 28 digits (a 10**30 quota)
    return f"{value:.2f}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
