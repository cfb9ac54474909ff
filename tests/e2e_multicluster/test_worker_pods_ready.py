"""WaitForPodsReady on the workers (issue 21): both workers' Kueue at a 20 s timeout
(`hack/multicluster.py pods-ready NAME 20s`, back to the local default after), a TrainJob whose
trainer runs 40 s. Kueue v0.19.2's TrainJob integration calls the worker's whole-TrainJob
Workload PodsReady only when every replicatedJob's Jobs are ready or succeeded at once
(pkg/controller/jobs/trainjob/trainjob_controller.go PodsReady: the sum of ready + succeeded
over the TrainJob's jobsStatus against the replicas of the JobSet it builds from the runtime).
trainweave runs the steps one after another, so with the exporter still to come that sum stays
one short while the trainer runs: the worker evicts its copy at the timeout (PodsReadyTimeout),
suspends the TrainJob there (trainweave stops its Workflow), and MultiKueue on the manager
evicts its Workload too and dispatches it again from the start. Hence the worker settings in
docs/multicluster.md."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.e2e.kube import KUEUE, Kube, condition_is, wait_until

from .conftest import RJOBS, WORKERS, Json, get_tj, submit

pytestmark = pytest.mark.e2e
MC = [sys.executable, "hack/multicluster.py"]


@pytest.fixture
def short_pods_ready() -> Iterator[None]:
    for w in WORKERS:
        subprocess.run([*MC, "pods-ready", w, "20s"], check=True)
    yield
    for w in WORKERS:
        subprocess.run([*MC, "pods-ready", w, "default"], check=True)


def copy_of(kube: Kube, ns: str) -> Json | None:
    """The worker's copy of the dispatch Workload (MultiKueue's, in the `dispatch` queue)."""
    return next(
        (w for w in kube.list(KUEUE, "workloads", ns) if w["spec"]["queueName"] == "dispatch"), None
    )


def jobs(tj: Json | None) -> dict[str, tuple[int, int]]:
    """replicatedJob -> (ready, succeeded) from a TrainJob's jobsStatus."""
    st = ((tj or {}).get("status") or {}).get("jobsStatus") or []
    return {j["name"]: (j.get("ready", 0), j.get("succeeded", 0)) for j in st}


def evicted(kube: Kube, ns: str, reason: str) -> Callable[[], bool]:
    def seen() -> bool:
        events = kube.core.list_namespaced_event(ns).items
        return any(e.reason == f"EvictedDueTo{reason}" for e in events)

    return seen


def test_worker_evicts_a_dispatched_trainjob_at_its_pods_ready_timeout(
    short_pods_ready: None, clusters: dict[str, Kube], mc_namespace: str
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    worker = submit(clusters, ns, {"node": "40s"})
    wk = clusters[worker]
    # the trainer runs (its Job ready, the initializers succeeded, the exporter not started):
    # 3 of 4, and the worker's copy is not PodsReady
    trainer = {"dataset-initializer": (0, 1), "model-initializer": (0, 1), "node": (1, 0)}
    trainer["model-exporter"] = (0, 0)
    wait_until(f"{worker}: the trainer running", lambda: jobs(get_tj(wk, ns)) == trainer, 120)
    wl = copy_of(wk, ns) or {}
    assert condition_is(wl, "Admitted") and not condition_is(wl, "PodsReady")
    assert list(jobs(get_tj(wk, ns))) == list(RJOBS)

    # Kueue's event on each Workload evicted (pkg/workload/evict/evict.go: Evicted + "DueTo" +
    # reason): the Workloads themselves are re-admitted or deleted within a second
    wait_until(f"{worker}: its copy evicted", evicted(wk, ns, "PodsReadyTimeout"), 60)
    wait_until("manager: its Workload evicted", evicted(manager, ns, "AdmissionCheck"), 60)

    def dispatched_again() -> str | None:  # admitted again, placed on a worker, run from the start
        for got in manager.list(KUEUE, "workloads", ns):
            if condition_is(got, "Admitted") and not condition_is(got, "Evicted"):
                return str((got.get("status") or {}).get("clusterName") or "") or None
        return None

    again = wait_until("manager: dispatched again", dispatched_again, 120)
    print(f"dispatched again to {again}")
    assert not condition_is(get_tj(manager, ns), "Complete")
