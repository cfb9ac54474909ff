"""benchmarks/admission_metrics.py: the figures of the admission benchmark, from recorded times."""

from __future__ import annotations

import pytest

from benchmarks.admission_metrics import (
    GpuStep,
    Hold,
    QuotaHold,
    Span,
    StepStart,
    TrainJobTimes,
    backfilled,
    free_account,
    free_before,
    handoff,
    held_idle,
    inversions,
    inverted,
    outside,
    parts,
    percentile,
    quota_account,
    ready_capacity,
    same_second,
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
    steps = [GpuStep("a", 0, 0, 0, 0, "wa"), GpuStep("b", 1, 0, 1, 10, "wb")]
    got = summary(jobs, holds, spans, gpu_quota=32, steps=steps)
    assert got == {
        "trainjobs": 2.0,
        "completed": 1.0,
        "makespan_s": 100.0,
        "jct_mean_s": 80.0,
        "jct_p50_s": 60.0,
        "jct_p95_s": 100.0,
        "jct_p99_s": 100.0,
        "jct_max_s": 100.0,
        "held_idle_gpu_s": 16 * 40 + 16 * 70,
        "gpu_utilisation": (16 * 20 + 16 * 20) / (32 * 100),
        "gpu_utilisation_of_ready": (16 * 20 + 16 * 20) / (16 * 60 + 16 * 99),
        "admission_wait_mean_s": 5.0,
        "admission_wait_p95_s": 10.0,
        "workloads": 2.0,
        "inversions": 0.0,
        "inversions_backfill": 0.0,
        "inversions_same_second": 0.0,
    }


# a created at 0, b at 1 (same priority unless said); x is a's GPU step, y is b's
@pytest.mark.parametrize(
    ("x", "y", "want"),
    [
        (GpuStep("a", 0, 0, 10, 30), GpuStep("b", 1, 0, 12, 20), 1),
        (GpuStep("a", 0, 0, 10, 20), GpuStep("b", 1, 0, 12, 30), 0),
        (GpuStep("a", 0, 0, 12, 30), GpuStep("b", 1, 0, 10, 20), 0),
        (GpuStep("a", 0, 0, 10, 30), GpuStep("b", 1, 0, 10, 20), 0),
        (GpuStep("a", 0, 0, 10, 20), GpuStep("b", 1, 0, 12, 20), 0),
        (GpuStep("a", 0, 0, 10, 30), GpuStep("b", 1, 1, 12, 20), 0),
        (GpuStep("a", 1, 0, 10, 30), GpuStep("b", 1, 0, 12, 20), 0),
        (GpuStep("a", 0, 0, 10, None), GpuStep("b", 1, 0, 12, 20), 1),
        (GpuStep("a", 0, 0, 10, 30), GpuStep("b", 1, 0, 12, None), 0),
    ],
    ids=[
        "b-ready-later-admitted-first",
        "in-order",
        "b-ready-first",
        "ready-at-the-same-time",
        "admitted-at-the-same-time",
        "other-priority",
        "created-at-the-same-time",
        "a-never-admitted",
        "b-never-admitted",
    ],
)
def test_an_inversion_is_a_later_trainjobs_later_ready_step_admitted_first(
    x: GpuStep, y: GpuStep, want: int
) -> None:
    assert inversions([x, y]) == want
    assert inversions([y, x]) == want


def test_inversions_count_pairs_of_steps() -> None:
    """a's trainer and evaluator were both ready before b's trainer and both admitted after it:
    two pairs; c (created last) overtook nobody ready before it."""
    steps = [
        GpuStep("a", 0, 0, 10, 40),
        GpuStep("a", 0, 0, 11, 50),
        GpuStep("b", 1, 0, 20, 30),
        GpuStep("c", 2, 0, 60, 61),
    ]
    assert inversions(steps) == 2


def test_an_inversion_is_a_backfill_when_the_earlier_step_did_not_fit() -> None:
    """32 GPUs. z (16) holds 0-40; a's trainer x (16) ready at 10, admitted at 40; b's evaluator
    y (8) ready at 12: admitted at 20 while w (8) also held, 8 GPUs free with y's own left out,
    so x did not fit: a backfill. c's evaluator v (8) ready at 14, admitted at 30 after w ended
    at 30: 16 free, x would have fit: an inversion that counts."""
    holds = [
        Hold("z", "wz", 16, 0, 0, 40),
        Hold("w", "ww", 8, 0, 0, 30),
        Hold("a", "wx", 16, 0, 40, 50),
        Hold("b", "wy", 8, 1, 20, 25),
        Hold("c", "wv", 8, 2, 30, 35),
    ]
    x = GpuStep("a", 0, 0, 10, 40, "wx")
    y = GpuStep("b", 1, 0, 12, 20, "wy")
    v = GpuStep("c", 2, 0, 14, 30, "wv")
    assert free_before(y, holds, 32) == 8
    assert free_before(v, holds, 32) == 16
    pairs = inverted([x, y, v])
    assert pairs == [(x, y), (x, v)]
    assert backfilled(pairs, holds, 32) == [(x, y)]
    jobs = [TrainJobTimes(n, 0, 50, "Complete") for n in "abc"]
    got = summary(jobs, holds, [], gpu_quota=32, steps=[x, y, v])
    assert (got["inversions"], got["inversions_backfill"]) == (2.0, 1.0)


def test_an_inversion_between_workloads_of_one_second_is_a_tie_for_kueue() -> None:
    """a and b were created 0.1 s apart and their trainers' Workloads in the same second (100):
    Kueue orders them by UID, so b's admitted first is no order break it could see; c's
    Workload was created a second later."""
    x = GpuStep("a", 100.2, 0, 110, 140, "wx")
    y = GpuStep("b", 100.3, 0, 112, 130, "wy")
    v = GpuStep("c", 101.1, 0, 114, 135, "wv")
    holds = [
        Hold("a", "wx", 16, 100, 140, 150),
        Hold("b", "wy", 16, 100, 130, 140),
        Hold("c", "wv", 16, 101, 135, 145),
    ]
    pairs = inverted([x, y, v])
    assert pairs == [(x, y), (x, v)]
    assert same_second(pairs, holds) == [(x, y)]


def test_a_step_of_unknown_size_is_taken_to_fit() -> None:
    """x never held quota, so its GPUs are unknown: the pair counts as an inversion."""
    x = GpuStep("a", 0, 0, 10, None, "wx")
    y = GpuStep("b", 1, 0, 12, 20, "wy")
    holds = [Hold("z", "wz", 32, 0, 0, 40), Hold("b", "wy", 8, 1, 20, 25)]
    assert backfilled(inverted([x, y]), holds, 32) == []


def start(**times: float | None) -> StepStart:
    stages = ("done", "started", "created", "admitted", "ungated", "running")
    return StepStart("a", "node", **{s: times.get(s) for s in stages})


def test_parts_are_consecutive_differences_and_the_total() -> None:
    got = parts(start(done=10, started=10.5, created=11, admitted=11.25, ungated=11.5, running=12))
    assert got == {
        "done->started": 0.5,
        "started->created": 0.5,
        "created->admitted": 0.25,
        "admitted->ungated": 0.25,
        "ungated->running": 0.5,
        "total": 2.0,
    }


def test_a_part_needs_both_ends_and_may_be_negative() -> None:
    """Kept position: the controller lifted the gate and Kueue admitted before Argo made pods."""
    got = parts(start(done=10, created=12, admitted=11, running=13))
    assert got == {"created->admitted": -1.0, "total": 3.0}


def test_handoff_gives_n_p50_p99_per_part_in_stage_order() -> None:
    starts = [start(done=0, running=float(t)) for t in range(1, 11)] + [start(done=5)]
    assert handoff(starts) == {"total": {"n": 10.0, "p50": 5.0, "p99": 10.0}}
    got = handoff([start(done=0, started=0.1234, running=2), start(done=0, started=1, running=1)])
    assert got == {  # started->running is no part: only consecutive stages are
        "done->started": {"n": 2.0, "p50": 0.123, "p99": 1.0},
        "total": {"n": 2.0, "p50": 1.0, "p99": 2.0},
    }


def test_ready_capacity_is_the_quota_ready_steps_could_fill() -> None:
    """a's trainer (16 GPUs) ready at 0, held 2-12; b's (16) ready at 4, held 12-20; c's (16)
    ready at 6, held 12-20; on a 32-GPU quota: 16 over 0-4, 32 over 4-12 (48 ready, capped),
    32 over 12-20. A step never admitted is left out, and so is one with no GPUs."""
    holds = [
        Hold("a", "wa", 16, 0, 2, 12),
        Hold("b", "wb", 16, 0, 12, 20),
        Hold("c", "wc", 16, 0, 12, 20),
        Hold("d", "wd", 0, 0, 0, 20),
    ]
    steps = [
        GpuStep("a", 0, 0, 0, 2, "wa"),
        GpuStep("b", 1, 0, 4, 12, "wb"),
        GpuStep("c", 2, 0, 6, 12, "wc"),
        GpuStep("d", 3, 0, 0, 0, "wd"),
        GpuStep("e", 4, 0, 0, None, "we"),
    ]
    assert ready_capacity(steps, holds, 32) == 16 * 4 + 32 * 8 + 32 * 8
    assert ready_capacity(steps, holds, 64) == 16 * 4 + 32 * 2 + 48 * 6 + 32 * 8


def test_quota_account_splits_each_hold_and_leaves_the_rest_free() -> None:
    """Quota 32 for 20 s (640 GPU-s): a 16-GPU hold reserved at 0 before its pods were created
    at 0.5, running at 1, succeeded at 6, released at 7.5; an 8-GPU hold whose pods waited (created
    at 1, reserved at 2) running at 2.5, succeeded 5.5, released 6; one never released is left
    out."""
    holds = [
        QuotaHold("a", 16, 0.0, 0.5, 1.0, 6.0, 7.5),
        QuotaHold("b", 8, 2.0, 1.0, 2.5, 5.5, 6.0),
        QuotaHold("c", 8, 3.0, 3.0, 4.0, None, None),
    ]
    got = quota_account(holds, 32, 20.0)
    assert (got["holds"], got["holds_incomplete"]) == (2.0, 1.0)
    assert got["reserved->created_gpu_s"] == 16 * 0.5
    assert got["created->running_gpu_s"] == 16 * 0.5 + 8 * 0.5
    assert got["running->succeeded_gpu_s"] == 16 * 5 + 8 * 3
    assert got["succeeded->released_gpu_s"] == 16 * 1.5 + 8 * 0.5
    assert got["running->succeeded_share"] == round(104 / 640, 3)
    assert got["free_share"] == round(1 - (8 + 12 + 104 + 28) / 640, 3)
    assert (got["reserved->created_p50_s"], got["reserved->created_p99_s"]) == (0.0, 0.5)
    assert (got["succeeded->released_p50_s"], got["succeeded->released_p99_s"]) == (0.5, 1.5)


def test_free_quota_is_split_by_what_waited() -> None:
    """Quota 32 over 0-10 s. A 16-GPU hold 0-10 and an 8-GPU one 2-6; a 16-GPU step waits 3-8
    (admitted at 8, holding 8-10), an 8-GPU one waits 7-9 (never admitted: its Workload's hold
    is 9-9.5, from another watch). Free: 0-2 16 GPUs, nothing ready; 2-3 8, nothing ready; 3-6 8,
    only the 16 waits: fragmented; 6-7 16 and the 16 fits; 7-8 the same; then none free."""
    holds = [
        Hold("a", "wa", 16, 0, 0, 10),
        Hold("b", "wb", 8, 0, 2, 6),
        Hold("c", "wc", 16, 0, 8, 10),
        Hold("d", "wd", 8, 0, 9, 9.5),
    ]
    steps = [GpuStep("c", 0, 0, 3, 8, "wc"), GpuStep("d", 0, 0, 7, None, "wd")]
    got = free_account(steps, holds, 32, 0, 10)
    assert got == {
        "free_fit_gpu_s": 16 * 2,
        "free_fragmented_gpu_s": 8 * 3,
        "free_idle_gpu_s": 16 * 2 + 8 * 1,
    }
