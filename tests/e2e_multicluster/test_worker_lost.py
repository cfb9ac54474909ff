"""A worker lost mid-run (issue 21): its kube-apiserver killed (`hack/multicluster.py lose`)
while the TrainJob's first initializer runs there. At `workerLostTimeout` (60 s here) the
manager's Kueue evicts its Workload (the MultiKueue check goes Retry), and once the other
worker's copy has reported a status with no active Job, Kueue's TrainJob Stop goes through
(Kueue v0.19.2 pkg/controller/jobs/trainjob/trainjob_controller.go Stop refuses while the
copied jobsStatus has an active Job), the quota is released and the TrainJob dispatched again
to the other worker, where it completes once. When the lost worker returns, MultiKueue's garbage
collector removes the stale copy there and its quota goes back to 0. Lost *after* a
replicatedJob succeeded it is not dispatched again: docs/multicluster.md "A lost worker"."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import cast

import pytest

from tests.e2e.kube import ARGO, KUEUE, Kube, condition_is, wait_until

from .conftest import DISPATCH_CQ, STEPS_CQ, WORKERS, Json, controller_back, get_tj, placed, submit

pytestmark = pytest.mark.e2e
MC = [sys.executable, "hack/multicluster.py"]


@pytest.fixture
def lost() -> Iterator[list[str]]:
    """The workers this test loses, each returned after it whatever happens."""
    names: list[str] = []
    yield names
    for n in names:
        subprocess.run([*MC, "return", n], check=False)


def active(tj: Json | None, rjob: str) -> bool:
    st = ((tj or {}).get("status") or {}).get("jobsStatus") or []
    return any(j["name"] == rjob and j.get("active") for j in st)


def reserved(kube: Kube, cq: str) -> list[Json]:
    """A ClusterQueue's non-zero reservations."""
    body = cast(Json, kube.custom.get_cluster_custom_object(*KUEUE, "clusterqueues", cq))
    usage = (body.get("status") or {}).get("flavorsReservation") or []
    return [r for f in usage for r in f["resources"] if r["total"] not in ("0", 0)]


def test_lost_worker_trainjob_dispatched_again_and_stale_copy_removed(
    clusters: dict[str, Kube], mc_namespace: str, lost: list[str]
) -> None:
    ns, manager = mc_namespace, clusters["manager"]
    first = submit(clusters, ns, {"dataset-initializer": "25s", "node": "3s"})
    second = next(w for w in WORKERS if w != first)
    wait_until(
        "manager: the initializer active",
        lambda: active(get_tj(manager, ns), "dataset-initializer"),
        120,
    )
    lost.append(first)
    subprocess.run([*MC, "lose", first], check=True)
    t0 = time.monotonic()

    where = placed(manager, ns)
    wait_until(f"manager: dispatched again to {second}", lambda: where() == second, 240)
    timings = {"lost_to_dispatched_again_s": time.monotonic() - t0}

    def complete() -> Json | None:
        tj = get_tj(manager, ns)
        return tj if condition_is(tj, "Complete") else None

    done = wait_until("manager: TrainJob Complete", complete, 240)
    timings["lost_to_complete_s"] = time.monotonic() - t0
    st = done["status"]["jobsStatus"]
    assert {j["name"]: j["succeeded"] for j in st} == {
        "dataset-initializer": 1, "model-initializer": 1, "node": 1, "model-exporter": 1,
    }  # fmt: skip

    def finished() -> Json | None:
        wl = next(iter(manager.list(KUEUE, "workloads", ns)), None)
        return wl if condition_is(wl, "Finished") else None

    wl = wait_until("manager: its Workload Finished", finished, 60)
    assert wl["status"]["clusterName"] == second
    print(json.dumps(timings, indent=2))

    subprocess.run([*MC, "return", first], check=True)
    lost.remove(first)
    t1 = time.monotonic()
    # trainweave's controller there exited when it could not renew its Lease ("lost
    # leadership"); its Deployment would start it again: so does the test
    assert controller_back(ns, first)
    old = clusters[first]

    def stale_gone() -> bool:
        return (
            get_tj(old, ns) is None
            and old.list(KUEUE, "workloads", ns) == []
            and old.list(ARGO, "workflows", ns) == []
            and reserved(old, DISPATCH_CQ) == []
            and reserved(old, STEPS_CQ) == []
        )

    wait_until(f"{first}: the stale copy removed, its quota 0", stale_gone, 300)
    timings["returned_to_stale_copy_removed_s"] = time.monotonic() - t1
    print(json.dumps(timings, indent=2))
