"""benchmarks/admission_provisioning.py: the provisioning traces' figures (GPU node-seconds,
idle GPU node-seconds, bookings expired, requests per TrainJob, trainer start delay), from
recorded node, pod and request times."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.admission_provisioning import (
    CONSUMED,
    TIME_EXPIRED,
    BoundPod,
    Idle,
    NodeLife,
    Records,
    RequestLife,
    TrainerStart,
    busy,
    expired,
    figures,
    idle_seconds,
    line,
    makespan_ratio,
    node_idle,
    node_seconds,
    records_from,
    requests_per_trainjob,
    start_delays,
    stranded,
)

N = NodeLife("n", created=0.0, deleted=100.0)


@pytest.mark.parametrize(
    ("node", "pods", "end", "want"),
    [
        # up 100 s, pods 20 + 10 s: 30 s between/before them, 40 s after the last one
        (N, [BoundPod("a", "n", 10, 30), BoundPod("b", "n", 50, 60)], 200, Idle(30, 40, 20, 1)),
        (N, [], 200, Idle(100, 0)),  # never used: all of it unused, no scale-down tail
        (N, [BoundPod("a", "n", 0, 100)], 200, Idle(0, 0)),
        # two pods of one trainer on the same node overlap: counted once
        (N, [BoundPod("a", "n", 10, 40), BoundPod("a", "n", 20, 50)], 200, Idle(10, 50)),
        # a pod on another node does not make this one busy
        (N, [BoundPod("a", "m", 0, 100)], 200, Idle(100, 0)),
        # still up when the recording stopped, the pod still bound: until ``end``
        (NodeLife("n", 0.0), [BoundPod("a", "n", 10, None)], 80, Idle(10, 0)),
        (NodeLife("n", 0.0), [BoundPod("a", "n", 10, 20)], 80, Idle(10, 60)),
        # a pod bound past the node's deletion (a stale record) is clipped to the node's life
        (N, [BoundPod("a", "n", 90, 150)], 200, Idle(90, 0)),
    ],
    ids=[
        "before-between-after",
        "never-used",
        "fully-covered",
        "overlapping-pods",
        "other-node",
        "still-up-still-bound",
        "still-up",
        "clipped",
    ],
)
def test_node_idle(node: NodeLife, pods: list[BoundPod], end: float, want: Idle) -> None:
    assert node_idle(node, pods, end) == want


def test_node_seconds_and_idle_sum_over_nodes() -> None:
    nodes = [N, NodeLife("m", 20.0, ready=21.0, deleted=50.0), NodeLife("k", 60.0)]
    pods = [BoundPod("a", "m", 25, 35), BoundPod("b", "k", 60, 70)]
    assert node_seconds(nodes, end=90) == 100 + 30 + 30
    # n: 100 unused; m: 5 unused + 15 after; k: 20 after its pod, to the end
    assert idle_seconds(nodes, pods, end=90) == Idle(105, 35)


def request(tj: str, name: str, reason: str = "", ended: float | None = None) -> RequestLife:
    return RequestLife(tj, name, 0.0, 1.0, ended if ended is not None or not reason else 11.0,
                       reason)  # fmt: skip


def test_only_a_booking_that_ran_out_of_time_expired() -> None:
    reqs = [
        request("a", "a-1", TIME_EXPIRED),
        request("b", "b-1", CONSUMED),  # its pods were bound: consumed, not expired
        request("c", "c-1"),  # still holding
    ]
    assert [r.name for r in expired(reqs)] == ["a-1"]


def test_requests_per_trainjob_counts_every_trainjob_of_the_trace() -> None:
    reqs = [request("a", "a-1"), request("a", "a-2"), request("b", "b-1"), request("x", "x-1")]
    assert requests_per_trainjob(reqs, ["a", "b", "c"]) == (1.0, 2)
    assert requests_per_trainjob([], []) == (0.0, 0)


def test_start_delay_is_running_after_the_predecessors() -> None:
    starts = [
        TrainerStart("a", ready=10.0, created=11.0, running=13.5),
        TrainerStart("b", ready=10.0, created=11.0, running=None),  # never ran
        TrainerStart("c", ready=None, created=None, running=None),  # waiting for quota
        TrainerStart("d", ready=10.0, created=9.0, running=9.5),  # ran first: no delay
    ]
    assert start_delays(starts) == [3.5, 0.0]


def test_a_trainer_is_stranded_when_it_never_ran_and_its_booking_expired() -> None:
    starts = [
        TrainerStart("a", 70.0, 71.0, None),  # created, never ran, booking expired: stranded
        TrainerStart("b", 70.0, 71.0, 72.0),  # ran on nodes the booking no longer held
        TrainerStart("c", None, None, None),  # never created (waiting for quota)
        TrainerStart("d", 70.0, 71.0, None),  # not running yet, its booking holds
    ]
    reqs = [
        request("a", "a-1", TIME_EXPIRED),
        request("b", "b-1", TIME_EXPIRED),
        request("c", "c-1", TIME_EXPIRED),
        request("d", "d-1"),
    ]
    assert stranded(starts, reqs) == ["a"]


def records() -> Records:
    return Records(
        nodes=(NodeLife("n0", 1.0, 1.5, 61.0, "a-1"), NodeLife("n1", 1.0, 1.5, 61.0, "a-1")),
        pods=(),
        requests=(request("a", "a-1", TIME_EXPIRED, 31.0), request("b", "b-1")),
        starts=(TrainerStart("a", 70.0, 71.0, None), TrainerStart("b", None, None, None)),
        end=150.0,
        stopped=150.0,
        trainjobs=("a", "b"),
    )


def test_figures_of_an_upstream_run_whose_trainer_lost_its_nodes() -> None:
    f = figures(records())
    assert f["prov_gpu_nodes"] == 2
    assert f["prov_gpu_node_s"] == f["prov_idle_gpu_node_s"] == 120
    assert f["prov_idle_unused_gpu_node_s"] == 120 and f["prov_idle_scale_down_gpu_node_s"] == 0
    assert (f["prov_bookings_expired"], f["prov_trainers_stranded"]) == (1, 1)
    assert (f["prov_requests_per_trainjob"], f["prov_requests_per_trainjob_max"]) == (1, 1)
    assert f["prov_trainers_started"] == 0 and f["prov_start_delay_p50_s"] == 0
    assert (f["prov_run_s"], f["prov_trainjobs"]) == (150, 2)


def test_records_read_back_from_a_dump() -> None:
    recs = records()
    assert records_from(dataclasses.asdict(recs)) == recs


TW = {
    "prov_idle_gpu_node_s": 12.4, "prov_bookings_expired": 0.0, "prov_gpu_node_s": 301.0,
    "makespan_s": 60.0, "completed": 4.0, "prov_trainjobs": 4.0,
    "prov_idle_unused_gpu_node_s": 2.4, "prov_idle_scale_down_gpu_node_s": 10.0,
    "prov_trainers_stranded": 0.0, "prov_requests_per_trainjob": 1.0,
    "prov_start_delay_p50_s": 2.04, "prov_run_s": 60.0,
    "prov_idle_between_gpu_node_s": 1.6, "prov_handovers": 1.0,
}  # fmt: skip


def test_the_bench_provisioning_line() -> None:
    up = TW | {
        "prov_idle_gpu_node_s": 480.0, "prov_bookings_expired": 2.0, "prov_gpu_node_s": 500.0,
        "makespan_s": 0.0, "completed": 0.0, "prov_idle_unused_gpu_node_s": 480.0,
        "prov_idle_scale_down_gpu_node_s": 0.0, "prov_trainers_stranded": 2.0,
        "prov_start_delay_p50_s": 0.0, "prov_run_s": 150.0,
        "prov_idle_between_gpu_node_s": 0.0, "prov_handovers": 0.0,
    }  # fmt: skip
    assert line("prov-long-init", TW, up) == (
        "bench-provisioning: trace=prov-long-init idle-gpu-node-s trainweave=12 upstream=480"
        " expired trainweave=0 upstream=2 node-s trainweave=301 upstream=500"
        " makespan-ratio=<0.40 idle-unused trainweave=2 upstream=480"
        " idle-scale-down trainweave=10 upstream=0 idle-between-pods trainweave=2 upstream=0"
        " handovers trainweave=1 upstream=0 stranded trainweave=0 upstream=2"
        " requests-per-trainjob trainweave=1.00 upstream=1.00"
        " start-delay-p50 trainweave=2.0 upstream=0.0 complete trainweave=4/4 upstream=0/4"
    )


@pytest.mark.parametrize(
    ("upstream", "want"),
    [
        ({"makespan_s": 120.0, "completed": 4.0, "prov_trainjobs": 4.0}, "0.50"),
        # upstream stopped stuck after 150 s: its makespan is longer, the ratio smaller
        ({"makespan_s": 0.0, "completed": 0.0, "prov_trainjobs": 4.0, "prov_run_s": 150.0},
         "<0.40"),
    ],
    ids=["both-finished", "upstream-stuck"],
)  # fmt: skip
def test_makespan_ratio(upstream: dict[str, float], want: str) -> None:
    assert makespan_ratio(TW, upstream) == want


# -- properties -------------------------------------------------------------------------------

times = st.floats(min_value=0, max_value=1000, allow_nan=False)


@st.composite
def node_and_pods(draw: st.DrawFn) -> tuple[NodeLife, list[BoundPod], float]:
    created = draw(times)
    life = draw(st.floats(min_value=0, max_value=500))
    deleted = draw(st.none() | st.just(created + life))
    end = created + life + draw(st.floats(min_value=0, max_value=100))
    pods = []
    for _ in range(draw(st.integers(0, 5))):
        bound = draw(times)
        length = draw(st.none() | st.floats(min_value=0, max_value=300))
        pods.append(BoundPod("a", draw(st.sampled_from(["n", "m"])), bound,
                             None if length is None else bound + length))  # fmt: skip
    return NodeLife("n", created, deleted=deleted), pods, end


@given(node_and_pods())
def test_idle_is_never_more_than_the_node_was_up(
    case: tuple[NodeLife, list[BoundPod], float],
) -> None:
    node, pods, end = case
    idle = node_idle(node, pods, end)
    up = node_seconds([node], end)
    assert idle.unused >= -1e-9 and idle.scale_down >= -1e-9
    assert -1e-9 <= idle.between <= idle.unused + 1e-9  # the gaps are part of the unused time
    assert idle.total <= up + 1e-9
    # idle and busy make up the node's life
    assert abs(idle.total + sum(b - a for a, b in busy(node, pods, end)) - up) < 1e-6


@given(node_and_pods())
def test_a_node_covered_by_a_pod_for_its_whole_life_is_never_idle(
    case: tuple[NodeLife, list[BoundPod], float],
) -> None:
    node, pods, end = case
    stop = node.deleted if node.deleted is not None else end
    covering = BoundPod("a", node.name, node.created, stop)
    assert node_idle(node, [*pods, covering], end).total == pytest.approx(0.0, abs=1e-6)
