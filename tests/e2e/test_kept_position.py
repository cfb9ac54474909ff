"""Kept queue position on the engines (docs/admins.md "Kept queue position", design D21).

Three llm-finetune pipelines on a GPU ClusterQueue with room for one trainer (2 GPUs): C holds
the GPUs first; A (older, initializers 8 s) and B (newer, initializers 1 s) then both wait for
them. Kueue admits the older Workload first (kueue v0.19.2 ``GetQueueOrderTimestamp``: creation
time). Without kept position B's trainer Workload is created first (when its pods are), so B's
trainer is admitted before A's; with ``--kept-position`` A's trainer Workload was created, gated,
at A's start, Kueue adopted it when A's pods came, and A's trainer is admitted first.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from .controller_proc import ControllerProc
from .kube import ARGO, KUEUE, Kube, condition, condition_is, wait_until
from .pipelines import apply, example, trainjob, wait_condition

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
GATE = "kueue.x-k8s.io/admission-gated-by"
DISRUPTIONS = "trainweave.io/disruptions"  # the pods Kueue stopped, on the Workflow
SECOND = timedelta(seconds=1)


@pytest.fixture
def kept_controller(
    kube: Kube, namespace: str, controller_kubeconfig: Path
) -> Iterator[Callable[[bool], ControllerProc]]:
    """Start the test's controller, with ``--kept-position`` or without."""
    procs: list[ControllerProc] = []

    def start(kept: bool) -> ControllerProc:
        args = ["--kept-position"] if kept else []
        p = ControllerProc(namespace, "a", controller_kubeconfig, args=args)
        procs.append(p)
        wait_until("controller ready", lambda: p.get("/readyz")[0] == 200, timeout=60)
        return p

    yield start
    for p in procs:
        p.stop(signal.SIGKILL)
    if procs:
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(
                procs[0].lease_name, procs[0].lease_namespace
            )
        except client.ApiException as e:
            if e.status != 404:
                raise


def _pipeline(kube: Kube, ns: str, name: str, init: str, node: str) -> None:
    durations = {"dataset-initializer": init, "model-initializer": init, "node": node}
    tj, rt = example(ns, name, nodes=1, gpus=2, durations=durations, runtime_name=f"rt-{name}")
    tj["spec"]["runtimeRef"]["name"] = f"rt-{name}"
    apply(kube, ns, tj, rt)


