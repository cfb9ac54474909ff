"""Reconcile plans and their execution, counted at the one ``send`` edge."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.builders import make_runtime, make_trainjob
from tests.unit.cluster_objects import (
    T0,
    Pod,
    StepState,
    cluster_runtime,
    pod,
    snapshot_map,
    trainjob,
    workflow,
    workload,
)
from tests.unit.fakeapi import Transport
from trainweave.adapters import render
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.cluster.executor import Executor, run_once
from trainweave.integrations.views.decide import leftovers, reconcile
from trainweave.integrations.views.read.observed import Observed
from trainweave.integrations.views.requests import api

NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
Json = dict[str, Any]
INIT_OK = StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)])
TRAINER_RUN = StepState("Running", [Pod("node-0-0", "Running")], role="trainer", queue="gpu")


def fake_renderer(trainjob: Json, runtime: Json, options: render.Options) -> list[Json]:
    """The real render path on a fixed pipeline (a torch trainer after two initializers,
    maxRestarts 2), whatever the runtime document says."""
    rt = make_runtime(name="rt", kind="ClusterTrainingRuntime").with_initializers()
    rt.extra_spec = {"failurePolicy": {"maxRestarts": 2}}
    tj = make_trainjob(name=trainjob["metadata"]["name"], kind="ClusterTrainingRuntime")
    tj["metadata"]["namespace"] = trainjob["metadata"]["namespace"]
    return render.render(parse_trainjob(tj), parse_runtime(rt.build()), options)


def steady_state() -> Observed:
    """A running pipeline whose status and quota annotation are already written."""
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    pods = (
        pod("ft", "init", "init-0-0", "Succeeded"),
        pod("ft", "trainer", "node-0-0", "Running", ready=True),
    )
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:02:00Z"),
    )
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    first = Observed(tj, (wf,), pods, wls)
    plan = reconcile.actions(first, NOW)
    for req in plan.after_start:  # apply the writes the first reconcile makes
        body = req.body or {}
        if req.path.endswith("/status"):
            tj["status"] = body["status"]
        elif req.method == "PATCH":
            tj["metadata"]["annotations"].update(body["metadata"]["annotations"])
    return Observed(tj, (wf,), pods, wls)


def run(obs: Observed, fake: Transport) -> reconcile.Actions:
    """One reconcile carried out (``executor.run_once``: a refused start observed, then
    ``rollup`` writes its ``Failed``). The creates alone: the dry runs that judge a start
    first are tests/unit/test_judged_first.py's."""
    return run_once(Executor(fake, fake_renderer, lambda: NOW, judge_first=False), obs, NOW)


def with_trainjob(obs: Observed, *objs: Json) -> Transport:
    """The fake API server holding the observed TrainJob and ``objs``."""
    return Transport.of(obs.trainjob, *objs)


def failed_condition(fake: Transport) -> Json:
    """The TrainJob's Failed condition as the status write sent it, checked to be stored."""
    status = next(r.body for r in fake.write_requests if r.path.endswith("/status"))
    assert status is not None
    stored = fake.server.find("TrainJob", "ns", "ft")
    assert stored is not None and stored["status"]["conditions"] == status["status"]["conditions"]
    cond: Json = status["status"]["conditions"][0]
    return cond


def test_no_op_reconcile_writes_nothing() -> None:
    obs = steady_state()
    fake = with_trainjob(obs)
    run(obs, fake)
    assert fake.sent == []
    # and a later reconcile (time moved on, nothing changed state) still writes nothing
    plan = reconcile.actions(obs, datetime(2026, 11, 1, 12, 0, tzinfo=UTC))
    assert plan.requests == [] and plan.after_start == [] and plan.start is None


def test_first_reconcile_writes_status_quota_and_events() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    wls = (workload("ft-trainer-a0", queue="gpu", pending_reason="WaitingForQuota"),)
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}), (wf,), (), wls)
    fake = with_trainjob(obs)
    run(obs, fake)
    kinds = [(r.method, r.path.rsplit("/", 1)[-1]) for r in fake.write_requests]
    assert kinds == [("PATCH", "ft"), ("POST", "events"), ("PATCH", "status")]
    event = fake.write_requests[1].body or {}
    assert [e["reason"] for e in fake.server.objects("Event", "ns")] == ["StepWaitingForQuota"]
    assert event["reason"] == "StepWaitingForQuota"
    assert event["type"] == "Normal"
    assert "queue gpu: WaitingForQuota" in event["message"]


