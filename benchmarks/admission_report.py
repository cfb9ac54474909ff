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
    return line["trace"], run
