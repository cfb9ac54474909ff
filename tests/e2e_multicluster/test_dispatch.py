"""A TrainJob dispatched whole by MultiKueue (issue 21): created on the manager in the dispatch
LocalQueue, admitted there (Kueue v0.19.2 pkg/controller/admissionchecks/multikueue), copied to
a worker (pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go SyncJob: managedBy
cleared), unsuspended there by the worker's Kueue when its copy of the Workload is admitted,
run step by step by trainweave on that worker, and its status copied back to the manager's
TrainJob. The Kubeflow SDK 0.5.0 (its own virtualenv, tests.oracle.harness.sdk_python) pointed at
the manager waits for it to be Complete; `trainweave queues` on both sides while it runs. Timings
are printed and written to $TMPDIR/multicluster-timings.json."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from tests.e2e.kube import ARGO, KUEUE, Kube, api_client, condition_is, wait_until
from tests.oracle import harness

from .conftest import DISPATCH_CQ, RJOBS, STEPS_CQ, WORKERS, get_tj, kubeconfig, submit

pytestmark = pytest.mark.e2e
WORKER_RBAC = Path(__file__).resolve().parents[2] / "deploy" / "multikueue-worker-rbac.yaml"
Json = dict[str, Any]

# The SDK's KubernetesBackend on the manager's kubeconfig (kubeflow 0.5.0
# kubeflow/trainer/backends/kubernetes/backend.py: get_job reads the TrainJob, its runtime and
# the pods labelled with its JobSet name; its status is Complete/Failed from the conditions)
SDK_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from kubeflow.common.types import KubernetesBackendConfig
    from kubeflow.trainer import TrainerClient

    ns, kubeconfig = sys.argv[1:3]
    c = TrainerClient(KubernetesBackendConfig(namespace=ns, config_file=kubeconfig))
    seen = []
    def note(job):
        if not seen or seen[-1] != job.status:
            seen.append(job.status)
    job = c.wait_for_job_status("ft", timeout=240, polling_interval=1, callbacks=[note])
    got = c.get_job("ft")
    print(json.dumps({
        "waited": job.status, "seen": seen, "status": got.status, "runtime": got.runtime.name,
        "num_nodes": got.num_nodes, "steps": [s.name for s in got.steps],
        "listed": [j.name for j in c.list_jobs()],
    }))
    """
)


def queues(member: str, ns: str) -> tuple[Json, str]:
    """`trainweave queues -n NS` on one member: its JSON document and its table."""
    base = [sys.executable, "-m", "trainweave.cli", "queues", "-n", ns, "--kubeconfig"]
    argv = [*base, str(kubeconfig(member))]
    doc = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True, check=True)
    table = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(doc.stdout), table


def reserved(doc: Json, cq: str) -> dict[str, str]:
    """``resource -> reserved`` of one ClusterQueue in a `trainweave queues -o json` document
    (every flavor's non-zero reservations)."""
    for q in doc["clusterQueues"]:
        if q["name"] == cq:
            return {
                line["resource"]: line["reserved"]
                for line in q["quota"]
                if line["reserved"] not in ("0", "")
            }
    return {}


def can_i(api: Any, verb: str, group: str, resource: str, ns: str | None = None) -> bool:
    """`kubectl auth can-i VERB RESOURCE.GROUP [-n NS]` (a SelfSubjectAccessReview)."""
    attrs = client.V1ResourceAttributes(verb=verb, group=group, resource=resource, namespace=ns)
    spec = client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs)
    body = client.V1SelfSubjectAccessReview(spec=spec)
    out: Any = client.AuthorizationV1Api(api).create_self_subject_access_review(body)
    return bool(out.status.allowed)


