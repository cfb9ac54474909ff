"""The hand-off benchmark's line (benchmarks/admission.py ``handoff_line``), from recorded step
starts: the Argo part is predecessors done -> Workflow node started, the total done -> running."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))  # the scripts import their siblings as top-level modules
admission: Any = importlib.import_module("admission")
metrics: Any = importlib.import_module("admission_metrics")
report: Any = importlib.import_module("admission_report")


def test_the_line_names_setting_and_figures() -> None:
    starts = [
        metrics.StepStart("tj-0", "node", 10.0, 11.0, 11.1, 12.0, 12.1, 12.5),
        metrics.StepStart("tj-1", "node", 20.0, 20.4, 20.5, 20.6, 20.7, 21.0),
    ]
    run = report.Run("trainweave", starts=starts)
    run.figures = {
        "gpu_utilisation_of_ready": 0.934,
        "held_idle_gpu_s": 96.4,
        "inversions": 0.0,
        "jct_p50_s": 52.2,
        "jct_p99_s": 65.0,
    }
    assert admission.handoff_line("sustained", run, "v4.1.4", "1s") == (
        "bench-handoff: argo=v4.1.4 requeue=1s trace=sustained argo-p50=0.40 argo-p99=1.00"
        " total-p50=1.00 total-p99=2.50 utilisation-ready=0.93 held-idle-gpu-s=96 inversions=0"
        " setup=trainweave jct-p50=52 jct-p99=65"
    )
