"""benchmarks/admission_record.py and admission_trace.py: what the admission benchmark reads from
its watches (states first seen, steps, step starts) and the sustained trace it submits."""

from __future__ import annotations

import dataclasses
import importlib
import json
from types import SimpleNamespace
from typing import Any

import pytest

from benchmarks.admission_trace import GPU, GPU_QUOTA, offered_gpus, runtime, trace

# benchmarks/admission.py puts benchmarks/ on sys.path (its modules import their siblings by
# their own names); admission_record is reached the same way
importlib.import_module("benchmarks.admission")
record: Any = importlib.import_module("admission_record")

DEPS = {
    "dataset-initializer": [],
    "model-initializer": [],
    "node": ["dataset-initializer", "model-initializer"],
    "evaluator": ["node"],
    "model-exporter": ["evaluator"],
}


def pod(uid: str, tj: str, step: str, **extra: Any) -> dict[str, Any]:
    labels = {
        "trainweave.io/trainjob": tj,
        "trainweave.io/step": step,
        "kueue.x-k8s.io/pod-group-name": f"{tj}-{step}-a0",
    }
    return {"metadata": {"uid": uid, "labels": labels}, "spec": {}, "status": {}, **extra}


def workload(uid: str, name: str, gpus: int, reserved: str | None = None) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True", "lastTransitionTime": reserved}]
    container = {"resources": {"requests": {GPU: str(gpus)}}}
    return {
        "metadata": {"uid": uid, "name": name},
        "spec": {"podSets": [{"count": 1, "template": {"spec": {"containers": [container]}}}]},
        "status": {"conditions": conditions if reserved else []},
    }


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        (pod("p", "a", "node", spec={"schedulingGates": [{"name": "g"}]}), ["created"]),
        (
            pod(
                "p",
                "a",
                "node",
                spec={"nodeName": "n1"},
                status={
                    "containerStatuses": [
                        {"state": {"running": {"startedAt": "t"}}},
                        {"state": {"waiting": {"reason": "ContainerCreating"}}},
                    ]
                },
            ),
            ["created", "ungated", "scheduled"],
        ),
        (
            pod(
                "p",
                "a",
                "node",
                status={
                    "phase": "Succeeded",
                    "containerStatuses": [{"state": {"terminated": {"exitCode": 0}}}],
                },
            ),
            ["created", "ungated", "running", "succeeded"],
        ),
    ],
    ids=["gated", "one-container-waiting", "succeeded"],
)
def test_pod_states_seen(obj: dict[str, Any], want: list[str]) -> None:
    assert record.seen_states("pods", obj) == [("p", s) for s in want]


def test_workload_and_workflow_states_seen() -> None:
    wl = workload("w", "a-node-a0", 16, "2026-11-26T01:00:00Z")
    wl["status"]["conditions"].append({"type": "Admitted", "status": "False"})
    assert record.seen_states("workloads", wl) == [("w", "created"), ("w", "quota")]
    finished = {"type": "Finished", "status": "True", "lastTransitionTime": "2026-11-26T01:00:09Z"}
    wl["status"]["conditions"].append(finished)
    assert record.seen_states("workloads", wl)[-1] == ("w", "finished")
    wf = {
        "metadata": {"uid": "f", "labels": {"trainweave.io/trainjob": "a"}},
        "status": {
            "nodes": {
                "x": {"displayName": "node", "startedAt": "t", "phase": "Running"},
                "y": {"displayName": "evaluator", "phase": "Pending"},
                "z": {"displayName": "model-initializer", "startedAt": "t", "phase": "Succeeded"},
            }
        },
    }
    assert record.seen_states("workflows", wf) == [
        ("f", "created"),
        ("a/node", "started"),
        ("a/model-initializer", "started"),
        ("a/model-initializer", "succeeded"),
    ]


def recording() -> Any:
    """TrainJob a: initializers succeeded (seen at 100.5 and 102), trainer pods 10 and 11 and
    its Workload; its evaluator never started. t0 = 100."""
    pods = [
        pod("d", "a", "dataset-initializer"),
        pod("m", "a", "model-initializer"),
        pod("n0", "a", "node"),
        pod("n1", "a", "node"),
    ]
    first = {
        ("d", "succeeded"): 100.5,
        ("m", "succeeded"): 102.0,
        ("a/node", "started"): 103.0,
        ("n0", "created"): 102.9,
        ("n1", "created"): 103.1,
        ("w", "quota"): 103.5,
        ("w", "admitted"): 103.6,
        ("n0", "ungated"): 103.7,
        ("n1", "ungated"): 103.8,
        ("n0", "running"): 104.0,
    }
    return SimpleNamespace(
        pods={p["metadata"]["uid"]: p for p in pods},
        workloads={"w": workload("w", "a-node-a0", 16, "1970-01-01T00:01:44Z")},
        first=first,
        deleted={},
    )


def test_a_step_start_is_read_from_the_first_seen_times() -> None:
    """n1 never seen running: no running, no total."""
    starts = record.Steps(recording(), DEPS, 100.0).starts()
    assert [(s.trainjob, s.step) for s in starts] == [("a", "node")]
    got = starts[0]
    assert (got.done, got.started, got.created, got.admitted, got.ungated, got.running) == (
        pytest.approx(2.0),
        pytest.approx(3.0),
        pytest.approx(3.1),
        pytest.approx(3.6),
        pytest.approx(3.8),
        None,
    )


