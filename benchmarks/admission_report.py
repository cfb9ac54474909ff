"""A run of the admission benchmark as recorded, what is printed of it, and a dumped run read
back (``benchmarks/admission.py --dump`` / ``--from-dump``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from admission_metrics import (
    GpuStep,
    Hold,
    QuotaHold,
    Span,
    StepStart,
    TrainJobTimes,
    free_account,
    handoff,
    quota_account,
    summary,
)
from admission_provisioning import Records, records_from
from admission_provisioning import figures as provisioning_figures
from admission_trace import GPU_QUOTA, Json


@dataclass
class Run:
    """One trace under one setup: what was recorded, and the figures."""

    setup: str
    jobs: list[TrainJobTimes] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    starts: list[StepStart] = field(default_factory=list)
    gpu_steps: list[GpuStep] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    writes: dict[str, float] = field(default_factory=dict)
    quota_holds: list[QuotaHold] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)
    capacity: Records | None = None  # the provisioning traces' GPU nodes, pods and requests


def report(name: str, run: Run) -> None:
    """Print a run's JSON lines: its figures, then (trainweave) the hand-off and the quota
    account, the API writes and the CPU seconds."""
    setup = run.setup
    print(json.dumps({"trace": name, "setup": setup,
                      **{k: round(v, 2) for k, v in run.figures.items()}}), flush=True)  # fmt: skip
    if run.starts:
        print(
            json.dumps({"trace": name, "setup": setup, "handoff": handoff(run.starts)}), flush=True
        )
        quota = quota_account(run.quota_holds, GPU_QUOTA, run.figures["makespan_s"])
        begin = min((j.created for j in run.jobs), default=0.0)
        quota |= free_account(run.gpu_steps, run.holds, GPU_QUOTA, begin,
                              begin + run.figures["makespan_s"])  # fmt: skip
        print(json.dumps({"trace": name, "setup": setup, "quota": quota}), flush=True)
    print(json.dumps({"trace": name, "setup": setup,
                      "api_writes_per_trainjob_top": run.writes}), flush=True)  # fmt: skip
    print(json.dumps({"trace": name, "setup": setup, "cpu_s": run.cpu,
                      "wall_s": round(run.figures["makespan_s"], 1)}), flush=True)  # fmt: skip


def from_dump(line: Json) -> tuple[str, Run]:
    """A dumped run (``--dump``), its figures worked out again by today's metrics: the trace's
    name and the Run."""
    run = Run(
        line["setup"],
        [TrainJobTimes(**j) for j in line["jobs"]],
        [Hold(**h) for h in line["holds"]],
        [Span(**s) for s in line["spans"]],
        [StepStart(**s) for s in line["starts"]],
        [GpuStep(**g) for g in line["gpu_steps"]],
        line["cpu"],
        line["writes"],
        [QuotaHold(**q) for q in line["quota_holds"]],
    )
    figures = summary(run.jobs, run.holds, run.spans, GPU_QUOTA, run.gpu_steps)
    run.figures = line["figures"] | figures  # API writes are the cluster's, kept as recorded
    if line.get("capacity"):
        run.capacity = records_from(line["capacity"])
        run.figures |= provisioning_figures(run.capacity)
    return line["trace"], run


def last_line(name: str, up: Run, tws: list[Run]) -> str:
    """The machine-readable line of a trace: trainweave = the last setup (with kept position
    where it ran); with two trainweave setups, the first's figures follow as ``nokept-*``."""

    def figures(tw: Run) -> tuple[float, float, float, float]:
        f, u = tw.figures, up.figures
        ratio = f["makespan_s"] / u["makespan_s"] if u["makespan_s"] else 0.0
        p99 = f["jct_p99_s"] / u["jct_p99_s"] if u["jct_p99_s"] else 0.0
        return ratio, f["held_idle_gpu_s"], f["inversions"], p99

    ratio, held, inv, p99 = figures(tws[-1])
    line = (
        f"bench-admission: trace={name} makespan-ratio={ratio:.2f} held-idle-gpu-s "
        f"trainweave={held:.0f} upstream={up.figures['held_idle_gpu_s']:.0f} inversions "
        f"trainweave={inv:.0f} upstream={up.figures['inversions']:.0f} jct-p99-ratio={p99:.2f}"
    )
    if len(tws) > 1:
        ratio, held, inv, p99 = figures(tws[0])
        line += (
            f" nokept-makespan-ratio={ratio:.2f} nokept-held-idle-gpu-s={held:.0f}"
            f" nokept-inversions={inv:.0f} nokept-jct-p99-ratio={p99:.2f}"
        )
    return line


def handoff_line(name: str, run: Run, argo: str, requeue: str) -> str:
    """One trainweave run's hand-off (``bench-handoff``): the Argo part (predecessors done ->
    Workflow node started) and the whole hand-off, p50/p99 s; utilisation of ready work,
    held-idle GPU-seconds, inversions; then the setup and JCT p50/p99."""
    parts = handoff(run.starts)
    argo_part, total = parts.get("done->started", {}), parts.get("total", {})
    f = run.figures
    return (
        f"bench-handoff: argo={argo} requeue={requeue} trace={name}"
        f" argo-p50={argo_part.get('p50', 0.0):.2f} argo-p99={argo_part.get('p99', 0.0):.2f}"
        f" total-p50={total.get('p50', 0.0):.2f} total-p99={total.get('p99', 0.0):.2f}"
        f" utilisation-ready={f['gpu_utilisation_of_ready']:.2f}"
        f" held-idle-gpu-s={f['held_idle_gpu_s']:.0f} inversions={f['inversions']:.0f}"
        f" setup={run.setup} jct-p50={f['jct_p50_s']:.0f} jct-p99={f['jct_p99_s']:.0f}"
    )