BEYOND = (
    "couldn't assign flavors to pod set 3e9793b1: insufficient quota for nvidia.com/gpu in flavor"
    " gpu, previously considered podsets requests (0) + current podset request (20k) > maximum"
    " capacity (16)"
)


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        pytest.param("Pending", BEYOND, id="v0.19-beyond-capacity"),
        pytest.param("Inadmissible", "LocalQueue nope doesn't exist", id="v0.19-no-localqueue"),
        pytest.param("ExceedsMaxQuota", "", id="ExceedsMaxQuota"),
        pytest.param("NoMatchingFlavor", "", id="NoMatchingFlavor"),
        pytest.param("Misconfigured", "", id="Misconfigured"),
    ],
)
def test_a_step_no_wait_will_admit_is_a_warning_event_not_a_failure(
    reason: str, message: str
) -> None:
    """Kueue keeps such a Workload pending (an admin may raise the quota or create the queue):
    trainweave does too, and warns. Kueue v0.19.2's own shapes first (seen on the engines)."""
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    wl = workload("ft-trainer-a0", queue="gpu", pending_reason=reason)
    for c in wl["status"]["conditions"]:
        if c["type"] == "QuotaReserved" and message:
            c["message"] = message
    wls = (wl,)
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}), (wf,), (), wls)
    fake = with_trainjob(obs)
    run(obs, fake)
    events = [r.body or {} for r in fake.write_requests if r.path.endswith("/events")]
    assert [(e["type"], e["reason"]) for e in events] == [("Warning", "StepWaitingForQuota")]
    assert f"queue gpu: {reason}" in events[0]["message"]
    status = [r.body or {} for r in fake.write_requests if r.path.endswith("/status")]
    assert all(c["type"] != "Failed" for b in status for c in b["status"].get("conditions", []))


def test_start_creates_children_owned_by_trainjob() -> None:
    fake = with_trainjob(Observed(trainjob()), cluster_runtime())
    run(Observed(trainjob()), fake)
    writes = [(r.method, r.path) for r in fake.write_requests]
    # attempt 0 needs no trainweave.io/attempts write: no Workflow yet is what says so
    assert not [w for w in writes if w[0] == "PATCH" and w[1].endswith("/trainjobs/ft")]
    assert ("POST", "/api/v1/namespaces/ns/configmaps") in writes
    created_wf = next(r.body for r in fake.write_requests if r.path.endswith("/workflows"))
    assert created_wf is not None
    assert created_wf["metadata"]["name"] == "ft"
    assert created_wf["metadata"]["ownerReferences"][0]["uid"] == "tj-uid-1"
    assert created_wf["metadata"]["annotations"]["trainweave.io/max-restarts"] == "2"
    # the Workflow comes last: pods need the ConfigMap/Service/PVCs first
    posts = [r.path.rsplit("/", 1)[-1] for r in fake.write_requests if r.method == "POST"]
    assert posts[-1] == "workflows"
    (stored,) = fake.server.objects("Workflow", "ns")
    assert stored["metadata"]["ownerReferences"][0]["uid"] == "tj-uid-1"


CLUSTER_RUNTIME = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/rt"


def test_a_first_start_creates_the_snapshot_first_and_reads_only_the_runtime() -> None:
    """Attempt 0 normally finds no snapshot: no GET of it (one read per TrainJob fewer)."""
    fake = with_trainjob(Observed(trainjob()), cluster_runtime())
    run(Observed(trainjob()), fake)
    assert [r.path for r in fake.sent if r.method == "GET"] == [CLUSTER_RUNTIME]
    posts = [r for r in fake.sent if r.method == "POST"]
    assert (posts[0].body or {})["metadata"]["name"] == "ft-runtime-snapshot"
    assert [r.path for r in posts].count("/api/v1/namespaces/ns/configmaps") == 1


