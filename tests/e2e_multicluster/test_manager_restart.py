"""A manager restart mid-run (issue 21): the manager's Kueue and kube-apiserver stopped while
the worker runs the dispatched TrainJob (`hack/multicluster.py lose manager`), started again
once the worker has finished it (`return manager`). The worker runs on alone (MultiKueue is the
manager's: the worker's Kueue and trainweave need nothing from it); the TrainJob completes once
(the same copy, one Workflow, nothing on the other worker) and the manager's status catches up:
its Workload reconnects to the remote copy (Kueue v0.19.2
pkg/controller/admissionchecks/multikueue/workload.go) and copies the finished status over."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.e2e.kube import ARGO, KUEUE, Kube, condition_is, wait_until

from .conftest import WORKERS, Json, get_tj, submit

pytestmark = pytest.mark.e2e
MC = [sys.executable, "hack/multicluster.py"]
RJOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"  # trainweave's pods carry it, as JobSet's


@pytest.fixture
def manager_back() -> Iterator[None]:
    """Whatever happens in the test, the manager is started again after it."""
    yield
    subprocess.run([*MC, "return", "manager"], check=False)


def test_manager_restart_mid_run_changes_nothing(
    clusters: dict[str, Kube], mc_namespace: str, manager_back: None
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    worker = submit(clusters, ns, {"node": "10s"})
    wk, other = clusters[worker], clusters[next(w for w in WORKERS if w != worker)]

    def trainer_running() -> bool:
        pods = wk.core.list_namespaced_pod(ns).items
        return any(
            ((p.metadata and p.metadata.labels) or {}).get(RJOB_LABEL) == "node"
            and p.status is not None
            and p.status.phase == "Running"
            for p in pods
        )

    wait_until(f"{worker}: the trainer Running", trainer_running, timeout=180)
    uid = (get_tj(wk, ns) or {})["metadata"]["uid"]
    t0 = time.monotonic()
    subprocess.run([*MC, "lose", "manager"], check=True)
    print(f"manager down in {time.monotonic() - t0:.1f}s")

    def complete(kube: Kube) -> bool:
        return condition_is(get_tj(kube, ns), "Complete")

    wait_until(f"{worker}: TrainJob Complete without the manager", lambda: complete(wk), 300)
    remote = get_tj(wk, ns) or {}
    assert remote["metadata"]["uid"] == uid  # the same copy ran on
    assert [w["metadata"]["name"] for w in wk.list(ARGO, "workflows", ns)] == ["ft"]
    t1 = time.monotonic()
    subprocess.run([*MC, "return", "manager"], check=True)
    t2 = time.monotonic()

    def manager_complete() -> Json | None:
        tj = get_tj(manager, ns)
        return tj if condition_is(tj, "Complete") else None

    local = wait_until("manager: TrainJob Complete", manager_complete, 180)
    print(
        f"manager back in {t2 - t1:.1f}s, its TrainJob Complete {time.monotonic() - t2:.1f}s later"
    )
    assert local["status"].get("jobsStatus") == remote["status"].get("jobsStatus")
    wl = next(iter(manager.list(KUEUE, "workloads", ns)))
    assert condition_is(wl, "Finished") and wl["status"]["clusterName"] == worker
    assert get_tj(other, ns) is None and other.list(ARGO, "workflows", ns) == []
    wait_until(f"{worker}: the finished copy removed", lambda: get_tj(wk, ns) is None, 120)