def test_manager_reaches_each_worker_as_the_least_privilege_service_account(
    clusters: dict[str, Kube], tmp_path: Path
) -> None:
    """Each MultiKueueCluster's Secret holds a token of deploy/multikueue-worker-rbac.yaml's
    ServiceAccount, not the worker's admin: it may do what Kueue's MultiKueue does there and
    nothing an admin could."""
    manager = clusters["manager"]
    rbac = [d for d in yaml.safe_load_all(WORKER_RBAC.read_text()) if d]
    sa = next(d["metadata"] for d in rbac if d["kind"] == "ServiceAccount")
    for worker in WORKERS:
        mkc = manager.get(KUEUE, "multikueueclusters", worker)
        assert mkc is not None and condition_is(mkc, "Active")
        secret_name = mkc["spec"]["clusterSource"]["kubeConfig"]["location"]
        secret = manager.core.read_namespaced_secret(secret_name, "kueue-system")
        path = tmp_path / f"{worker}.kubeconfig"
        path.write_bytes(base64.b64decode((secret.data or {})["kubeconfig"]))
        doc = yaml.safe_load(path.read_text())
        assert [set(u["user"]) for u in doc["users"]] == [{"token"}]  # no client certificate
        api = api_client(path)
        try:
            review: Any = client.AuthenticationV1Api(api).create_self_subject_review(
                client.V1SelfSubjectReview()
            )
            user = review.status.user_info.username
            assert user == f"system:serviceaccount:{sa['namespace']}:{sa['name']}", user
            assert not can_i(api, "delete", "", "nodes")
            assert not can_i(api, "get", "", "secrets", "kueue-system")
            assert not can_i(api, "update", "trainer.kubeflow.org", "trainjobs", "default")
            assert not can_i(api, "create", "", "pods", "default")
            assert can_i(api, "create", "kueue.x-k8s.io", "workloads", "default")
            assert can_i(api, "create", "trainer.kubeflow.org", "trainjobs", "default")
        finally:
            api.close()  # type: ignore[no-untyped-call]
        print(f"{worker}: MultiKueue as {user}: delete nodes no, get secrets no")