def test_a_first_start_cut_short_renders_from_the_snapshot_it_left() -> None:
    """A restart mid-start finds its snapshot (409): the runtime in it wins over the one read
    now, as a later start's would (upstream KEP-2599), and it is not created twice."""
    given: list[Json] = []

    def renderer(trainjob: Json, runtime: Json, options: render.Options) -> list[Json]:
        given.append(runtime)
        return fake_renderer(trainjob, runtime, options)

    left = '{"kind":"ClusterTrainingRuntime","metadata":{"name":"rt","generation":1}}'
    fake = with_trainjob(Observed(trainjob()), cluster_runtime(), snapshot_map(left))
    plan = reconcile.actions(Observed(trainjob()), NOW)
    Executor(fake, renderer, lambda: NOW, judge_first=False).run(plan, trainjob())
    assert given == [fake.server.find("ClusterTrainingRuntime", "", "rt"), json.loads(left)]
    cm_posts = [r for r in fake.sent if r.method == "POST" and r.path.endswith("/configmaps")]
    assert len(cm_posts) == 1
    assert any(r.method == "POST" and r.path.endswith("/workflows") for r in fake.sent)
    (snapshot,) = [c for c in fake.server.objects("ConfigMap", "ns") if "runtime" in c["data"]]
    assert snapshot["data"]["runtime"] == left  # the one left, not overwritten


def test_a_first_start_meeting_a_foreign_snapshot_is_an_error_and_creates_nothing_more() -> None:
    fake = with_trainjob(
        Observed(trainjob()), cluster_runtime(), snapshot_map("{}", owner_uid="someone-else")
    )
    with pytest.raises(api.ApiError, match="ConfigMap ft-runtime-snapshot exists and is not"):
        run(Observed(trainjob()), fake)
    assert [r.path for r in fake.sent if r.method == "POST"] == ["/api/v1/namespaces/ns/configmaps"]


def test_restart_adopts_existing_workflow_instead_of_a_second_copy() -> None:
    wf = workflow({"init": StepState("")})
    text = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n"
    obs = Observed(
        trainjob(annotations={"trainweave.io/attempts": "1"})
    )  # cache had no workflow yet
    fake = with_trainjob(obs, wf, snapshot_map(text))
    run(obs, fake)
    posts = [r for r in fake.sent if r.method == "POST" and r.path.endswith("workflows")]
    assert len(posts) == 1  # one create, 409, adopted
    assert [w["metadata"]["uid"] for w in fake.server.objects("Workflow")] == ["wf-ft"]


def test_foreign_object_with_our_name_is_an_error() -> None:
    foreign = workflow({"init": StepState("")}, owner_uid="someone-else")
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}))
    fake = with_trainjob(obs, foreign, cluster_runtime())
    with pytest.raises(api.ApiError, match="not controlled by this TrainJob"):
        run(obs, fake)


def test_missing_runtime_fails_with_reason() -> None:
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}))
    fake = with_trainjob(obs)
    run(obs, fake)
    cond = failed_condition(fake)
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "Failed",
        "True",
        "TrainingRuntimeNotFound",
    )
    assert "spec.runtimeRef.name" in cond["message"] and "'rt' not found" in cond["message"]


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("TrainingRuntime", "../../other/trainingruntimes/rt"),
        ("ClusterTrainingRuntime", "../namespaces/other/trainingruntimes/rt"),
        ("ClusterTrainingRuntime", "../../../../api/v1/namespaces/kube-system/secrets/token"),
        ("TrainingRuntime", "RT"),
    ],
)
def test_runtime_ref_that_is_no_object_name_is_not_found_without_a_request(
    kind: str, name: str
) -> None:
    """urllib3 removes dot segments: ``a/../..`` would GET another namespace's object."""
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    tj["spec"]["runtimeRef"] = {"kind": kind, "name": name}
    fake = with_trainjob(Observed(tj))
    run(Observed(tj), fake)
    assert [r.path for r in fake.sent if "trainingruntimes" in r.path] == []
    cond = failed_condition(fake)
    assert (cond["type"], cond["reason"]) == ("Failed", "TrainingRuntimeNotFound")


