"""The admission benchmark, small (benchmarks/admission.py): 4 init-heavy TrainJobs under
upstream (Kubeflow Trainer + JobSet + Kueue's TrainJob integration) and under trainweave.

Upstream admits each TrainJob as one Workload, so the trainer's 16 GPUs are reserved while the
initializers run; trainweave admits the trainer step only once the initializers are done. The
GPU quota fits two trainers, so upstream also queues the other two TrainJobs behind them.
"""

from __future__ import annotations

import pytest

from benchmarks import admission

from .kube import Kube, default_kubeconfig

pytestmark = pytest.mark.e2e


def test_trainweave_holds_no_gpus_while_initializers_run(kube: Kube) -> None:
    cluster = admission.Cluster(str(default_kubeconfig()))
    jobs = admission.trace("init-heavy", 4, seed=1, scale=0.5)
    cluster.upstream(True)
    try:
        up = cluster.run("upstream", jobs, timeout=600)
    finally:
        cluster.upstream(False)
    tw = cluster.run("trainweave", jobs, timeout=600)
    assert [j.outcome for j in up.jobs] == ["Complete"] * 4, up.jobs
    assert [j.outcome for j in tw.jobs] == ["Complete"] * 4, tw.jobs
    # upstream: at least the shortest initializer phase of each TrainJob, 16 GPUs each
    least_init = min(j.seconds["dataset-initializer"] for j in jobs)
    assert up.figures["held_idle_gpu_s"] >= 4 * 16 * least_init, up.figures
    # trainweave: only the time between a trainer step's admission and its pods running
    # (scheduling; under 2 s per step on these engines)
    assert tw.figures["held_idle_gpu_s"] <= 4 * 16 * 2, tw.figures
    assert tw.figures["makespan_s"] < up.figures["makespan_s"], (tw.figures, up.figures)
