"""A TrainJob dispatched whole by MultiKueue (issue 21): created on the manager in the dispatch
LocalQueue, admitted there (Kueue v0.19.2 pkg/controller/admissionchecks/multikueue), copied to
a worker (pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go SyncJob: managedBy
cleared), unsuspended there by the worker's Kueue when its copy of the Workload is admitted,
run step by step by trainweave on that worker, and its status copied back to the manager's
TrainJob. Timings are printed and written to $TMPDIR/multicluster-timings.json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controller_proc import ControllerProc
from tests.e2e.kube import ARGO, E2E_NAMESPACE_LABEL, KUEUE, Kube, condition_is, wait_until
from tests.e2e.pipelines import TRAINER, apply, example

from .conftest import MEMBERS, kubeconfig

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
WORKERS = MEMBERS[1:]
DISPATCH_CQ, STEPS_CQ = "multicluster-dispatch", "multicluster-steps"  # hack/multicluster.py


def local_queue(name: str, cq: str, ns: str) -> Json:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def active(kube: Kube, lq: str, ns: str) -> Callable[[], bool]:
    return lambda: condition_is(kube.get(KUEUE, "localqueues", lq, ns), "Active")


def ready(p: ControllerProc) -> Callable[[], bool]:
    return lambda: p.get("/readyz")[0] == 200


@pytest.fixture
def mc_namespace(clusters: dict[str, Kube]) -> Iterator[str]:
    """The same namespace on all three (MultiKueue copies into the same namespace): the runtime
    and a `dispatch` LocalQueue everywhere, the step LocalQueues `cpu` and `gpu` on the workers;
    `trainweave controller` on each worker, with the worker's kubeconfig."""
    ns = f"mc-{uuid.uuid4().hex[:6]}"
    procs = []
    for member, kube in clusters.items():
        kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true"})
        names = {"dispatch": DISPATCH_CQ}
        if member != "manager":
            names |= {"cpu": STEPS_CQ, "gpu": STEPS_CQ}
            if (
                kube.core.list_namespace(field_selector="metadata.name=trainweave-system").items
                == []
            ):
                kube.create_namespace("trainweave-system", {})
        for lq, cq in names.items():
            kube.create(KUEUE, "localqueues", local_queue(lq, cq, ns), ns)
            wait_until(f"{member}: LocalQueue {lq} Active", active(kube, lq, ns), timeout=60)
        if member != "manager":
            procs.append(ControllerProc(ns, member, kubeconfig(member)))
    for p in procs:
        wait_until("controller /readyz", ready(p), timeout=60)
    yield ns
    for p in procs:
        p.stop(signal.SIGKILL)
    for kube in clusters.values():
        for wl in kube.list(KUEUE, "workloads", ns):
            kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
        kube.delete_namespace(ns)


def get_tj(kube: Kube, ns: str) -> Json | None:
    return kube.get(TRAINER, "trainjobs", "ft", ns)


def test_trainjob_runs_whole_on_one_worker_and_reports_back(
    clusters: dict[str, Kube], mc_namespace: str
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    tj, rt = example(ns, durations={"node": "4s"})
    tj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "dispatch"}
    for w in WORKERS:
        clusters[w].create(TRAINER, "trainingruntimes", rt, ns)
    t0 = time.monotonic()
    apply(manager, ns, tj, rt)
    timings: dict[str, float] = {}

    # Kueue's webhook defaulted managedBy (jobframework.ApplyDefaultForManagedBy)
    assert (get_tj(manager, ns) or {})["spec"].get("managedBy") == "kueue.x-k8s.io/multikueue"

    def placed() -> str | None:
        for wl in manager.list(KUEUE, "workloads", ns):
            name = (wl.get("status") or {}).get("clusterName")
            if name:
                return str(name)
        return None

    worker = wait_until("manager Workload has a clusterName", placed, timeout=180)
    timings["submit_to_dispatched_s"] = time.monotonic() - t0
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

    def complete(kube: Kube) -> bool:
        return condition_is(get_tj(kube, ns), "Complete")

    wait_until(f"{worker}: TrainJob Complete", lambda: complete(wk), timeout=300)
    t_worker = time.monotonic()
    wait_until("manager: TrainJob Complete", lambda: complete(manager), timeout=120)
    timings["status_lag_to_manager_s"] = time.monotonic() - t_worker
    timings["submit_to_complete_on_manager_s"] = time.monotonic() - t0

    remote, local = get_tj(wk, ns) or {}, get_tj(manager, ns) or {}
    assert remote["spec"].get("managedBy") in (None, "trainer.kubeflow.org/trainjob-controller")
    assert local["status"].get("jobsStatus") == remote["status"].get("jobsStatus")
    assert [c["type"] for c in local["status"]["conditions"]] == [
        c["type"] for c in remote["status"]["conditions"]
    ]
    # trainweave ran it there, per step; nothing on the manager or the other worker
    assert [w["metadata"]["name"] for w in wk.list(ARGO, "workflows", ns)]
    for idle in ("manager", other):
        assert clusters[idle].list(ARGO, "workflows", ns) == []
        assert clusters[idle].core.list_namespaced_pod(ns).items == []
    assert get_tj(clusters[other], ns) is None
    steps = [wl for wl in wk.list(KUEUE, "workloads", ns) if wl["spec"]["queueName"] != "dispatch"]
    assert len(steps) >= 3, [wl["metadata"]["name"] for wl in steps]

    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", ns,
         "--kubeconfig", str(kubeconfig("manager"))],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    print(out)
    assert f"dispatched by MultiKueue: worker {worker}" in out
    assert "admission check multikueue: Ready" in out
    print(json.dumps(timings, indent=2))
    Path(os.environ.get("TMPDIR", "/tmp"), "multicluster-timings.json").write_text(
        json.dumps(timings, indent=2)
    )