def test_existing_secret_is_taken_as_its_own_without_reading_it() -> None:
    """Secrets: create only (deploy/rbac.yaml); a 409 on the MPI SSH Secret is not read back."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "ft-mpi-ssh-auth", "namespace": "ns"},
    }

    def renderer(trainjob: Json, runtime: Json, options: render.Options) -> list[Json]:
        return [secret, *fake_renderer(trainjob, runtime, options)]

    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}))
    fake = with_trainjob(obs, cluster_runtime(), secret)
    Executor(fake, renderer, lambda: NOW, judge_first=False).run(
        reconcile.actions(obs, NOW), obs.trainjob
    )
    assert [r.path for r in fake.sent if "/secrets" in r.path] == ["/api/v1/namespaces/ns/secrets"]
    assert any(r.method == "POST" and r.path.endswith("/workflows") for r in fake.sent)


def test_suspend_stops_running_workflow_and_releases_its_workloads() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    pods = (pod("ft", "init", "init-0-0", "Succeeded"), pod("ft", "trainer", "node-0-0", "Running"))
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:02:00Z"),
    )
    obs = Observed(
        trainjob(suspend=True, annotations={"trainweave.io/attempts": "1"}), (wf,), pods, wls
    )
    plan = reconcile.actions(obs, NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.body) for r in plan.requests] == [
        (
            "PATCH",
            "ft",
            {
                "metadata": {"annotations": {"trainweave.io/stopped-for": "suspend"}},
                "spec": {"shutdown": "Stop"},
            },
        ),
    ]
    # next pass: Argo has the stop; the trainer's Workload (still holding quota) is deleted
    stopped = workflow(
        {"init": INIT_OK, "trainer": TRAINER_RUN}, shutdown="Stop", stopped_for="suspend"
    )
    plan = reconcile.actions(Observed(obs.trainjob, (stopped,), pods, wls), NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in plan.requests] == [
        ("DELETE", "ft-trainer-a0")
    ]


def test_trainjob_deleted_in_foreground_stops_its_running_workflow_then_releases() -> None:
    """Argo would retry the pods the GC deletes: a stop first, and nothing else; once Argo has
    the stop, the stopped group's Workload goes, as for a suspend."""
    tj = trainjob(annotations={"trainweave.io/attempts": "2"})
    tj["metadata"]["deletionTimestamp"] = "2026-11-01T11:00:00Z"
    tj["metadata"]["finalizers"] = ["foregroundDeletion"]
    running = workflow({"init": INIT_OK, "trainer": TRAINER_RUN}, attempt=1)
    done = workflow({"init": INIT_OK}, phase="Failed")
    pods = (pod("ft-r1", "trainer", "node-0-0", "Running"),)
    wls = (workload("ft-trainer-a1", queue="gpu", reserved=T0),)
    plan = reconcile.actions(Observed(tj, (done, running), pods, wls), NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1], r.body) for r in plan.requests] == [
        (
            "PATCH",
            "ft-r1",
            {
                "metadata": {"annotations": {"trainweave.io/stopped-for": "deleted"}},
                "spec": {"shutdown": "Stop"},
            },
        ),
    ]
    assert plan.start is None and plan.after_start == [] and plan.metrics == []
    stopped = workflow(
        {"init": INIT_OK, "trainer": TRAINER_RUN}, attempt=1, shutdown="Stop", stopped_for="deleted"
    )
    plan = reconcile.actions(Observed(tj, (done, stopped), pods, wls), NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in plan.requests] == [
        ("DELETE", "ft-trainer-a1")
    ]
    assert plan.after_start == [] and plan.metrics == []


def test_trainjob_deleted_in_foreground_frees_a_failed_pod_kueue_holds() -> None:
    """Found by ``make chaos``: the stop failed the trainer pod as the GC deleted it; Kueue kept
    its finalizer, its group's Workload waiting for a replacement pod (then evicted by the
    PodsReady timeout, never finished), so the pod, the Workflow and the TrainJob stayed for
    good. The Workload is deleted, which makes Kueue drop the finalizer."""
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    tj["metadata"]["deletionTimestamp"] = "2026-11-01T11:00:00Z"
    tj["metadata"]["finalizers"] = ["foregroundDeletion"]
    failed = StepState("Failed", [Pod("node-0-0", "Failed", code=143)], role="trainer", queue="gpu")
    wf = workflow({"init": INIT_OK, "trainer": failed}, phase="Failed", stopped_for="deleted")
    wf["metadata"]["deletionTimestamp"] = "2026-11-01T11:00:00Z"
    pods = (pod("ft", "trainer", "node-0-0", "Failed", deleting=True),)
    wls = (workload("ft-trainer-a0", queue="gpu", evicted="2026-11-01T11:00:30Z"),)
    plan = reconcile.actions(Observed(tj, (wf,), pods, wls), NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in plan.requests] == [
        ("DELETE", "ft-trainer-a0")
    ]