def test_a_gpu_step_is_ready_when_its_predecessors_are_done_and_admitted_at_quota_reserved() -> (
    None
):
    got = record.Steps(recording(), DEPS, 100.0).gpu_steps(False, {"a": 0.5})
    assert [(s.trainjob, s.created, s.ready, s.admitted, s.workload) for s in got] == [
        ("a", 0.5, pytest.approx(2.0), pytest.approx(4.0), "a-node-a0")
    ]


def test_a_quota_hold_runs_from_quota_reserved_to_finished() -> None:
    """Both trainer pods running by 104.5, Succeeded by 109.5, Finished first seen at 110."""
    rec = recording()
    rec.first.update({("n1", "running"): 104.5, ("n0", "succeeded"): 109.0})
    rec.first[("n1", "succeeded")] = 109.5
    rec.first[("w", "finished")] = 110.0
    got = record.Steps(rec, DEPS, 100.0).quota_holds()
    assert [(h.trainjob, h.gpus) for h in got] == [("a", 16.0)]
    assert (got[0].reserved, got[0].created, got[0].running) == (
        pytest.approx(3.5),
        pytest.approx(3.1),
        pytest.approx(4.5),
    )
    assert (got[0].succeeded, got[0].released) == (
        pytest.approx(9.5),
        pytest.approx(10.0),
    )
    del rec.first[("w", "finished")]
    rec.deleted["w"] = 111.0
    assert record.Steps(rec, DEPS, 100.0).quota_holds()[0].released == pytest.approx(11.0)


def test_upstream_gpu_step_is_ready_at_its_workload_creation() -> None:
    rec = recording()
    rec.workloads["w"]["metadata"]["ownerReferences"] = [{"kind": "TrainJob", "name": "a"}]
    rec.first[("w", "created")] = 100.2
    got = record.Steps(rec, {}, 100.0).gpu_steps(True, {"a": 0.1})
    assert [(s.ready, s.admitted) for s in got] == [(pytest.approx(0.2), pytest.approx(4.0))]


def test_the_sustained_trace_offers_at_least_90_percent_of_the_gpu_quota() -> None:
    assert offered_gpus("sustained") >= 0.9 * GPU_QUOTA
    assert offered_gpus("poisson") == 0.0
    jobs = trace("sustained", 200, seed=1)
    gaps = jobs[-1].arrival / (len(jobs) - 1)
    gpu_s = sum(16 * j.seconds["node"] + 8 * j.seconds["evaluator"] for j in jobs) / len(jobs)
    assert gpu_s / gaps >= 0.8 * GPU_QUOTA  # the drawn trace, not only its means


@pytest.mark.parametrize("upstream", [False, True], ids=["trainweave", "upstream"])
def test_the_evaluator_is_a_gpu_step_after_the_trainer(upstream: bool) -> None:
    job = trace("sustained", 1, seed=1)[0]
    rjobs = runtime("ns", job, upstream)["spec"]["template"]["spec"]["replicatedJobs"]
    by_name = {r["name"]: r for r in rjobs}
    assert [r["name"] for r in rjobs] == [
        "dataset-initializer",
        "model-initializer",
        "node",
        "evaluator",
        "model-exporter",
    ]
    evaluator = by_name["evaluator"]
    labels = evaluator["template"]["metadata"]["labels"]
    assert labels == ({} if upstream else {"kueue.x-k8s.io/queue-name": "gpu"})
    assert evaluator["dependsOn"] == [{"name": "node", "status": "Complete"}]
    assert by_name["model-exporter"]["dependsOn"] == [{"name": "evaluator", "status": "Complete"}]
    (container,) = evaluator["template"]["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["requests"][GPU] == container["resources"]["limits"][GPU] == "8"
    assert "evaluator" not in trace("poisson", 1, seed=1)[0].seconds


def test_a_dumped_run_reads_back_with_its_figures_worked_out_again() -> None:
    """``--dump`` writes a Run as JSON; ``--from-dump`` reads it back to the same records and
    works its figures out again from them (not the dumped ones), keeping the API writes."""
    bench: Any = importlib.import_module("benchmarks.admission")
    metrics: Any = importlib.import_module("admission_metrics")
    run = bench.Run(
        "trainweave-kept",
        [metrics.TrainJobTimes("a", 0.0, 30.0, "Complete")],
        [metrics.Hold("a", "wa", 16.0, 0.0, 5.0, 25.0)],
        [metrics.Span("a", 10.0, 25.0, 16.0)],
        [metrics.StepStart("a", "node", 1.0, 2.0, 2.0, 5.0, 5.5, 10.0)],
        [metrics.GpuStep("a", 0.0, 0, 1.0, 5.0, "wa")],
        {"kueue": 1.0},
        {"pods POST": 3.0},
        [metrics.QuotaHold("wa", 16.0, 5.0, 2.0, 10.0, 25.0, 25.0)],
        {"inversions": 99.0, "api_writes": 7.0},
    )
    line = json.loads(json.dumps({"trace": "sustained", **dataclasses.asdict(run)}))
    name, back = bench.from_dump(line)
    assert name == "sustained"
    assert (back.jobs, back.holds, back.starts, back.quota_holds) == (
        run.jobs,
        run.holds,
        run.starts,
        run.quota_holds,
    )
    assert back.figures["inversions"] == 0.0
    assert back.figures["api_writes"] == 7.0
    assert back.figures["held_idle_gpu_s"] == 16 * 5
