"""A TrainJob dispatched whole by MultiKueue (issue 21): created on the manager in the dispatch
LocalQueue, admitted there (Kueue v0.19.2 pkg/controller/admissionchecks/multikueue), copied to
a worker (pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go SyncJob: managedBy
cleared), unsuspended there by the worker's Kueue when its copy of the Workload is admitted,
run step by step by trainweave on that worker, and its status copied back to the manager's
TrainJob. Timings are printed and written to $TMPDIR/multicluster-timings.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.kube import ARGO, KUEUE, Kube, condition_is, wait_until

from .conftest import WORKERS, get_tj, kubeconfig, submit

pytestmark = pytest.mark.e2e
Json = dict[str, Any]


def test_trainjob_runs_whole_on_one_worker_and_reports_back(
    clusters: dict[str, Kube], mc_namespace: str
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    t0 = time.monotonic()
    worker = submit(clusters, ns, {"node": "4s"})
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
    print(json.dumps(timings, indent=2))
    Path(os.environ.get("TMPDIR", "/tmp"), "multicluster-timings.json").write_text(
        json.dumps(timings, indent=2)
    )
