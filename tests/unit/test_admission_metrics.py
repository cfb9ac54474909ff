"""benchmarks/admission_metrics.py: the figures of the admission benchmark, from recorded times."""

from __future__ import annotations

import pytest

from benchmarks.admission_metrics import (
    Hold,
    Span,
    TrainJobTimes,
    held_idle,
    outside,
    percentile,
    summary,
    union,
)


def test_union_merges_overlaps_and_drops_empty() -> None:
    assert union([(5, 7), (0, 2), (1, 3), (4, 4)]) == [(0, 3), (5, 7)]


@pytest.mark.parametrize(
    ("interval", "want"),
    [((0, 10), 6.0), ((2, 3), 0.0), ((8, 12), 3.0), ((20, 25), 5.0)],
    ids=["around-both", "inside", "overlapping-the-end", "disjoint"],
)
def test_outside_is_the_uncovered_length(interval: tuple[float, float], want: float) -> None:
    assert outside(interval, [(1, 3), (7, 9)]) == want


def test_gpus_held_while_initializers_run_are_idle() -> None:
    """Upstream's shape: one Workload holds 16 GPUs from admission (t=0) to the end (t=60); the
    two trainer pods run 40-55 s: held idle = 16 x (40 + 5)."""
    holds = [Hold("a", "trainjob-a", 16, 0, 0, 60)]
    spans = [Span("a", 40, 55, 8), Span("a", 41, 55, 8)]
    assert held_idle(holds, spans) == {"a": 16 * 45}


def test_a_step_workload_admitted_when_its_trainer_starts_holds_nothing_idle() -> None:
    holds = [
        Hold("a", "a-dataset-initializer-a0", 0, 0, 0, 40),
        Hold("a", "a-node-a0", 16, 40, 40, 55),
    ]
    spans = [Span("a", 40, 55, 8), Span("a", 40, 55, 8)]
    assert held_idle(holds, spans) == {"a": 0.0}


def test_pods_of_another_trainjob_do_not_count_as_running() -> None:
    assert held_idle([Hold("a", "w", 8, 0, 0, 10)], [Span("b", 0, 10, 8)]) == {"a": 80.0}


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 21)]
    assert (percentile(values, 0.95), percentile(values, 0.5), percentile([], 0.9)) == (
        19.0,
        10.0,
        0.0,
    )


def test_summary() -> None:
    jobs = [TrainJobTimes("a", 0, 60, "Complete"), TrainJobTimes("b", 0, 100, "Failed")]
    holds = [Hold("a", "wa", 16, 0, 0, 60), Hold("b", "wb", 16, 0, 10, 100)]
    spans = [Span("a", 40, 60, 16), Span("b", 80, 100, 16)]
    got = summary(jobs, holds, spans, gpu_quota=32)
    assert got == {
        "trainjobs": 2.0,
        "completed": 1.0,
        "makespan_s": 100.0,
        "jct_mean_s": 80.0,
        "jct_p95_s": 100.0,
        "held_idle_gpu_s": 16 * 40 + 16 * 70,
        "gpu_utilisation": (16 * 20 + 16 * 20) / (32 * 100),
        "admission_wait_mean_s": 5.0,
        "admission_wait_p95_s": 10.0,
        "workloads": 2.0,
    }