@pytest.mark.parametrize("finalizers", [["orphan"], ["example.com/keep"], []])
def test_trainjob_deleted_otherwise_leaves_its_workflow_alone(finalizers: list[str]) -> None:
    """Orphan: the Workflow is meant to outlive the TrainJob; background: it goes after it."""
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    tj["metadata"]["deletionTimestamp"] = "2026-11-01T11:00:00Z"
    tj["metadata"]["finalizers"] = finalizers
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    pods = (pod("ft", "trainer", "node-0-0", "Running"),)
    assert reconcile.actions(Observed(tj, (wf,), pods), NOW) == reconcile.Actions()


@pytest.mark.parametrize(
    ("managed_by", "managed"),
    [
        (None, True),
        ("trainer.kubeflow.org/trainjob-controller", True),
        ("kueue.x-k8s.io/multikueue", False),
    ],
)
def test_trainjob_of_another_manager_is_left_alone(managed_by: str | None, managed: bool) -> None:
    """Trainer reconciles only TrainJobs whose spec.managedBy is its own (or unset)."""
    tj = trainjob()
    if managed_by is not None:
        tj["spec"]["managedBy"] = managed_by
    plan = reconcile.actions(Observed(tj, ()), NOW)
    assert (plan.start is not None) is managed
    assert (plan == reconcile.Actions()) is not managed


def test_suspend_before_any_pod_uses_argo_suspend() -> None:
    wf = workflow({"init": StepState(""), "trainer": StepState("")})
    obs = Observed(trainjob(suspend=True, annotations={"trainweave.io/attempts": "1"}), (wf,))
    plan = reconcile.actions(obs, NOW)
    assert [r.body for r in plan.requests] == [{"spec": {"suspend": True}}]


def test_resume_starts_next_segment_without_finished_steps() -> None:
    stopped = workflow(
        {"init": INIT_OK, "trainer": StepState("Failed", [Pod("node-0-0", "Failed", code=143)])},
        phase="Failed",
        shutdown="Stop",
        stopped_for="suspend",
    )
    pods = (pod("ft", "init", "init-0-0", "Succeeded"),)
    wls = (workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),)
    cond = [
        {
            "type": "Suspended",
            "status": "True",
            "reason": "Suspended",
            "message": "TrainJob is suspended",
            "lastTransitionTime": T0,
        }
    ]
    obs = Observed(
        trainjob(conditions=cond, annotations={"trainweave.io/attempts": "1"}),
        (stopped,),
        pods,
        wls,
    )
    plan = reconcile.actions(obs, NOW)
    assert plan.start == reconcile.Start(attempt=0, segment=1, skip_steps=frozenset({"init"}))
    # not while the interrupted step's Workload still exists
    live = (*wls, workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:02:00Z"))
    assert reconcile.actions(Observed(obs.trainjob, (stopped,), pods, live), NOW).start is None


def test_failure_with_budget_starts_a_fresh_attempt() -> None:
    failed = workflow(
        {"init": StepState("Failed", [Pod("init-0-0", "Failed", code=1)])},
        phase="Failed",
        max_restarts=2,
    )
    pods = (pod("ft", "init", "init-0-0", "Failed"),)
    wls = (workload("ft-init-a0", reserved=T0),)
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}), (failed,), pods, wls)
    plan = reconcile.actions(obs, NOW)
    assert plan.start == reconcile.Start(attempt=1)
    bodies = [r.body for r in plan.requests]
    assert {"metadata": {"annotations": {"trainweave.io/attempts": "2"}}} in bodies
    # Argo gave up on the old attempt's group: released, pods kept for their logs
    assert {"metadata": {"annotations": {"kueue.x-k8s.io/retriable-in-group": "false"}}} in bodies


