"""``trainweave queues``: a ``queues_view`` as the default table (per ClusterQueue a quota line,
then one row per step, and a line per step an admission check holds or evicted). Pure."""

from __future__ import annotations

from trainweave.integrations.views.read import capacity, quota
from trainweave.integrations.views.read.queues_view import QueueRow


def format_table(view: tuple[QueueRow, ...]) -> str:
    """The default output: per ClusterQueue a quota line, then one row per step."""
    if not view:
        return "no ClusterQueues\n"
    lines: list[str] = []
    for cq in view:
        title = cq.name or "(no ClusterQueue: LocalQueue missing)"
        head = f"ClusterQueue {title}"
        if cq.name:
            head += f"  cohort: {cq.cohort or '-'}  admitted: {cq.admitted}  pending: {cq.pending}"
        if cq.waiting_for_capacity:
            head += f"  waiting for capacity: {cq.waiting_for_capacity}"
        lines.append(head)
        for flavor in dict.fromkeys(x.flavor for x in cq.quota):
            used = ", ".join(
                f"{x.resource} {x.reserved}/{x.nominal}" for x in cq.quota if x.flavor == flavor
            )
            lines.append(f"  {flavor}: {used} reserved/nominal")
        rows = [("NAMESPACE", "TRAINJOB", "STEP", "ROLE", "QUEUE", "STATE", "WAITED", "HELD",
                 "GPU-h", "PIPELINE GPU-h")]  # fmt: skip
        notes = []
        for ns in cq.namespaces:
            for p in ns.pipelines:
                for sr in p.steps:
                    q = sr.quota
                    state = q.state + (f" ({q.reason})" if q.reason else "")
                    state += " (waiting for capacity)" if q.waiting_for_capacity else ""
                    if note := capacity.note(q):
                        notes.append(f"  {ns.namespace}/{p.trainjob} {q.step}: {note}")
                    rows.append(
                        (
                            ns.namespace,
                            f"{p.trainjob} [{p.state.value}]",
                            q.step,
                            q.role,
                            q.queue,
                            state,
                            quota.format_duration(sr.waited_seconds),
                            "-" if sr.waiting else quota.format_duration(q.hold_seconds),
                            "-" if sr.waiting else f"{q.gpu_hours:.3f}",
                            f"{p.gpu_hours:.3f}",
                        )
                    )
            if ns.other_admitted or ns.other_pending:
                notes.append(
                    f"  {ns.namespace}: other Workloads {ns.other_admitted} admitted, "
                    f"{ns.other_pending} pending"
                )
        if len(rows) == 1:
            lines.append("  no pipeline holds or waits for this quota")
        else:
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            for r in rows:
                cells = zip(r, widths, strict=True)
                lines.append(("  " + "  ".join(c.ljust(w) for c, w in cells)).rstrip())
        lines += notes
        lines.append("")
    return "\n".join(lines)
