"""``trainweave status NAME --timeline``: a ``timeline.Timeline`` as text (a Gantt chart of one
bar per step attempt on a common time axis, 100 columns wide, then a table and the reasons steps
waited, for quota and for capacity) and as JSON (``-o json``). Pure.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainweave.integrations.views.read.quota import QuotaState, format_duration
from trainweave.integrations.views.read.timeline import Row, SpanKind, Timeline
from trainweave.integrations.views.read.times import format_time

Json = dict[str, Any]
WIDTH = 100  # the whole chart line, label included
LABEL_MAX = 30
MARKS = {SpanKind.WAIT: ".", SpanKind.CAPACITY: "~", SpanKind.HELD: "=", SpanKind.RUN: "#"}
HEADER = (
    *("STEP", "QUEUE", "CLUSTERQUEUE", "STATE", "WAITED", "HELD", "RAN", "GPUS"),
    *("GPU-S HELD", "GPU-S USED"),
)
LEGEND = ". waiting for quota   = quota held, no pod running   # running"
LEGEND_CAPACITY = "~ quota held, waiting for capacity (an admission check)"


def label(row: Row) -> str:
    """``<step> a<attempt>``: one bar per step Workload."""
    return f"{row.step or row.workload} a{row.attempt}"


def bar(row: Row, tl: Timeline, width: int) -> str:
    """The row's spans painted on ``width`` columns of ``tl.start`` -> ``tl.end``; a span that
    lasted at all gets at least one column; running wins over held, held over waiting for
    capacity, that over waiting for quota."""
    total = (tl.end - tl.start).total_seconds()
    cells = [" "] * width

    def col(t: datetime) -> int:
        if total <= 0:
            return 0
        return min(width - 1, int((t - tl.start).total_seconds() / total * width))

    for kind in (SpanKind.WAIT, SpanKind.CAPACITY, SpanKind.HELD, SpanKind.RUN):
        for span in (s for s in row.spans if s.kind == kind and s.seconds > 0):
            a = col(span.start)
            b = max(a + 1, col(span.end) if span.end < tl.end else width)
            cells[a:b] = MARKS[kind] * (b - a)
    return "".join(cells)


def axis(tl: Timeline, width: int) -> str:
    """Duration ticks since ``tl.start`` at 0, 1/4, 1/2, 3/4 and the end of the bars."""
    total = (tl.end - tl.start).total_seconds()
    line = [" "] * width
    for i in range(5):
        text = format_duration(total * i / 4)
        at = min(width - len(text), max(0, width * i // 4 - (len(text) // 2 if i else 0)))
        line[at : at + len(text)] = text
    return "".join(line).rstrip()


def format_text(tl: Timeline) -> str:
    """The Gantt chart, the table of phases and GPU-seconds, and why each step waited."""
    out = [f"TrainJob {tl.namespace}/{tl.name}  state: {tl.state}" + _progress(tl)]
    if not tl.rows:
        out.append("no step has asked Kueue for quota yet")
        return "\n".join(out) + "\n"
    span = format_duration((tl.end - tl.start).total_seconds())
    out.append(f"from {format_time(tl.start)} to {format_time(tl.end)} ({span})")
    labels = [label(r) for r in tl.rows]
    lw = min(LABEL_MAX, max(len(x) for x in labels))
    width = WIDTH - lw - 3
    out.append(" " * (lw + 2) + axis(tl, width))
    for lab, row in zip(labels, tl.rows, strict=True):
        out.append(f"{lab[:lw].ljust(lw)} |{bar(row, tl, width)}|")
    out.append(" " * (lw + 2) + LEGEND)
    if any(r.seconds(SpanKind.CAPACITY) for r in tl.rows):
        out.append(" " * (lw + 2) + LEGEND_CAPACITY)
    out.append("")
    table = [HEADER]
    for r in tl.rows:
        held = r.held_seconds
        table.append(
            (
                label(r),
                r.queue or "-",
                r.cluster_queue or "-",
                r.state,
                format_duration(r.seconds(SpanKind.WAIT)),
                format_duration(held),
                format_duration(r.seconds(SpanKind.RUN)),
                _num(r.gpus),
                _num(r.gpu_seconds_held),
                _num(r.gpu_seconds_used),
            )
        )
    widths = [max(len(t[i]) for t in table) for i in range(len(table[0]))]
    for t in table:
        out.append("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)).rstrip())
    why = [line for r in tl.rows for line in _why(r)]
    if why:
        out += ["", *why]
    return "\n".join(out) + "\n"


def _why(r: Row) -> list[str]:
    """Why ``r`` waited: for quota (Kueue's reason, an eviction), and for capacity (the
    admission check, its ProvisioningRequest; ``capacity.note``)."""
    out = []
    if r.reason or r.evicted:
        where = f"{r.queue or '-'} (ClusterQueue {r.cluster_queue or '-'})"
        line = f"{label(r)} waited {format_duration(r.seconds(SpanKind.WAIT))} in {where}"
        if r.evicted:
            line += f", evicted ({r.evicted})"
        if r.reason:
            line += f": {r.reason}: {r.message}".rstrip(": ")
        out.append(line)
    held = format_duration(r.seconds(SpanKind.CAPACITY))
    if r.capacity and r.state == QuotaState.RESERVED:  # still waiting: capacity.waiting
        out.append(f"{label(r)} has held its quota {held} {r.capacity}")
    elif r.capacity:  # an admission check took the quota back: capacity.lost
        out.append(f"{label(r)}: {r.capacity}")
    elif r.seconds(SpanKind.CAPACITY):
        request = f"ProvisioningRequest {r.request}" if r.request else "capacity"
        out.append(
            f"{label(r)} held its quota {held} waiting for {request} (admission check {r.check})"
        )
    return out


def to_json(tl: Timeline) -> Json:
    """The same data as ``format_text``: times RFC 3339, durations in seconds."""
    steps = []
    for r in tl.rows:
        steps.append(
            {
                "step": r.step,
                "role": r.role,
                "attempt": r.attempt,
                "workload": r.workload,
                "queue": r.queue,
                "clusterQueue": r.cluster_queue,
                "state": r.state,
                "reason": r.reason,
                "message": r.message,
                "evicted": r.evicted,
                "created": _time(r.created),
                "quotaReserved": _time(r.reserved),
                "admitted": _time(r.admitted),
                "running": _time(r.running),
                "ended": _time(r.ended),
                "waitedSeconds": round(r.seconds(SpanKind.WAIT), 3),
                "heldSeconds": round(r.held_seconds, 3),
                "capacitySeconds": round(r.seconds(SpanKind.CAPACITY), 3),
                "runningSeconds": round(r.seconds(SpanKind.RUN), 3),
                "check": r.check,
                "request": r.request,
                "capacity": r.capacity,
                "gpus": r.gpus,
                "gpuSecondsHeld": r.gpu_seconds_held,
                "gpuSecondsUsed": r.gpu_seconds_used,
                "phases": [
                    {
                        "phase": str(s.kind),
                        "start": _time(s.start),
                        "end": _time(s.end),
                        "seconds": round(s.seconds, 3),
                    }
                    for s in r.spans
                ],
            }
        )
    trainer = None
    if tl.progress is not None or tl.remaining_seconds is not None:
        trainer = {
            "progressPercentage": tl.progress,
            "estimatedRemainingSeconds": tl.remaining_seconds,
        }
    return {
        "namespace": tl.namespace,
        "name": tl.name,
        "state": tl.state,
        "now": _time(tl.now),
        "start": _time(tl.start),
        "end": _time(tl.end),
        "trainerStatus": trainer,
        "steps": steps,
        "totals": {
            "waitedSeconds": round(sum((r.seconds(SpanKind.WAIT) for r in tl.rows), 0.0), 3),
            "gpuSecondsHeld": round(sum((r.gpu_seconds_held for r in tl.rows), 0.0), 3),
            "gpuSecondsUsed": round(sum((r.gpu_seconds_used for r in tl.rows), 0.0), 3),
        },
    }


def _progress(tl: Timeline) -> str:
    if tl.progress is None:
        return ""
    eta = tl.remaining_seconds
    return f"  trainer progress: {tl.progress}%" + (
        f" (about {format_duration(eta)} left)" if eta is not None else ""
    )


def _time(t: datetime | None) -> str | None:
    return format_time(t) if t is not None else None


def _num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.1f}"