def test_deadline_stops_workflow_and_deletes_workloads() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    pods = (pod("ft", "trainer", "node-0-0", "Running"),)
    wls = (workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:02:00Z"),)
    obs = Observed(
        trainjob(deadline=60, annotations={"trainweave.io/attempts": "1"}), (wf,), pods, wls
    )
    plan = reconcile.actions(obs, NOW)
    assert [(r.method, r.path.rsplit("/", 1)[-1]) for r in plan.requests] == [
        ("PATCH", "ft"),
        ("DELETE", "ft-trainer-a0"),
    ]
    status = next(r.body for r in plan.after_start if r.path.endswith("/status"))
    assert status is not None and status["status"]["conditions"][0]["reason"] == "DeadlineExceeded"


def test_orphaned_pods_release_their_workload() -> None:
    pods = [pod("ft", "trainer", "node-0-0", "Failed", deleting=True)]
    reqs = leftovers.orphan_releases("ns", pods, [workload("ft-trainer-a0", reserved=T0)])
    assert [
        (r.method, r.path.rsplit("/", 1)[-1], (r.body or {}).get("preconditions")) for r in reqs
    ] == [("DELETE", "ft-trainer-a0", {"uid": "wl-ft-trainer-a0"})]


def test_segment_skips_finished_steps() -> None:
    """A resumed segment: ``<wf>-s<j>`` without the steps that succeeded, their terms dropped."""
    owner = render.Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "ft", "tj-uid-1")
    options = render.Options(
        segment=2, skip_steps=frozenset({"dataset-initializer"}), owner=owner, exit_cleanup=False
    )
    (wf,) = [o for o in fake_renderer(trainjob(), {}, options) if o["kind"] == "Workflow"]
    tasks = {t["name"]: t.get("depends") for t in wf["spec"]["templates"][0]["dag"]["tasks"]}
    assert tasks == {"model-initializer": None, "node": "model-initializer"}
    assert (wf["metadata"]["name"], wf["metadata"]["labels"]["trainweave.io/segment"]) == (
        "ft-s2",
        "2",
    )


def test_resumed_segment_workload_is_not_released_for_the_stopped_one() -> None:
    stopped = workflow(
        {"init": INIT_OK, "trainer": StepState("Failed", [Pod("node-0-0", "Failed", code=143)])},
        phase="Failed",
        shutdown="Stop",
        stopped_for="suspend",
    )
    resumed = workflow({"trainer": TRAINER_RUN}, segment=1)
    new_pod = pod("ft-s1", "trainer", "node-0-0", "Running")
    new_pod["metadata"]["uid"] = "pod-new"
    wl = workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:04:00Z")
    wl["metadata"]["ownerReferences"] = [{"kind": "Pod", "name": "x", "uid": "pod-new"}]
    obs = Observed(
        trainjob(annotations={"trainweave.io/attempts": "1"}), (stopped, resumed), (new_pod,), (wl,)
    )
    assert reconcile.releases(obs, reconcile.done_groups(obs, stop_all=False)) == []


@pytest.mark.parametrize(
    ("path", "resource", "subresource"),
    [
        pytest.param("/api/v1/namespaces/x/pods/y", "pods", "", id="core-namespaced"),
        pytest.param("/apis/kueue.x-k8s.io/v1beta2/workloads", "workloads", "", id="group-cluster"),
        pytest.param(
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/n/trainjobs/ft/status",
            "trainjobs",
            "status",
            id="subresource",
        ),
        pytest.param("/api/v1/namespaces/x", "namespaces", "", id="namespace-object"),
        pytest.param("/api/v1/nodes/n/status", "nodes", "status", id="cluster-subresource"),
    ],
)
def test_request_resource_for_metrics_and_cache(path: str, resource: str, subresource: str) -> None:
    from trainweave.integrations.cluster.metrics import resource_of, subresource_of

    assert (resource_of(path), subresource_of(path)) == (resource, subresource)


def test_kueue_reason_arriving_later_is_announced_once() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    bare = workload("ft-trainer-a0", queue="gpu")  # just created: no conditions yet
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    first = reconcile.actions(Observed(tj, (wf,), (), (bare,)), NOW)
    # plain Pending is no news: no annotation patch, no Event (the live Workload shows it)
    assert [r for r in first.after_start if "metadata" in (r.body or {})] == []
    assert [r for r in first.after_start if r.path.endswith("events")] == []
    waiting = workload("ft-trainer-a0", queue="gpu", pending_reason="WaitingForQuota")
    second = reconcile.actions(Observed(tj, (wf,), (), (waiting,)), NOW)
    reasons = [
        (r.body or {}).get("reason") for r in second.after_start if r.path.endswith("events")
    ]
    assert reasons == ["StepWaitingForQuota"]
    ann = next(
        r.body for r in second.after_start if r.method == "PATCH" and "metadata" in (r.body or {})
    )
    assert ann is not None
    tj["metadata"]["annotations"].update(ann["metadata"]["annotations"])
    third = reconcile.actions(Observed(tj, (wf,), (), (waiting,)), NOW)
    assert [r for r in third.after_start if r.path.endswith("events")] == []