def test_trainjob_runs_whole_on_one_worker_and_reports_back(
    clusters: dict[str, Kube], mc_namespace: str
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    sdk_py = str(harness.sdk_python())
    t0 = time.monotonic()
    worker = submit(clusters, ns, {"node": "15s"})
    sdk = subprocess.Popen(
        [sdk_py, "-c", SDK_SCRIPT, ns, str(kubeconfig("manager"))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    timings: dict[str, float] = {"submit_to_dispatched_s": time.monotonic() - t0}
    # Kueue's webhook defaulted managedBy (jobframework.ApplyDefaultForManagedBy)
    assert (get_tj(manager, ns) or {})["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"
    other = next(w for w in WORKERS if w != worker)
    wk = clusters[worker]

    def workflow() -> bool:
        return bool(wk.list(ARGO, "workflows", ns))

    wait_until(f"trainweave's Workflow on {worker}", workflow, timeout=180)
    timings["submit_to_workflow_on_worker_s"] = time.monotonic() - t0

    def started() -> bool:  # kwok runs a step for seconds: Running, or already Succeeded
        pods = wk.core.list_namespaced_pod(ns).items
        return any(p.status and p.status.phase in ("Running", "Succeeded") for p in pods)

    wait_until(f"a step pod Running on {worker}", started, timeout=180)
    timings["submit_to_running_on_worker_s"] = time.monotonic() - t0

    # two levels of accounting while it runs: the whole TrainJob on the manager's dispatch
    # ClusterQueue, the running step on the worker's step ClusterQueue
    def trainer_holds() -> tuple[Json, str] | None:
        doc, table = queues(worker, ns)
        return (doc, table) if reserved(doc, STEPS_CQ).get("nvidia.com/gpu") == "2" else None

    # The dispatch Workload asks for every replicatedJob at once (5 CPUs, 2 GPUs); once the
    # initializers succeeded, Kueue's reclaimablePods (computed by each side's Kueue from the
    # TrainJob's jobsStatus: trainjob_controller.go ReclaimablePods) gives their 2 CPUs back.
    running = {"cpu": "3", "memory": "3Gi", "nvidia.com/gpu": "2"}

    def manager_shows() -> tuple[Json, Json, str] | None:
        wl = next(iter(manager.list(KUEUE, "workloads", ns)))
        doc, table = queues("manager", ns)
        got = wl["status"].get("reclaimablePods"), reserved(doc, DISPATCH_CQ)
        return (wl, doc, table) if got == (initialized, running) else None

    initialized = [{"name": r, "count": 1} for r in RJOBS[:2]]
    wdoc, wtable = wait_until(f"{worker}: the trainer step holds 2 GPUs", trainer_holds, 180)
    wl, mdoc, mtable = wait_until("manager: the initializers' quota given back", manager_shows, 30)
    print(f"$ trainweave queues -n {ns}  # manager\n{mtable}")
    print(f"$ trainweave queues -n {ns}  # {worker}\n{wtable}")
    assert reserved(mdoc, STEPS_CQ) == {}
    assert reserved(wdoc, STEPS_CQ) == {"cpu": "2", "memory": "2Gi", "nvidia.com/gpu": "2"}
    # the worker's copy of the dispatch Workload holds the same on the worker's dispatch queue
    assert reserved(wdoc, DISPATCH_CQ) == running
    psa = wl["status"]["admission"]["podSetAssignments"]
    shown = {
        "podSets": [(p["name"], p["count"]) for p in wl["spec"]["podSets"]],
        "resourceUsage": {a["name"]: a["resourceUsage"] for a in psa},
        "reclaimablePods": wl["status"].get("reclaimablePods"),
    }
    print(json.dumps(shown, indent=2))
    assert shown["podSets"] == [(r, 2 if r == "node" else 1) for r in RJOBS]

    def complete(kube: Kube) -> Json | None:
        tj = get_tj(kube, ns)
        return tj if condition_is(tj, "Complete") else None

    # read on the worker the moment it is Complete: once the manager's Workload finishes,
    # MultiKueue deletes the worker's copies (multikueue/workload.go), trainweave's Workflow,
    # pods and step Workloads with them
    remote = wait_until(f"{worker}: TrainJob Complete", lambda: complete(wk), timeout=300)
    t_worker = time.monotonic()
    ran = [w["metadata"]["name"] for w in wk.list(ARGO, "workflows", ns)]
    steps = [wl for wl in wk.list(KUEUE, "workloads", ns) if wl["spec"]["queueName"] != "dispatch"]
    local = wait_until("manager: TrainJob Complete", lambda: complete(manager), timeout=120)
    timings["status_lag_to_manager_s"] = time.monotonic() - t_worker
    timings["submit_to_complete_on_manager_s"] = time.monotonic() - t0

    assert remote["spec"].get("managedBy") in (None, "trainer.kubeflow.org/trainjob-controller")
    assert local["status"].get("jobsStatus") == remote["status"].get("jobsStatus")
    assert [c["type"] for c in local["status"]["conditions"]] == [
        c["type"] for c in remote["status"]["conditions"]
    ]
    # trainweave ran it there, per step; nothing on the manager or the other worker
    assert ran == ["ft"]
    assert len(steps) >= 3, [wl["metadata"]["name"] for wl in steps]
    for idle in ("manager", other):
        assert clusters[idle].list(ARGO, "workflows", ns) == []
        assert clusters[idle].core.list_namespaced_pod(ns).items == []
    assert get_tj(clusters[other], ns) is None
    wait_until(f"{worker}: the finished copy removed", lambda: get_tj(wk, ns) is None, 120)

    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", ns,
         "--kubeconfig", str(kubeconfig("manager"))],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    print(out)
    assert f"dispatched by MultiKueue: worker {worker}" in out
    assert "admission check multikueue: Ready" in out

    sdk_out, sdk_err = sdk.communicate(timeout=300)
    assert sdk.returncode == 0, sdk_err[-3000:]
    got = json.loads(sdk_out.strip().splitlines()[-1])
    print(json.dumps(got, indent=2))
    # the manager runs no pod: the SDK sees no steps, and its status goes from Created (the
    # conditions are there, no Complete/Failed yet) straight to Complete
    assert got["waited"] == got["status"] == "Complete"
    assert got["seen"][-1] == "Complete" and set(got["seen"]) <= {"Created", "Complete"}
    assert got["steps"] == [] and got["num_nodes"] == 2 and got["listed"] == ["ft"]
    print(json.dumps(timings, indent=2))
    Path(os.environ.get("TMPDIR", "/tmp"), "multicluster-timings.json").write_text(
        json.dumps(timings, indent=2)
    )