def _after_workflow_second(kube: Kube, ns: str, tj: str) -> None:
    """Wait until the clock has left the second ``tj``'s Workflow was created in (after its kept
    Workloads): Kueue's timestamps have whole seconds, and equal ones are ordered by UID."""
    wf = wait_until(f"{tj}'s Workflow", lambda: kube.get(ARGO, "workflows", tj, ns))
    created = datetime.fromisoformat(wf["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
    wait_until(f"a second after {tj}'s start", lambda: datetime.now(UTC) >= created + SECOND)


def _trainer(kube: Kube, ns: str, tj: str) -> Json | None:
    return kube.get(KUEUE, "workloads", f"{tj}-node-a0", ns)


def _admitted(kube: Kube, ns: str, tj: str) -> bool:
    return condition_is(_trainer(kube, ns, tj), "Admitted")


@pytest.mark.parametrize("kept", [False, True], ids=["without", "with-kept-position"])
def test_the_older_pipeline_keeps_its_place(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    kept_controller: Callable[[bool], ControllerProc],
    kept: bool,
) -> None:
    queues(gpu_quota=2)
    kept_controller(kept)
    _pipeline(kube, namespace, "c", "1s", "30s")
    wait_until("C's trainer admitted", lambda: _admitted(kube, namespace, "c"), timeout=120)
    _pipeline(kube, namespace, "a", "8s", "1s")
    if kept:  # A's later steps exist from its start, gated, holding nothing
        gated = wait_until("A's trainer Workload", lambda: _trainer(kube, namespace, "a"))
        assert gated["metadata"]["annotations"][GATE] == "trainweave.io/predecessors"
        reserved = wait_until(
            "A's trainer AdmissionGated",
            lambda: condition(_trainer(kube, namespace, "a") or {}, "QuotaReserved"),
        )
        assert (reserved["status"], reserved["reason"]) == ("False", "AdmissionGated")
        kept_uid = gated["metadata"]["uid"]
    _after_workflow_second(kube, namespace, "a")
    _pipeline(kube, namespace, "b", "1s", "1s")

    def both_waiting() -> bool:
        wls = [_trainer(kube, namespace, t) for t in ("a", "b")]
        return all(wl and GATE not in (wl["metadata"].get("annotations") or {}) for wl in wls)

    wait_until("A's and B's trainers both queued", both_waiting, timeout=120)
    assert _admitted(kube, namespace, "c"), "C's trainer ended before A and B both queued"
    assert not _admitted(kube, namespace, "a") and not _admitted(kube, namespace, "b")

    def first() -> str:
        return "".join(t for t in ("a", "b") if _admitted(kube, namespace, t))

    winner = wait_until("a trainer admitted after C's", first, timeout=120, interval=0.1)
    assert winner == ("a" if kept else "b")
    a_wl = _trainer(kube, namespace, "a")
    assert a_wl is not None
    if kept:  # Kueue adopted the Workload made at A's start: same object, same creation time
        assert a_wl["metadata"]["uid"] == kept_uid
    for tj in ("a", "b", "c"):
        wait_condition(kube, namespace, "Complete", timeout=180, name=tj)


@pytest.mark.parametrize("kept", [False, True], ids=["without", "with-kept-position"])
def test_a_kept_position_preempts_newer_work_under_lower_or_newer_equal_priority(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    kept_controller: Callable[[bool], ControllerProc],
    kept: bool,
) -> None:
    """The reason kept position is off by default: A (older, initializers 20 s) and B (newer,
    initializers 1 s) of the same priority; B's trainer runs while A initializes. Under
    ``withinClusterQueue: LowerOrNewerEqualPriority`` A's kept (older) trainer Workload preempts
    B's running one (kueue v0.19.2 ``preemption_policy.go`` ``SatisfiesPreemptionPolicy``);
    without kept position A's Workload is the newer one and waits. Both complete either way."""
    queues(gpu_quota=2)
    cq = f"{namespace}-gpu"
    policy = {"spec": {"preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority"}}}
    kube.custom.patch_cluster_custom_object(*KUEUE, "clusterqueues", cq, policy)
    kept_controller(kept)
    _pipeline(kube, namespace, "a", "20s", "3s")
    _after_workflow_second(kube, namespace, "a")
    _pipeline(kube, namespace, "b", "1s", "30s")
    wait_until("B's trainer admitted", lambda: _admitted(kube, namespace, "b"), timeout=120)
    a_wl = _trainer(kube, namespace, "a")  # A still initializing: gated (kept) or not made yet
    assert (a_wl is not None and GATE in a_wl["metadata"]["annotations"]) == kept, a_wl
    wait_until("A's trainer admitted", lambda: _admitted(kube, namespace, "a"), timeout=120)
    for tj in ("a", "b"):
        wait_condition(kube, namespace, "Complete", timeout=180, name=tj)
    b_wf = kube.workflow(namespace, "b")
    disrupted = (b_wf["metadata"].get("annotations") or {}).get(DISRUPTIONS, "")
    assert ("node" in disrupted) == kept, disrupted


def test_a_failed_pipeline_admits_nothing_for_the_steps_that_will_not_run(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    kept_controller: Callable[[bool], ControllerProc],
) -> None:
    """The trainer fails (its podFailurePolicy FailJob on exit 1): the exporter's kept Workload,
    made gated at the start, is never admitted and is deleted with the pipeline's end."""
    queues()
    kept_controller(True)
    tj, rt = example(namespace, "f", nodes=1, codes={"node": [1]})
    apply(kube, namespace, tj, rt)
    exporter = "f-model-exporter-a0"
    gated = wait_until("the exporter's kept Workload", lambda: kube.workload(namespace, exporter))
    assert gated["metadata"]["annotations"][GATE] == "trainweave.io/predecessors"
    admitted: list[str] = []

    def failed_and_gone() -> bool:
        wl = kube.workload(namespace, exporter)
        if wl is not None and condition_is(wl, "QuotaReserved"):
            admitted.append(wl["metadata"]["uid"])
        return wl is None and condition_is(trainjob(kube, namespace, "f"), "Failed")

    wait_until("Failed, the exporter's Workload deleted", failed_and_gone, 150, interval=0.1)
    assert admitted == []