def test_names_are_one_path_segment() -> None:
    """A name or namespace is escaped whole, so it can never step out of its collection."""
    req = api.get(api.TRAINING_RUNTIME, "ns", "../../other/trainingruntimes/rt")
    assert req.path == (
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainingruntimes/"
        "..%2F..%2Fother%2Ftrainingruntimes%2Frt"
    )
    assert api.valid_name("llm-finetune.v2") and not api.valid_name("../rt")
    assert not api.valid_name("a" * 254) and not api.valid_name("")


def test_a_step_whose_pods_all_succeeded_before_the_stop_is_not_run_again() -> None:
    """Found by the chaos test: suspended while the trainer finished, Argo had already run the
    exporter's pod to success when the Stop landed; Argo then marks the exporter's DAG node
    Failed. The step's work is done: the resumed segment must not run it again (its pods would
    join the group's Finished Workload and stay gated forever). Here every step's work is done,
    so nothing is left to resume: the TrainJob is Complete and no segment starts (found by the
    chaos test again: that segment's Workflow had an empty DAG, which Argo's CRD refuses with a
    422, and the controller retried it forever)."""
    trainer = StepState(
        "Succeeded", [Pod("node-0-0", "Succeeded", code=0)], role="trainer", queue="gpu"
    )
    exporter = StepState("Failed", [Pod("exporter-0-0", "Succeeded", code=0)], queue="cpu")
    stopped = workflow(
        {"init": INIT_OK, "trainer": trainer, "exporter": exporter},
        phase="Failed",
        shutdown="Stop",
        stopped_for="suspend",
    )
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}), (stopped,))
    plan = reconcile.actions(obs, NOW)
    assert plan.start is None
    assert plan.state == "Complete"
    patch = next(r for r in plan.after_start if r.path.endswith("/status"))
    conds = {c["type"]: c for c in (patch.body or {})["status"]["conditions"]}
    assert (conds["Complete"]["status"], conds["Complete"]["reason"]) == (
        "True",
        "AllJobsCompleted",
    )
    # with the exporter's pod still failed-by-the-stop, it runs again in the next segment
    exporter = StepState("Failed", [Pod("exporter-0-0", "Failed", code=143)], queue="cpu")
    stopped = workflow(
        {"init": INIT_OK, "trainer": trainer, "exporter": exporter},
        phase="Failed",
        shutdown="Stop",
        stopped_for="suspend",
    )
    plan = reconcile.actions(Observed(obs.trainjob, (stopped,)), NOW)
    assert plan.start is not None and plan.start.skip_steps == frozenset({"init", "trainer"})


def test_a_step_whose_pods_beat_the_stop_is_not_run_again() -> None:
    """Found by ``make chaos`` (``suspend-24``): the suspend's stop reached the trainer as its pod
    succeeded; Argo marked the step failed by the stop, Kueue counted the group's one pod
    succeeded and finished it. Re-run under the same group name, the new pod stayed gated for
    good (Kueue saw a finished group). The step counts as done: the next segment skips it."""
    stopped_trainer = StepState(
        "Failed",
        [Pod("node-0-0", "Failed", message="workflow shutdown with strategy:  Stop")],
        role="trainer",
        queue="gpu",
    )
    stopped = workflow(
        {"init": INIT_OK, "trainer": stopped_trainer, "exporter": StepState("")},
        phase="Failed",
        shutdown="Stop",
        stopped_for="suspend",
    )
    total = {"kueue.x-k8s.io/pod-group-total-count": "1"}
    pods = (
        pod("ft", "init", "init-0-0", "Succeeded", annotations=total),
        pod("ft", "trainer", "node-0-0", "Succeeded", annotations=total),
    )
    wls = (
        workload("ft-init-a0", reserved=T0, finished="2026-11-01T10:01:00Z"),
        workload("ft-trainer-a0", queue="gpu", reserved=T0, finished="2026-11-01T10:04:00Z"),
    )
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    plan = reconcile.actions(Observed(tj, (stopped,), pods, wls), NOW)
    assert plan.start == reconcile.Start(
        attempt=0, segment=1, skip_steps=frozenset({"init", "trainer"})
    )
    assert [r for r in plan.requests if r.method == "DELETE"] == []  # its Workload stays
    # a pod of the group that did not succeed (or one missing) leaves the step to run again
    missing = (pods[0],)
    failed = (pods[0], pod("ft", "trainer", "node-0-0", "Failed", annotations=total))
    for others in (missing, failed):
        again = reconcile.actions(Observed(tj, (stopped,), others, wls[:1]), NOW)
        assert again.start is not None and again.start.skip_steps == frozenset({"init"})


