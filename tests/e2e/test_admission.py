"""The admission benchmark, small (benchmarks/admission.py): 6 init-heavy TrainJobs under
upstream (Kubeflow Trainer + JobSet + Kueue's TrainJob integration) and under trainweave.

Upstream admits each TrainJob as one Workload, so the trainer's 16 GPUs are reserved while the
initializers run; trainweave admits the trainer step only once the initializers are done. The
GPU quota fits two trainers, so upstream runs the TrainJobs in three waves of two, initializers
included; trainweave runs every initializer at once and then the trainers two by two. Six, not
four: with four the two makespans were within a few seconds of each other (step transitions cost
trainweave up to Argo's requeue time each), and a test must not ride on that.

The upstream run is tests/e2e/upstream_phase.py's ``admission`` half (upstream on once per run,
its halves one after another, none beside this one); the trainweave run follows here, upstream off.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from .kube import Kube, default_kubeconfig
from .upstream_phase import ADMISSION_TRAINJOBS, UpstreamResults

# benchmarks/admission.py is a script that imports its siblings as top-level modules: imported
# by name, so that mypy checks it as a file (make typecheck) and not through this package.
admission: Any = importlib.import_module("benchmarks.admission")

pytestmark = [pytest.mark.e2e, pytest.mark.serial]


def test_trainweave_holds_no_gpus_while_initializers_run(
    kube: Kube, upstream_results: UpstreamResults
) -> None:
    upstream = upstream_results.admission.get()
    n = ADMISSION_TRAINJOBS
    jobs, up = upstream.trace, upstream.run
    cluster = admission.Cluster(str(default_kubeconfig()))
    tw = cluster.run("trainweave", jobs, timeout=600)
    assert [j.outcome for j in up.jobs] == ["Complete"] * n, up.jobs
    assert [j.outcome for j in tw.jobs] == ["Complete"] * n, tw.jobs
    # upstream: at least the shortest initializer phase of each TrainJob, 16 GPUs each
    least_init = min(j.seconds["dataset-initializer"] for j in jobs)
    assert up.figures["held_idle_gpu_s"] >= n * 16 * least_init, up.figures
    # trainweave: only the time between a trainer step's admission and its pods running
    # (scheduling: under 2 s per step on a quiet machine, 3.2 s with a second cluster running
    # 1000 TrainJobs beside it), never an initializer phase: less than a third of the
    # shortest one per TrainJob (the tight figure is the benchmark's: docs/benchmarks.md)
    assert tw.figures["held_idle_gpu_s"] < n * 16 * least_init / 3, (tw.figures, least_init)
    # three waves against one initializer phase: at least 15% shorter (measured: 0.6-0.7)
    assert tw.figures["makespan_s"] < 0.85 * up.figures["makespan_s"], (tw.figures, up.figures)
