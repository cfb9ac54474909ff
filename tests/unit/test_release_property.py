"""No quota outlives a stopped pipeline (property; ``reconcile.releases``).

A TrainJob suspended, or deleted in foreground, whose Workflow Argo has stopped or ended: whatever
its step pods (any phase, being deleted or not) and its groups' Workloads (admitted, evicted,
pending) look like, one reconcile releases every step group whose Workload Kueue has not
finished: the Workload is deleted, or one pod is marked ``kueue.x-k8s.io/retriable-in-group:
"false"`` (Kueue then finishes the group), unless every pod of the group succeeded (Kueue
finishes that group itself). Kueue holds a finalizer on each pod of an unfinished group, so a
group left unreleased there keeps its quota and, when the pods are being deleted, keeps the
pods, their Workflow and (in foreground) the TrainJob for good: ``make chaos`` found that for a
foreground delete (tests/unit/test_reconcile.py has the case).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.cluster_objects import T0, Pod, StepState, group, pod, trainjob, workflow, workload
from tests.unit.test_reconcile import NOW
from trainweave import labels as L
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.read.observed import Observed

Json = dict[str, Any]
STEPS = {"init": ("initializer", "cpu"), "trainer": ("trainer", "gpu")}
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed")


@st.composite
def stopped_pipeline(draw: st.DrawFn) -> tuple[Observed, dict[str, list[Json]]]:
    """(what the controller observes, the pods of each group whose Workload is unfinished)."""
    mode = draw(st.sampled_from(["suspend", "foreground"]))
    steps: dict[str, StepState] = {}
    pods: list[Json] = []
    workloads: list[Json] = []
    held: dict[str, list[Json]] = {}
    for name, (role, queue) in STEPS.items():
        phases = draw(st.lists(st.sampled_from(POD_PHASES), max_size=3))
        slots = [f"{name}-0-{i}" for i in range(len(phases))]
        step_phase = draw(st.sampled_from(("Running", "Succeeded", "Failed")))
        steps[name] = StepState(
            step_phase,
            [Pod(s, p) for s, p in zip(slots, phases, strict=True)],
            role=role,
            queue=queue,
        )
        mine = [
            pod("ft", name, s, p, deleting=draw(st.booleans()))
            for s, p in zip(slots, phases, strict=True)
        ]
        pods += mine
        state = draw(st.sampled_from(("admitted", "evicted", "pending", "finished", "none")))
        if state == "none":
            continue  # Kueue has not made it yet, or it is gone
        wl = workload(
            group("ft", name, 0),
            queue=queue,
            reserved=T0 if state == "admitted" else None,
            evicted="2026-11-01T10:03:00Z" if state == "evicted" else None,
            pending_reason="Pending" if state == "pending" else "",
            finished="2026-11-01T10:04:00Z" if state == "finished" else None,
        )
        workloads.append(wl)
        if state != "finished":
            held[wl["metadata"]["name"]] = mine
    wf_phase = draw(st.sampled_from(("Running", "Failed", "Succeeded", "Error")))
    why = "suspend" if mode == "suspend" else "deleted"
    stopped = wf_phase == "Running" or draw(st.booleans())
    wf = workflow(
        steps,
        phase=wf_phase,
        shutdown="Stop" if stopped else "",
        stopped_for=why if stopped else "",
    )
    tj = trainjob(suspend=mode == "suspend", annotations={"trainweave.io/attempts": "1"})
    if mode == "foreground":
        tj["metadata"]["deletionTimestamp"] = "2026-11-01T11:00:00Z"
        tj["metadata"]["finalizers"] = ["foregroundDeletion"]
    return Observed(tj, (wf,), tuple(pods), tuple(workloads)), held


@settings(max_examples=400, deadline=None)
@given(stopped_pipeline())
def test_a_stopped_pipeline_releases_every_group_kueue_holds(
    case: tuple[Observed, dict[str, list[Json]]],
) -> None:
    obs, held = case
    plan = reconcile.actions(obs, NOW)
    deleted = {r.path.rsplit("/", 1)[-1] for r in plan.requests if r.method == "DELETE"}
    marked = {
        r.path.rsplit("/", 1)[-1]
        for r in plan.requests
        if r.method == "PATCH"
        and (r.body or {})
        .get("metadata", {})
        .get("annotations", {})
        .get(L.KUEUE_RETRIABLE_IN_GROUP)
        == "false"
    }
    for name, pods in held.items():
        names = {p["metadata"]["name"] for p in pods}
        succeeded = bool(pods) and all(p["status"]["phase"] == "Succeeded" for p in pods)
        assert name in deleted or names & marked or succeeded, (name, plan.requests)


@st.composite
def pod_cache_behind_argo(draw: st.DrawFn) -> Observed:
    """A Workflow ended or stopped whose trainer step Argo saw succeed (every pod node
    ``Succeeded``) while the controller's pod cache, fed by another watch, still shows some of
    those pods before their end."""
    n = draw(st.integers(min_value=1, max_value=3))
    slots = [f"trainer-0-{i}" for i in range(n)]
    cached = draw(
        st.lists(st.sampled_from(POD_PHASES), min_size=n, max_size=n).filter(
            lambda phases: any(p in ("Pending", "Running") for p in phases)
        )
    )
    init = StepState("Succeeded", [Pod("init-0-0", "Succeeded")], role="initializer", queue="cpu")
    trainer = StepState(
        "Succeeded", [Pod(s, "Succeeded") for s in slots], role="trainer", queue="gpu"
    )
    stopped = draw(st.booleans())
    wf = workflow(
        {"init": init, "trainer": trainer},
        phase=draw(st.sampled_from(("Succeeded", "Running"))) if stopped else "Succeeded",
        shutdown="Stop" if stopped else "",
        stopped_for="suspend" if stopped else "",
    )
    pods = [pod("ft", "trainer", s, p) for s, p in zip(slots, cached, strict=True)]
    wl = workload(group("ft", "trainer", 0), queue="gpu", reserved=T0)
    tj = trainjob(suspend=stopped, annotations={"trainweave.io/attempts": "1"})
    return Observed(tj, (wf,), tuple(pods), (wl,))


@settings(max_examples=200, deadline=None)
@given(pod_cache_behind_argo())
def test_a_pod_cache_behind_argo_never_releases_a_step_that_succeeded(obs: Observed) -> None:
    """Kueue finishes a group whose pods all succeeded; deleting its Workload because our pod
    cache lags Argo's would race Kueue's own write (a unit run on the fake API server caught
    Kueue's ``Finished`` patch answered 404) and lose the step's record."""
    plan = reconcile.actions(obs, NOW)
    touched = [
        r
        for r in plan.requests
        if (r.method == "DELETE" and "/workloads/" in r.path)
        or (r.method == "PATCH" and "/pods/" in r.path)
    ]
    assert touched == []
