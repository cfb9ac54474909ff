"""The step timeline (``trainweave status NAME --timeline``): a pipeline whose trainer waited for
GPUs, read from live Workloads, pods and Workflow nodes, from what is left once they are gone
(the ``trainweave.io/quota`` annotation), and while it still waits or after an eviction."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.unit.cluster_objects import Pod, StepState, pod, trainjob, workflow, workload
from trainweave import cli
from trainweave import labels as L
from trainweave.integrations.commands import status_cli, timeline_png
from trainweave.integrations.commands.timeline_format import WIDTH, format_text, to_json
from trainweave.integrations.views.read import quota
from trainweave.integrations.views.read.observed import Observed, quota_records
from trainweave.integrations.views.read.timeline import SpanKind, Timeline, timeline

Json = dict[str, Any]
T = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
NOW = T + timedelta(minutes=30)
W, H, R = SpanKind.WAIT, SpanKind.HELD, SpanKind.RUN
KUEUE_MSG = (
    "couldn't assign flavors to pod set node-0: insufficient unused quota for nvidia.com/gpu "
    "in flavor default, 2 more needed"
)


def at(minutes: float) -> str:
    return (T + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def kueue_event(name: str, minutes: float, reason: str = "Pending", msg: str = KUEUE_MSG) -> Json:
    """A Warning Event as Kueue's scheduler records it on a Workload it cannot admit."""
    return {
        "involvedObject": {"kind": "Workload", "name": name, "namespace": "ns"},
        "type": "Warning",
        "reason": reason,
        "message": msg,
        "lastTimestamp": at(minutes),
    }


def with_times(wf: Json, times: Mapping[str, tuple[float, float | None]]) -> Json:
    """Argo Pod nodes' startedAt/finishedAt (minutes after T), by ``<step>.<slot>``."""
    for node in wf["status"]["nodes"].values():
        key = ".".join(node["name"].split(".")[1:3]).split("(")[0]
        if node["type"] == "Pod" and key in times:
            start, end = times[key]
            node["startedAt"] = at(start)
            if end is not None:
                node["finishedAt"] = at(end)
    return wf


