"""Kept queue position: the gated Workloads in the render (adapters.kueue.kept), the reconcile's
gate lifts and expiries (integrations.views.decide.kept), the ClusterQueue opt-out at start."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.builders import make_runtime, make_trainjob
from tests.unit.cluster_objects import (
    T0,
    StepState,
    cluster_queue,
    cluster_runtime,
    local_queue,
    pod,
    trainjob,
    workflow,
    workload,
)
from tests.unit.fakeapi import Transport
from tests.unit.test_reconcile import INIT_OK, fake_renderer
from trainweave import labels as L
from trainweave.adapters import render
from trainweave.adapters.kueue import kept as kept_render
from trainweave.adapters.kueue.workloads import workload as kueue_workload
from trainweave.adapters.trainjob import trainer
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.cluster.executor import Executor
from trainweave.integrations.views.decide import kept, reconcile
from trainweave.integrations.views.read.observed import Observed, quota_records

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
OWNER = render.Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "u1")


def _pipeline(**runtime: Any) -> tuple[Any, Any]:
    rt = make_runtime(**runtime).with_initializers()
    return parse_trainjob(make_trainjob()), parse_runtime(rt.build())


def _workloads(options: render.Options) -> list[Json]:
    tj, rt = _pipeline()
    return [o for o in render.render(tj, rt, options) if o["kind"] == "Workload"]


def test_default_render_has_no_kept_workload() -> None:
    assert _workloads(render.Options()) == []


def test_kept_workload_is_kueues_workload_gated_without_controller_or_finalizer() -> None:
    (wl,) = _workloads(render.Options(kept_position=True, owner=OWNER, kept_cap_seconds=60))
    tj, rt = _pipeline()
    pipeline = trainer.to_pipeline(tj, rt)
    step = next(s for s in pipeline.steps if s.name == "node")
    want = kueue_workload(pipeline, step).model_dump(by_alias=True, exclude_none=True)
    assert wl["metadata"]["name"] == want["metadata"]["name"] == "tj-node-a0"
    assert wl["spec"] == want["spec"]  # the PodSets Kueue derives from the pods (role hashes)
    assert wl["metadata"]["annotations"] == {
        L.KUEUE_IS_GROUP_WORKLOAD: "true",
        L.KUEUE_ADMISSION_GATED_BY: L.KEPT_GATE,
        L.KEPT_AFTER_ANNOTATION: "dataset-initializer,model-initializer",
        L.KEPT_FOR_ANNOTATION: "60",
    }
    assert "finalizers" not in wl["metadata"]
    (ref,) = wl["metadata"]["ownerReferences"]
    assert ref["uid"] == "u1" and "controller" not in ref
    assert kept_render.is_kept(wl)


def test_a_resumed_segment_keeps_no_step_whose_predecessors_are_all_skipped() -> None:
    skip = frozenset({"dataset-initializer", "model-initializer"})
    assert _workloads(render.Options(kept_position=True, skip_steps=skip)) == []
    one = _workloads(render.Options(kept_position=True, skip_steps=skip - {"model-initializer"}))
    assert [w["metadata"]["annotations"][L.KEPT_AFTER_ANNOTATION] for w in one] == [
        "model-initializer"
    ]


def test_a_step_with_a_priority_class_is_not_kept() -> None:
    tj, rt = _pipeline()
    pipeline = trainer.to_pipeline(tj, rt)
    steps = [
        s if s.name != "node" else type(s)(**{**s.__dict__, "priority_class": "high"})
        for s in pipeline.steps
    ]
    pipeline = type(pipeline)(**{**pipeline.__dict__, "steps": tuple(steps)})
    assert kept_render.kept_steps(pipeline) == []


# --- the reconcile ----------------------------------------------------------------------------

TRAINER_WAITING = StepState("", [], role="trainer", queue="gpu")
GATE = {L.KUEUE_ADMISSION_GATED_BY: L.KEPT_GATE, L.KEPT_AFTER_ANNOTATION: "init"}


def _kept_wl(annotations: dict[str, str] | None = None, created: str = T0) -> Json:
    wl = workload("ft-trainer-a0", queue="gpu", created=created)
    wl["metadata"]["uid"] = "wl-uid"
    wl["metadata"]["annotations"] = {**GATE, L.KEPT_FOR_ANNOTATION: "600", **(annotations or {})}
    return wl


def _observed(init: StepState, wl: Json, *pods: Json, **wf: Any) -> Observed:
    steps = {"init": init, "trainer": TRAINER_WAITING}
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    return Observed(tj, (workflow(steps, **wf),), pods, (wl,))


RUNNING_INIT = StepState("Running", [])
LIFT = {"metadata": {"annotations": {L.KUEUE_ADMISSION_GATED_BY: None}}}


@pytest.mark.parametrize(
    ("init", "annotations", "want"),
    [
        (RUNNING_INIT, {}, []),
        (INIT_OK, {}, [("PATCH", LIFT)]),
        (
            INIT_OK,
            {L.KUEUE_ADMISSION_GATED_BY: f"example.com/other,{L.KEPT_GATE}"},
            [
                (
                    "PATCH",
                    {
                        "metadata": {
                            "annotations": {L.KUEUE_ADMISSION_GATED_BY: "example.com/other"}
                        }
                    },
                )
            ],
        ),
        (INIT_OK, {L.KUEUE_ADMISSION_GATED_BY: "example.com/other"}, []),  # not ours
        (RUNNING_INIT, {L.KEPT_FOR_ANNOTATION: "300"}, [("DELETE", None)]),  # 5 min: expired
        (INIT_OK, {L.KEPT_FOR_ANNOTATION: "300"}, [("DELETE", None)]),  # never lift an old one
    ],
    ids=["waiting", "lift", "other-gate-kept", "foreign-gate", "expired", "expired-not-lifted"],
)
def test_kept_actions(init: StepState, annotations: dict[str, str], want: list[Any]) -> None:
    todo = kept.actions(_observed(init, _kept_wl(annotations)), NOW)
    got = [(r.method, r.body if r.method == "PATCH" else None) for r in todo.requests]
    assert got == want
    for req in todo.requests:
        assert req.path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/ft-trainer-a0"
        if req.method == "DELETE":  # only this incarnation (UID precondition)
            assert req.body and req.body["preconditions"] == {"uid": "wl-uid"}


def test_waiting_kept_workload_requeues_at_its_cap() -> None:
    plan = reconcile.actions(_observed(RUNNING_INIT, _kept_wl()), NOW)
    assert plan.requeue_after == pytest.approx(600 - 300 + 0.05)
    assert plan.requests == []


def test_lift_is_one_patch_and_one_event_then_nothing() -> None:
    obs = _observed(INIT_OK, _kept_wl())
    plan = reconcile.actions(obs, NOW)
    lifts = [r for r in plan.requests if r.body == LIFT]
    assert len(lifts) == 1
    events = [r.body for r in plan.after_start if r.body and r.body.get("kind") == "Event"]
    assert any(e["reason"] == L.EventReason.STEP_UNGATED for e in events)
    lifted = _kept_wl({L.KUEUE_ADMISSION_GATED_BY: ""})
    again = reconcile.actions(_observed(INIT_OK, lifted), NOW)
    assert not [r for r in again.requests if r.path.endswith("ft-trainer-a0")]


def test_a_group_with_pods_is_kueues() -> None:
    trainer_pod = pod("ft", "trainer", "node-0-0", "Pending", gated=True)
    todo = kept.actions(_observed(INIT_OK, _kept_wl(), trainer_pod), NOW)
    assert todo.requests == []


@pytest.mark.parametrize(
    "wf",
    [
        {"phase": "Failed"},
        {"shutdown": "Stop", "stopped_for": "suspend"},
        {"shutdown": "Stop", "stopped_for": "job-failed/init"},
    ],
    ids=["failed", "suspended", "job-failed"],
)
def test_a_pipeline_that_stops_deletes_its_gated_workloads(wf: dict[str, Any]) -> None:
    obs = _observed(StepState("Failed", []), _kept_wl(), **wf)
    assert kept.actions(obs, NOW).requests == []  # not lifted...
    plan = reconcile.actions(obs, NOW)  # ...but released with the Workflow's other Workloads
    deletes = [r for r in plan.requests if r.method == "DELETE"]
    assert [r.path.rsplit("/", 1)[-1] for r in deletes] == ["ft-trainer-a0"]


# --- at start: the ClusterQueue opt-out ---------------------------------------------------------

CREATE_WL = "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads"


def _start(*objects: Json) -> Transport:
    fake = Transport.of(trainjob(), cluster_runtime(), *objects)
    tj = trainjob()
    Executor(fake, fake_renderer, lambda: NOW, kept_cap_seconds=7200, judge_first=False).start(
        tj, reconcile.Start(0)
    )
    return fake


def _cq(annotations: dict[str, str]) -> Json:
    cq = cluster_queue("gpu-cq", {"gpu": {"nvidia.com/gpu": "8"}})
    cq["metadata"]["annotations"] = annotations
    return cq


LQ_OBJ = local_queue("gpu-queue", "gpu-cq")


@pytest.mark.parametrize(
    ("objects", "created"),
    [
        ((LQ_OBJ, _cq({})), True),
        ((LQ_OBJ, _cq({L.KEPT_POSITION_ANNOTATION: "true"})), True),
        ((LQ_OBJ, _cq({L.KEPT_POSITION_ANNOTATION: "false"})), False),
        ((), False),  # no such LocalQueue
    ],
    ids=["on", "annotated-true", "opted-out", "no-local-queue"],
)
def test_start_creates_kept_workloads_unless_the_cluster_queue_opts_out(
    objects: tuple[Json, ...], created: bool
) -> None:
    fake = _start(*objects)
    posts = [r for r in fake.sent if r.method == "POST" and r.path == CREATE_WL]
    assert [p.body["metadata"]["name"] for p in posts if p.body] == (
        ["ft-node-a0"] if created else []
    )
    stored = [w["metadata"]["name"] for w in fake.server.objects("Workload", "ns")]
    assert stored == (["ft-node-a0"] if created else [])
    kinds = [r.body["kind"] for r in fake.sent if r.method == "POST" and r.body]
    assert kinds[-1] == "Workflow"  # the kept Workload before the Workflow


def test_an_existing_kept_workload_is_not_an_error() -> None:
    fake = _start(LQ_OBJ, _cq({}), workload("ft-node-a0", queue="gpu-queue"))
    assert fake.sent[-1].body and fake.sent[-1].body["kind"] == "Workflow"
    assert fake.server.find("Workflow", "ns", "ft") is not None


def test_expiry_is_measured_from_creation() -> None:
    created = (NOW - timedelta(seconds=599)).strftime("%Y-%m-%dT%H:%M:%SZ")
    todo = kept.actions(_observed(RUNNING_INIT, _kept_wl(created=created)), NOW)
    assert todo.requests == [] and todo.requeue_after == pytest.approx(1.05)


def test_a_suspended_pipeline_keeps_no_place() -> None:
    obs = _observed(RUNNING_INIT, _kept_wl(), suspend=True)
    tj = trainjob(suspend=True, annotations={L.ATTEMPTS_ANNOTATION: "1"})
    obs = Observed(tj, obs.workflows, obs.pods, obs.workloads)
    assert [r.method for r in kept.actions(obs, NOW).requests] == ["DELETE"]
    fake = Transport.of(trainjob(suspend=True), cluster_runtime(), LQ_OBJ, _cq({}))
    Executor(fake, fake_renderer, lambda: NOW, kept_cap_seconds=7200, judge_first=False).start(
        trainjob(suspend=True), reconcile.Start(0, suspend=True)
    )
    assert not [r for r in fake.sent if r.path == CREATE_WL]


def test_a_held_workload_has_no_quota_record_until_ungated() -> None:
    assert quota_records(_observed(RUNNING_INIT, _kept_wl()), NOW) == []
    ungated = _kept_wl({L.KUEUE_ADMISSION_GATED_BY: ""})
    (record,) = quota_records(_observed(INIT_OK, ungated), NOW)
    assert record.step == "trainer"


def test_render_kept_position_prints_the_gated_workloads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`trainweave render --kept-position`: the Workloads the controller creates at the start
    (applied without the controller, Kueue drops the gate when the pods come; the exit handler
    deletes them with the other step Workloads of a failed run)."""
    import yaml

    from trainweave import cli

    example = f"{Path(__file__).resolve().parents[2]}/examples/llm-finetune/"
    argv = ["render", f"{example}trainjob.yaml", "--runtime", f"{example}runtime.yaml"]
    assert cli.main([*argv, "--kept-position"]) == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    kept_docs = [d for d in docs if d["kind"] == "Workload"]
    assert [d["metadata"]["name"] for d in kept_docs] == [
        "llama-support-ft-node-a0",
        "llama-support-ft-model-exporter-a0",
    ]
    assert all(kept_render.is_kept(d) for d in kept_docs)
    assert cli.main(argv) == 0
    assert "kind: Workload\n" not in capsys.readouterr().out
