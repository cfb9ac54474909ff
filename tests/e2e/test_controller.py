"""The controller on the real control plane: TrainJob in, Workflow + Kueue, status back.

Each test runs `trainweave controller` as a subprocess scoped to the test's namespace
(as deploy/rbac.yaml's ServiceAccount; its Lease in trainweave-system), applies the
llm-finetune example (examples/llm-finetune/, made to fit kwok: queue names of
tests/e2e/manifests/queues.yaml, small requests, no PVC since kwok has no storage
provisioner) and waits on conditions with deadlines.
Pod outcomes come from the kwok stage knobs `trainweave.test/exit-code[.N]` and
`trainweave.test/duration` set on the runtime's pod templates.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException

from tests.oracle import harness

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, Pod, condition, default_kubeconfig, wait_until
from .pipelines import (
    TRAINER,
    apply,
    example,
    trainjob,
    wait_condition,
    workflows,
    workload_done,
)

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
HOLD = "trainweave.test/hold"  # a finalizer that keeps a pod until the test lets go
Json = dict[str, Any]


def test_shared_backoff_limit_fails_the_step_on_its_third_failed_pod(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """backoffLimit: 2 on a 2-pod trainer: Argo retries each pod on its own, the controller
    counts the step's failures together and stops it on the third, as a Job would."""
    queues()
    tj, rt = example(namespace, nodes=2, codes={"node": [3, 3, 3]})  # 1, 2 are FailJob
    node = next(j for j in rt["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node")
    node["template"]["spec"].pop("backoffLimitPerIndex", None)  # the example's per-pod budget
    node["template"]["spec"]["backoffLimit"] = 2
    apply(kube, namespace, tj, rt)
    got = wait_condition(kube, namespace, "Failed", timeout=240)
    cond = condition(got, "Failed")
    assert cond is not None and cond["reason"] == "FailedJobs", cond
    assert "BackoffLimitExceeded" in cond["message"], cond
    (wf,) = workflows(kube, namespace)
    assert wf["metadata"]["annotations"]["trainweave.io/stopped-for"] == "job-failed/node"
    failed = [
        n
        for n in (wf["status"].get("nodes") or {}).values()
        if n.get("type") == "Pod" and n["name"].startswith("ft.node.") and n["phase"] == "Failed"
    ]
    # both pods may fail their second attempt together before the stop lands; never all six
    assert 3 <= len(failed) <= 4, [n["name"] for n in failed]


def test_failjob_on_a_second_container_fails_the_step_at_once(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """A trainer pod of two containers: ``node`` fails with a counted code, ``uploader`` with
    one its FailJob rule names. Argo's node message names one container; the controller reads
    both from Argo's Container nodes and fails the step as the Job controller would."""
    queues()
    tj, rt = example(namespace, nodes=1)
    node = next(j for j in rt["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node")
    pod = node["template"]["spec"]["template"]
    pod["spec"]["containers"].append(
        {
            "name": "uploader",
            "image": "uploader:1",
            "command": ["true"],
            "resources": {"requests": {"cpu": "250m"}},
        }
    )
    ann = pod["metadata"]["annotations"]
    ann["trainweave.test/container-exit-code.node"] = "3"
    ann["trainweave.test/container-exit-code.uploader"] = "42"
    rules = node["template"]["spec"]["podFailurePolicy"]["rules"]
    on_uploader = {"containerName": "uploader", "operator": "In", "values": [42]}
    rules.insert(0, {"action": "FailJob", "onExitCodes": on_uploader})
    apply(kube, namespace, tj, rt)
    got = wait_condition(kube, namespace, "Failed", timeout=240)
    cond = condition(got, "Failed")
    assert cond is not None and cond["reason"] == "FailedJobs", cond
    assert cond["message"] == (
        "jobset failed due to one or more job failures (first failed job: ft-node-0):"
        " step 'node' failed: job 'node': PodFailurePolicy: Container uploader for pod node-0-0"
        " failed with exit code 42 matching FailJob rule at index 0"
    ), cond
    (wf,) = workflows(kube, namespace)
    assert wf["metadata"]["annotations"]["trainweave.io/stopped-for"] == "job-failed/node"
    nodes = (wf["status"].get("nodes") or {}).values()
    attempts = [n for n in nodes if n.get("type") == "Pod" and n["name"].startswith("ft.node.")]
    # the stop lands within Argo's 10 s retry backoff: the failed attempt is the only one that ran
    assert [n["phase"] for n in attempts if n["phase"] != "Pending"][:1] == ["Failed"], attempts
    assert len([n for n in attempts if n["phase"] == "Failed"]) == 1, attempts
    uploader = [
        n for n in nodes if n.get("type") == "Container" and n["name"].endswith(".uploader")
    ]
    assert [n["message"].split(":")[0] for n in uploader][:1] == ["uploader"], uploader
    # the stopped step's pod group no longer holds quota
    wait_until("trainer Workload released", lambda: workload_done(kube, namespace, "ft-node-a0"))


def test_suspend_then_resume_continues_from_interrupted_step(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    queues()
    apply(kube, namespace, *example(namespace, nodes=1, durations={"node": "20s"}))
    wait_until(
        "trainer running", lambda: _phase_pods(kube, namespace, "node", "Running"), timeout=120
    )
    kube.custom.patch_namespaced_custom_object(
        *TRAINER, namespace, "trainjobs", "ft", {"spec": {"suspend": True}}
    )
    wait_condition(kube, namespace, "Suspended")
    # the running step's quota is freed: its Workload is deleted and its pods are gone
    wait_until(
        "trainer Workload deleted",
        lambda: kube.workload(namespace, "ft-node-a0") is None,
        timeout=90,
    )
    # Kueue updates the ClusterQueue's reservation in its own reconcile, after the deletion.
    wait_until(
        "trainer GPUs released",
        lambda: _reserved(_cq(kube, namespace), "nvidia.com/gpu") == 0,
        timeout=30,
    )
    kube.custom.patch_namespaced_custom_object(
        *TRAINER, namespace, "trainjobs", "ft", {"spec": {"suspend": False}}
    )
    tj = wait_condition(kube, namespace, "Complete", timeout=180)
    susp = condition(tj, "Suspended")
    assert susp is not None and (susp["status"], susp["reason"]) == ("False", "Resumed")
    names = sorted(w["metadata"]["name"] for w in workflows(kube, namespace))
    assert names == ["ft", "ft-s1"]
    resumed = kube.workflow(namespace, "ft-s1")
    tasks = [t["name"] for t in resumed["spec"]["templates"] if t["name"] == "main"]
    assert tasks  # the initializers were not re-run:
    main = next(t for t in resumed["spec"]["templates"] if t["name"] == "main")
    assert [t["name"] for t in main["dag"]["tasks"]] == ["node", "model-exporter"]


def test_a_step_resumed_after_some_of_its_pods_succeeded_runs_under_its_own_group(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """A 2-pod trainer suspended after rank 0 succeeded, rank 1 still running; the resumed
    segment re-runs the step. Kueue counts every pod that carries a group's name (v0.19.2
    ``pod_controller.go``: ``Finished`` once ``pod-group-total-count`` of them succeeded), and
    the stopped segment's rank 0 can outlive the stop (here a finalizer holds it, as a log
    shipper's would; Kueue deletes the pods of a deleted Workload, but cannot remove them).
    Under a shared group name it would count for the re-run step, finishing its Workload (and
    freeing its quota) while the new rank 1 still runs. The segment's pods carry their own
    group, ``ft-node-a0s1``, whose Workload finishes once both of them did."""
    queues()
    tj, rt = example(namespace, nodes=2)
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        if rjob["name"] == "node":  # rank 0 ends at once, rank 1 runs 15 s, in every segment
            ann = rjob["template"]["spec"]["template"]["metadata"]["annotations"]
            ann["trainweave.test/attempt"] = "{{retries}}-{{inputs.parameters.rank}}"
            ann["trainweave.test/duration.0-0"] = "1s"
            ann["trainweave.test/duration.0-1"] = "15s"
    apply(kube, namespace, tj, rt)

    def half_done() -> bool:
        pods = kube.pods(namespace, "trainweave.io/replicated-job=node")
        return sorted(p.status.phase for p in pods) == ["Running", "Succeeded"]

    wait_until("trainer rank 0 done, rank 1 running", half_done, timeout=120)
    (held,) = [
        p
        for p in kube.pods(namespace, "trainweave.io/replicated-job=node")
        if p.status.phase == "Succeeded"
    ]
    _hold(kube, namespace, held)
    try:
        kube.custom.patch_namespaced_custom_object(
            *TRAINER, namespace, "trainjobs", "ft", {"spec": {"suspend": True}}
        )
        wait_condition(kube, namespace, "Suspended")
        wait_until("rank 1 stopped", lambda: not _phase_pods(kube, namespace, "node", "Running"))
        kube.custom.patch_namespaced_custom_object(
            *TRAINER, namespace, "trainjobs", "ft", {"spec": {"suspend": False}}
        )
        wait_condition(kube, namespace, "Complete", timeout=180)
        assert sorted(w["metadata"]["name"] for w in workflows(kube, namespace)) == ["ft", "ft-s1"]
        pods = [
            p
            for p in kube.pods(namespace, "trainweave.io/replicated-job=node")
            if (p.metadata.labels or {})["workflows.argoproj.io/workflow"] == "ft-s1"
        ]
        assert sorted(p.status.phase for p in pods) == ["Succeeded", "Succeeded"]
        (group,) = {(p.metadata.labels or {})["kueue.x-k8s.io/pod-group-name"] for p in pods}
        wl = kube.workload(namespace, group)
        assert wl is not None, group
        finished = condition(wl, "Finished")
        assert finished is not None and finished["status"] == "True", finished
        ended = max(
            c.state.terminated.finished_at for p in pods for c in p.status.container_statuses
        )
        # Kueue's times are to the second: the Workload finished once both new pods had
        assert finished["lastTransitionTime"] >= ended.strftime("%Y-%m-%dT%H:%M:%SZ"), (
            finished,
            ended,
        )
        assert group == "ft-node-a0s1"
    finally:
        wait_until("hold released", lambda: _release(kube, namespace, held))


def _phase_pods(kube: Kube, ns: str, rjob: str, phase: str) -> bool:
    pods = kube.pods(ns, f"trainweave.io/replicated-job={rjob}")
    return any(p.status.phase == phase for p in pods)


def _reserved(cq: Json, resource: str) -> float:
    total = 0.0
    for fl in (cq.get("status") or {}).get("flavorsReservation") or []:
        for r in fl.get("resources") or []:
            if r["name"] == resource:
                total += float(str(r["total"]))
    return total


def test_a_trainjob_recreated_under_its_name_waits_for_the_earlier_ones_pods(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """`kubectl delete` then `kubectl apply` of a TrainJob while its trainer runs: the GC deletes
    the first one's Workflow and pods after it, and a pod can outlive it (here a finalizer holds
    its dataset initializer, as a log shipper's or a long grace period would). That pod carries
    the group name the second TrainJob's initializer gets, and Kueue counts every pod of a
    group: it would make no Workload for the new pod until it saw the old one gone. The second
    TrainJob starts nothing while the pod is there, says so in an Event, and then runs."""
    queues()
    _trainer_running(kube, namespace)
    (held,) = kube.pods(namespace, "trainweave.io/replicated-job=dataset-initializer")
    _hold(kube, namespace, held)
    tj, rt = example(namespace, nodes=1, runtime_name="llm-finetune-fast")
    tj["spec"]["runtimeRef"]["name"] = "llm-finetune-fast"
    kube.create(TRAINER, "trainingruntimes", rt, namespace)
    kube.custom.delete_namespaced_custom_object(*TRAINER, namespace, "trainjobs", "ft")

    def recreated() -> bool:
        try:
            kube.create(TRAINER, "trainjobs", tj, namespace)
        except ApiException as err:
            if err.status == 409:  # the first one is not gone yet
                return False
            raise
        return True

    try:
        wait_until("TrainJob re-created", recreated, timeout=60)
        uid = trainjob(kube, namespace)["metadata"]["uid"]

        def waiting() -> bool:
            sel = f"involvedObject.uid={uid},reason=EarlierRunRemains"
            events = kube.core.list_namespaced_event(namespace, field_selector=sel).items
            return any(f"Pod {held.metadata.name}" in (e.message or "") for e in events)

        wait_until("the new TrainJob waits for the held pod", waiting, timeout=60)
        started = [
            w
            for w in workflows(kube, namespace)
            if any(r["uid"] == uid for r in w["metadata"].get("ownerReferences") or [])
        ]
        assert started == []  # nothing of the new TrainJob while the old pod is there
    finally:
        wait_until("hold released", lambda: _release(kube, namespace, held))
    done = wait_condition(kube, namespace, "Complete", timeout=240)
    assert done["metadata"]["uid"] == uid
    excess = kube.core.list_namespaced_event(namespace, field_selector="reason=ExcessPodDeleted")
    assert not excess.items, [e.message for e in excess.items]


def test_deleting_trainjob_cleans_up(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    queues()
    _trainer_running(kube, namespace)
    kube.custom.delete_namespaced_custom_object(*TRAINER, namespace, "trainjobs", "ft")
    wait_until("workflows gone", lambda: not workflows(kube, namespace), timeout=90)
    wait_until(
        "pods gone", lambda: not kube.pods(namespace, "trainweave.io/trainjob=ft"), timeout=120
    )
    wait_until("workloads gone", lambda: not kube.list(KUEUE, "workloads", namespace), timeout=120)


def test_foreground_deleted_trainjob_stops_its_workflow_before_the_cascade(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """`kubectl delete trainjob --cascade=foreground`: the GC deletes the Workflow's pods while
    Argo still operates the Workflow; unstopped, its retryStrategy replaces a deleted pod that
    failed (143) with a new attempt (docs/engines.md). trainweave stops the Workflow first.

    A test finalizer holds the trainer pod, so the Workflow outlives the pod's failure for
    certain and Argo decides about it: the Workflow fails, with no retry attempt."""
    queues()
    _trainer_running(kube, namespace)
    (trainer,) = kube.pods(namespace, "trainweave.io/replicated-job=node")
    _hold(kube, namespace, trainer)
    kube.custom.delete_namespaced_custom_object(
        *TRAINER, namespace, "trainjobs", "ft", propagation_policy="Foreground"
    )

    def workflow_ended() -> Json | None:
        wf = kube.workflow(namespace, "ft")
        return wf if (wf.get("status") or {}).get("phase") in ("Failed", "Error") else None

    try:
        # Unstopped, the Workflow would go on: a retry after the trainer's 10 s backoff, which
        # then runs for 300 s. Stopped, it fails as soon as Argo sees the deleted pod fail.
        wf = wait_until("Workflow ended", workflow_ended, timeout=90)
        attempts = [
            n["displayName"]
            for n in wf["status"]["nodes"].values()
            if n["type"] == "Pod" and n["templateName"] == "node"
        ]
        assert attempts == ["node-0-0(0)"]  # no retry attempt
        assert wf["spec"].get("shutdown") == "Stop"
    finally:
        wait_until(
            "the test's finalizer off", lambda: _release(kube, namespace, trainer), timeout=30
        )
    wait_until("TrainJob gone", lambda: not kube.list(TRAINER, "trainjobs", namespace), timeout=120)
    assert workflows(kube, namespace) == []
    wait_until(
        "pods gone", lambda: not kube.pods(namespace, "trainweave.io/trainjob=ft"), timeout=60
    )
    wait_until("workloads gone", lambda: not kube.list(KUEUE, "workloads", namespace), timeout=60)


def _trainer_running(kube: Kube, namespace: str) -> None:
    """Apply the example with a 300 s trainer and wait until the trainer runs."""
    apply(kube, namespace, *example(namespace, nodes=1, durations={"node": "300s"}))
    wait_until(
        "trainer running", lambda: _phase_pods(kube, namespace, "node", "Running"), timeout=120
    )


def _hold(kube: Kube, namespace: str, pod: Pod) -> None:
    """Put HOLD on ``pod``: it outlives its deletion until ``_release`` takes HOLD off."""
    hold = {"metadata": {"finalizers": [*(pod.metadata.finalizers or []), HOLD]}}
    kube.core.patch_namespaced_pod(pod.metadata.name, namespace, hold)


def _release(kube: Kube, namespace: str, pod: Pod) -> bool:
    """Take HOLD off ``pod``: a JSON patch that removes it where it was read, on condition that it
    is still there (``test``), so no finalizer Kueue took off meanwhile comes back (a deleting
    pod refuses new finalizers). A failed ``test`` is a 422 (the list changed under us): False,
    and ``wait_until`` reads again."""
    got: Pod = kube.core.read_namespaced_pod(pod.metadata.name, namespace)
    finalizers = list(got.metadata.finalizers or [])
    if HOLD in finalizers:
        path = f"/metadata/finalizers/{finalizers.index(HOLD)}"
        patch = [{"op": "test", "path": path, "value": HOLD}, {"op": "remove", "path": path}]
        try:
            kube.core.patch_namespaced_pod(pod.metadata.name, namespace, patch)
        except ApiException as e:
            if e.status != 422:
                raise
            return False
    return True


def _cq(kube: Kube, ns: str) -> Json:
    return cast(Json, kube.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", f"{ns}-gpu"))


# --- Kubeflow SDK ---------------------------------------------------------------------------
# kubeflow==0.5.0 pins kubernetes<36 (trainweave allows >=31,<38): it runs in its own virtualenv
# (tests.oracle.harness.sdk_python, created once under the user cache dir), driven by a script.

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from kubeflow.trainer import TrainerClient
    from kubeflow.common.types import KubernetesBackendConfig

    ns, kubeconfig, name = sys.argv[1:4]
    c = TrainerClient(KubernetesBackendConfig(namespace=ns, config_file=kubeconfig))
    job = c.wait_for_job_status(name, status={"Complete"}, timeout=240, polling_interval=2)
    jobs = c.list_jobs()
    got = c.get_job(name)
    print(
        json.dumps(
            {
                "waited": job.status,
                "listed": [j.name for j in jobs],
                "status": got.status,
                "steps": sorted(s.name for s in got.steps),
                "num_nodes": got.num_nodes,
            }
        )
    )
    """
)


def test_kubeflow_sdk_sees_trainweave_trainjobs(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    py = harness.sdk_python()
    queues()
    apply(kube, namespace, *example(namespace, nodes=2))
    out = subprocess.run(
        [str(py), "-c", SCRIPT, namespace, str(default_kubeconfig()), "ft"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["waited"] == "Complete" and got["status"] == "Complete"
    assert got["listed"] == ["ft"]
    assert {"dataset-initializer", "model-initializer", "node-0", "node-1"} <= set(got["steps"])
    assert got["num_nodes"] == 2
    wait_condition(kube, namespace, "Complete")