def with_containers(p: Json, start: float, end: float | None, gpus: int = 1) -> Json:
    """A pod's main container times (and Argo's ``wait`` sidecar, ignored) and GPUs."""
    state: Json = {"running": {"startedAt": at(start)}}
    if end is not None:
        state = {"terminated": {"startedAt": at(start), "finishedAt": at(end), "exitCode": 0}}
    p["status"]["containerStatuses"] = [
        {"name": "wait", "state": {"running": {"startedAt": at(start - 0.5)}}},
        {"name": "main", "state": state},
    ]
    p["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return p


GPU2 = {"cpu": "2", "nvidia.com/gpu": "2"}
STEPS = {
    "dataset-initializer": StepState("Succeeded", queue="cpu"),
    "node": StepState("Succeeded", role="trainer", queue="gpu"),
}
STEPS["dataset-initializer"].pods = [Pod("di-0-0", "Succeeded", 0)]
STEPS["node"].pods = [Pod("node-0-0", "Succeeded", 0), Pod("node-0-1", "Succeeded", 0)]
# the trainer waited from 10:01 to 10:04 for 2 GPUs; its pods ran 10:04:30 -> 10:09
NODE_TIMES = {
    "dataset-initializer.di-0-0": (0, 1),
    "node.node-0-0": (1, 9),
    "node.node-0-1": (1, 9),
}
COMPLETE = [{"type": "Complete", "status": "True", "lastTransitionTime": at(9.5)}]


def workloads(
    node_reserved: str | None = at(4), finished: str | None = at(9.5)
) -> tuple[Json, ...]:
    return (
        workload("ft-dataset-initializer-a0", reserved=at(0), finished=at(1.5), cq="ns-cpu"),
        workload(
            "ft-node-a0",
            queue="gpu",
            created=at(1),
            reserved=node_reserved,
            finished=finished if node_reserved else None,
            pending_reason="" if node_reserved else "Pending",
            usage=GPU2,
            cq="ns-gpu",
        ),
    )


def finished_pipeline() -> Observed:
    """Done: the Workflow's nodes say when pods ran; the pods themselves are gone."""
    tj = trainjob(conditions=COMPLETE, annotations={L.ATTEMPTS_ANNOTATION: "1"})
    return Observed(
        tj, (with_times(workflow(STEPS, phase="Succeeded"), NODE_TIMES),), (), workloads()
    )


def live_pods() -> Observed:
    """Running: the trainer's pods started 10:04:30 (containers), one is still running."""
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wf = with_times(workflow(STEPS), NODE_TIMES)
    pods = (
        with_containers(pod("ft", "node", "node-0-0", "Succeeded"), 4.5, 9),
        with_containers(pod("ft", "node", "node-0-1", "Running"), 4.5, None),
    )
    return Observed(tj, (wf,), pods, workloads(finished=None))


def only_annotation() -> Observed:
    """Everything gone but the TrainJob: its quota annotation as the controller left it."""
    obs = finished_pipeline()
    ann = quota.encode(quota_records(obs, NOW))
    tj = trainjob(conditions=COMPLETE, annotations={L.QUOTA_ANNOTATION: ann})
    return Observed(tj)


def still_waiting() -> Observed:
    """The trainer's pods exist, gated: their Argo nodes started (created) at 10:01."""
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wls = workloads(node_reserved=None)
    wls[1]["status"]["resourceRequests"] = [{"name": "node-0", "resources": GPU2}]
    wf = with_times(workflow(STEPS), {"node.node-0-0": (1, None), "node.node-0-1": (1, None)})
    return Observed(tj, (wf,), (), wls)


def evicted() -> Observed:
    """Kueue evicted the trainer at 10:06 (preempted) and it waits again."""
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wf = with_times(workflow(STEPS), {"node.node-0-0": (1, None), "node.node-0-1": (1, None)})
    pods = tuple(  # the pods Kueue stopped: their containers ran 10:04 -> 10:06
        with_containers(pod("ft", "node", f"node-0-{i}", "Failed"), 4, 6) for i in (0, 1)
    )
    wl = workload("ft-node-a0", queue="gpu", created=at(1), evicted=at(6))
    wl["status"]["resourceRequests"] = [{"name": "node-0", "resources": GPU2}]
    wl["status"]["conditions"].insert(
        0, {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "again"}
    )
    return Observed(tj, (wf,), pods, (workloads()[0], wl))


def released() -> Observed:
    """Suspended at 10:07: the trainer's Workload went while admitted; the annotation last
    wrote it at its admission (10:04), the Workflow's nodes say its pods ran until 10:07."""
    admitted = Observed(trainjob(), (workflow(STEPS),), (), workloads(finished=None))
    ann = quota.encode(quota_records(admitted, T + timedelta(minutes=4)))
    tj = trainjob(annotations={L.QUOTA_ANNOTATION: ann, L.ATTEMPTS_ANNOTATION: "1"})
    wf = with_times(workflow(STEPS), {"node.node-0-0": (1, 7), "node.node-0-1": (1, 7)})
    return Observed(tj, (wf,), (), workloads()[:1])


def spans(tl: Timeline, step: str) -> list[tuple[str, float, float]]:
    (row,) = (r for r in tl.rows if r.step == step)
    return [
        (str(s.kind), round((s.start - T).total_seconds() / 60, 3), round(s.seconds / 60, 3))
        for s in row.spans
    ]


CASES = [
    pytest.param(
        finished_pipeline, [],
        [("waiting", 1, 3), ("running", 4, 5), ("held", 9, 0.5)],
        (2 * 5.5 * 60, 2 * 5 * 60), ("", ""),
        id="finished-pods-gone-node-times-clipped-to-reservation",
    ),
    pytest.param(
        finished_pipeline, [kueue_event("ft-node-a0", 1.1), kueue_event("other", 1.1)],
        [("waiting", 1, 3), ("running", 4, 5), ("held", 9, 0.5)],
        (2 * 5.5 * 60, 2 * 5 * 60), ("Pending", KUEUE_MSG),
        id="finished-reason-from-kueue-event",
    ),
    pytest.param(
        live_pods, [],
        [("waiting", 1, 3), ("held", 4, 0.5), ("running", 4.5, 25.5)],
        (2 * 26 * 60, 4.5 * 60 + 25.5 * 60), ("", ""),
        id="running-container-times",
    ),
    pytest.param(
        only_annotation, [kueue_event("ft-node-a0", 2)],
        [("waiting", 1, 3), ("held", 4, 5.5)],
        (2 * 5.5 * 60, 0), ("Pending", KUEUE_MSG),
        id="only-the-annotation-left",
    ),
    pytest.param(
        still_waiting, [kueue_event("ft-node-a0", 2, msg="old")],
        [("waiting", 1, 29)],
        (0, 0), ("Pending", "couldn't assign flavors"),
        id="still-waiting-reason-from-condition",
    ),
    pytest.param(
        released, [],
        [("waiting", 1, 3), ("running", 4, 3)],
        (2 * 3 * 60, 2 * 3 * 60), ("", ""),
        id="released-hold-ends-with-its-pods",
    ),
    pytest.param(
        evicted, [],
        [("waiting", 1, 3), ("running", 4, 2), ("waiting", 6, 24)],
        (2 * 2 * 60, 2 * 2 * 60), ("Pending", "again"),
        id="evicted-waits-again",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("make", "events", "want", "gpu_s", "why"), CASES)
def test_trainer_phases(
    make: Any,
    events: list[Json],
    want: list[tuple[str, float, float]],
    gpu_s: tuple[float, float],
    why: tuple[str, str],
) -> None:
    tl = timeline(make(), NOW, events)
    assert spans(tl, "node") == want
    (node,) = (r for r in tl.rows if r.step == "node")
    assert (node.queue, node.role, node.gpus) == ("gpu", "trainer", 2)
    assert (node.gpu_seconds_held, node.gpu_seconds_used) == pytest.approx(gpu_s)
    assert (node.reason, node.message) == why


def test_rows_axis_and_totals_of_a_finished_pipeline() -> None:
    tl = timeline(finished_pipeline(), NOW)
    assert [(r.step, r.attempt, r.state) for r in tl.rows] == [
        ("dataset-initializer", 0, "Finished"),
        ("node", 0, "Finished"),
    ]
    assert (tl.start, tl.end, tl.state) == (T, T + timedelta(minutes=9.5), "Complete")
    init = tl.rows[0]
    assert spans(tl, "dataset-initializer") == [("running", 0, 1), ("held", 1, 0.5)]
    assert (init.gpus, init.gpu_seconds_held, init.running) == (0, 0, T)
    doc = to_json(tl)
    assert doc["totals"] == {
        "waitedSeconds": 180.0,
        "gpuSecondsHeld": 660.0,
        "gpuSecondsUsed": 600.0,
    }
    node = doc["steps"][1]
    assert (node["created"], node["quotaReserved"], node["admitted"], node["ended"]) == (
        at(1), at(4), at(4), at(9.5)
    )  # fmt: skip
    assert (node["waitedSeconds"], node["heldSeconds"], node["runningSeconds"]) == (180, 330, 300)
    assert [p["phase"] for p in node["phases"]] == ["waiting", "running", "held"]
    assert doc["trainerStatus"] is None
    json.dumps(doc)


def test_text_gantt_fits_100_columns_and_marks_wait_hold_run() -> None:
    ev = [kueue_event("ft-node-a0", 1.1)]
    text = format_text(timeline(finished_pipeline(), NOW, ev))
    print(text)
    lines = text.splitlines()
    assert lines[0] == "TrainJob ns/ft  state: Complete"
    assert lines[1] == "from 2026-11-01T10:00:00Z to 2026-11-01T10:09:30Z (9m30s)"
    bars = {ln.split(" |")[0].strip(): ln for ln in lines if ln.endswith("|")}
    assert set(bars) == {"dataset-initializer a0", "node a0"}
    assert all(len(b) == WIDTH for b in bars.values())
    node = bars["node a0"].split("|")[1]
    width = len(node)
    # 1 min of 9.5 blank, 3 waiting, 5 running, 0.5 held at the end
    assert node == (
        " " * int(width * 1 / 9.5)
        + "." * (int(width * 4 / 9.5) - int(width * 1 / 9.5))
        + "#" * (int(width * 9 / 9.5) - int(width * 4 / 9.5))
        + "=" * (width - int(width * 9 / 9.5))
    )
    assert bars["dataset-initializer a0"].split("|")[1].rstrip().strip("#=") == ""
    assert "0s" in lines[2] and lines[2].endswith("9m30s")
    table = [ln.split() for ln in lines if ln.startswith(("STEP", "node ", "dataset-"))]
    table = [t for t in table if "|" not in "".join(t)]
    row = ["node", "a0", "gpu", "ns-gpu", "Finished", "3m00s", "5m30s", "5m00s", "2", "660", "600"]
    assert table[2] == row
    assert lines[-1] == f"node a0 waited 3m00s in gpu (ClusterQueue ns-gpu): Pending: {KUEUE_MSG}"


def test_progress_when_the_trainer_reports_it() -> None:
    obs = live_pods()
    obs.trainjob["status"]["trainerStatus"] = {
        "progressPercentage": 40,
        "estimatedRemainingSeconds": 600,
        "lastUpdatedTime": at(20),
    }
    tl = timeline(obs, NOW)
    assert (tl.progress, tl.remaining_seconds) == (40, 600)
    assert format_text(tl).splitlines()[0].endswith("trainer progress: 40% (about 10m00s left)")
    assert to_json(tl)["trainerStatus"] == {
        "progressPercentage": 40,
        "estimatedRemainingSeconds": 600,
    }


def test_nothing_asked_yet() -> None:
    tl = timeline(Observed(trainjob()), NOW)
    assert tl.rows == ()
    assert format_text(tl).splitlines()[1] == "no step has asked Kueue for quota yet"


def test_print_timeline_json_parses_and_png_needs_matplotlib(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    out = io.StringIO()
    opts = status_cli.Timeline(True, "json")
    status_cli.print_timeline(finished_pipeline(), [], NOW, out, opts)
    assert json.loads(out.getvalue()) == to_json(timeline(finished_pipeline(), NOW))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    with pytest.raises(timeline_png.NoMatplotlib, match="pip install matplotlib"):
        timeline_png.png(timeline(finished_pipeline(), NOW))


@pytest.mark.parametrize(
    ("argv", "err"),
    [
        (["status", "ft", "-o", "json"], "--output: json is the timeline's data: add --timeline"),
        (
            ["status", "ft", "--timeline-png", "x.png"],
            "--timeline-png: needs matplotlib, which is not installed: pip install matplotlib",
        ),
    ],
    ids=["json-without-timeline", "png-without-matplotlib"],
)
def test_cli_refusals_are_one_line(
    argv: list[str], err: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a)
    )
    assert cli.main(argv) == 2
    got = capsys.readouterr()
    assert got.out == "" and got.err == f"error: (command line): {err}\n"


def test_png_draws_the_benchmark_bars(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a stand-in matplotlib: grey waits, a light bar for all the hold, dark running on it."""
    bars: list[tuple[int, float, float, float, str]] = []

    class Ax:
        def barh(self, y: int, w: float, *, left: float, height: float, color: str) -> None:
            bars.append((y, left, w, height, color))

        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    class Fig:
        def tight_layout(self) -> None: ...

        def savefig(self, buf: io.BytesIO, **kw: Any) -> None:
            buf.write(b"\x89PNG")

    mpl = type(sys)("matplotlib")
    mpl.use = lambda backend: None  # type: ignore[attr-defined]
    plt = type(sys)("matplotlib.pyplot")
    plt.subplots = lambda **kw: (Fig(), Ax())  # type: ignore[attr-defined]
    plt.close = lambda fig: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", plt)
    assert timeline_png.png(timeline(finished_pipeline(), NOW)) == b"\x89PNG"
    node = [(left, w, color) for y, left, w, _, color in bars if y == 1]
    assert node == [
        (60, 180, timeline_png.COLORS[W]),
        (240, 300, timeline_png.COLORS[H]),  # the hold while running ...
        (540, 30, timeline_png.COLORS[H]),  # ... and after
        (240, 300, timeline_png.COLORS[R]),
    ]


def test_json_numbers_are_floats_even_when_nothing_ran() -> None:
    """Durations and GPU-seconds are JSON numbers of one type, 0.0 when there were none."""
    doc = to_json(timeline(still_waiting(), NOW))
    node = next(s for s in doc["steps"] if s["step"] == "node")
    keys = ("waitedSeconds", "heldSeconds", "runningSeconds", "gpuSecondsHeld", "gpuSecondsUsed")
    assert [type(node[k]) for k in keys] == [float] * 5
    assert [type(v) for v in doc["totals"].values()] == [float] * 3