def test_resuming_after_a_partial_step_starts_the_next_segment_at_once() -> None:
    """A 2-pod step stopped with one pod done: Kueue finished the group's Workload. The next
    segment runs the step again under its own group names (``names.group_name``), so it starts
    at once and the stopped segment's Workload stays, with the pods Kueue counted for it."""
    half = StepState(
        "Failed",
        [Pod("node-0-0", "Succeeded", code=0), Pod("node-0-1", "Failed", code=143)],
        role="trainer",
        queue="gpu",
    )
    stopped = workflow(
        {"init": INIT_OK, "trainer": half}, phase="Failed", shutdown="Stop", stopped_for="suspend"
    )
    wl = workload(
        "ft-trainer-a0",
        queue="gpu",
        reserved="2026-11-01T10:03:00Z",
        finished="2026-11-01T10:04:00Z",
    )
    obs = Observed(trainjob(annotations={"trainweave.io/attempts": "1"}), (stopped,), (), (wl,))
    plan = reconcile.actions(obs, NOW)
    assert plan.start == reconcile.Start(attempt=0, segment=1, skip_steps=frozenset({"init"}))
    assert [r for r in plan.requests if r.method == "DELETE"] == []


# --- a TrainJob re-created under the name of one still being deleted ---------------------------

EARLIER = "tj-uid-0"  # the TrainJob deleted in the background; the one observed is UID


@pytest.mark.parametrize(
    ("workflows", "pods", "left"),
    [
        # its Workflow still there (the GC deletes it after the TrainJob)
        ((workflow({"init": INIT_OK}, owner_uid=EARLIER),), (), ["Workflow ft"]),
        # its Workflow gone, a pod of it held (a finalizer, a long grace period)
        ((), (pod("ft", "init", "init-0-0", "Succeeded", deleting=True),), ["Pod ft-init-init-0-0-0"]),
        ((), (pod("ft", "trainer", "node-0-0", "Running", deleting=True),), ["Pod ft-trainer-node-0-0-0"]),
    ],
    ids=["workflow", "succeeded-pod", "running-pod"],
)  # fmt: skip
def test_a_trainjob_waits_for_what_an_earlier_one_of_its_name_left(
    workflows: tuple[Json, ...], pods: tuple[Json, ...], left: list[str]
) -> None:
    """Its pods would carry the same group names: Kueue counts every pod of a group, deletes the
    newest beyond its count and makes no Workload until it sees them gone. The new TrainJob
    starts nothing, says why, and frees what the earlier pods' Workloads hold."""
    wls = (workload("ft-trainer-a0", queue="gpu", reserved=T0),)
    obs = Observed(trainjob(), workflows, pods, wls)
    assert leftovers.leftovers(obs) == left
    plan = reconcile.actions(obs, NOW)
    assert plan.start is None
    (ev,) = [r for r in plan.requests if r.kind is api.EVENT]
    assert ev.body is not None and ev.body["reason"] == "EarlierRunRemains"
    assert ev.body["message"].startswith(f"{left[0]} of an earlier TrainJob named ft still exist")
    deletes = [r.path.rsplit("/", 1)[-1] for r in plan.requests if r.method == "DELETE"]
    assert deletes == (["ft-trainer-a0"] if "trainer" in left[0] else [])
    # once they are gone, it starts
    assert reconcile.actions(Observed(trainjob()), NOW).start == reconcile.Start(attempt=0)


def test_pods_of_the_trainjobs_own_workflows_are_no_leftovers() -> None:
    """A restart's new attempt not yet in the cache: the pods are of this TrainJob's earlier
    attempt (its own Workflow), so nothing waits."""
    mine = workflow({"init": INIT_OK}, phase="Failed")
    pods = (pod("ft", "init", "init-0-0", "Succeeded"),)
    assert leftovers.leftovers(Observed(trainjob(), (mine,), pods)) == []
