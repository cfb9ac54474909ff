"""A disruption never costs a retry (issue 20, item 2), on the engines with kwok.

The llm-finetune example's 2-pod trainer (``backoffLimitPerIndex: 2``, FailJob on exit 1 or 2
of container ``node``, Ignore DisruptionTarget) runs 40 s on its first attempt and then exits 1:
the "peer lost" exit of a rank whose gang was broken. While both ranks run, rank 1 is evicted
(the Eviction API sets ``DisruptionTarget``: ``EvictionByEvictionAPI``), or its node is drained
(cordon, then evict the node's pods, as ``kubectl drain``). Without the controller's disruption
rule, rank 0's exit 1 would fail the TrainJob at once (a FailJob code); with it, the evicted pod
and its peer count for nothing, both ranks run again in the same Workload and the pipeline ends
``Complete``. In the drain test each rank's second attempt exits 137, a real failure after the
disruption: it counts once per rank, within the budget.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from trainweave.integrations.views.read import disruption

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, Pod, condition, condition_is, default_kubeconfig, wait_until
from .pipelines import apply, example, trainer_spent, trainjob, workflows

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
NODE_NAME = "workflows.argoproj.io/node-name"


def trainer(namespace: str, outcomes: dict[str, str]) -> tuple[Json, Json]:
    """The example with the trainer's per-attempt kwok knobs (``trainweave.test/<knob>.<n>``)."""
    tj, rt = example(namespace, nodes=2)
    (node,) = [j for j in rt["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node"]
    ann = node["template"]["spec"]["template"]["metadata"]["annotations"]
    ann.update(outcomes)
    return tj, rt


def slot(pod: Pod) -> str:
    """``node-0-1(0)`` of a step pod (Argo's node name)."""
    return str((pod.metadata.annotations or {}).get(NODE_NAME, "")).rsplit(".", 1)[-1]


def running_ranks(kube: Kube, namespace: str) -> dict[str, Pod] | None:
    pods = {slot(p): p for p in kube.pods(namespace, "trainweave.io/step=node")}
    first = {s: p for s, p in pods.items() if s.endswith("(0)")}
    live = [p for p in first.values() if p.status.phase == "Running" and p.spec.node_name]
    return first if len(first) == 2 and len(live) == 2 else None


def evict(kube: Kube, pod: Pod) -> None:
    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=pod.metadata.namespace)
    )
    kube.core.create_namespaced_pod_eviction(pod.metadata.name, pod.metadata.namespace, body)


def never_failed(kube: Kube, namespace: str) -> Iterator[None]:
    """Asserts the TrainJob is not Failed, each time it is looked at."""
    while True:
        cond = condition(trainjob(kube, namespace), "Failed")
        assert not (cond and cond["status"] == "True"), cond
        yield


def finish(kube: Kube, namespace: str, uid: str) -> tuple[Json, Json]:
    """Wait for Complete (never Failed on the way); the Workflow and the trainer's Workload,
    the same object all along."""
    check = never_failed(kube, namespace)

    def complete() -> Json | None:
        next(check)
        tj = trainjob(kube, namespace)
        cond = condition(tj, "Complete")
        return tj if cond and cond["status"] == "True" else None

    wait_until("TrainJob Complete", complete, timeout=300)
    (wf,) = workflows(kube, namespace)
    wl = kube.workload(namespace, "ft-node-a0")
    assert wl is not None and wl["metadata"]["uid"] == uid
    return wf, wl


def test_evicted_rank_and_its_lost_peer_cost_no_retry(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    queues()
    knobs = {"trainweave.test/duration.0": "40s", "trainweave.test/exit-code.0": "1",
             "trainweave.test/duration.1": "2s"}  # fmt: skip
    apply(kube, namespace, *trainer(namespace, knobs))
    ranks = wait_until("both ranks running", lambda: running_ranks(kube, namespace), timeout=180)
    wl = kube.workload(namespace, "ft-node-a0")
    assert wl is not None
    evict(kube, ranks["node-0-1(0)"])
    wf, _ = finish(kube, namespace, wl["metadata"]["uid"])

    record = disruption.decode(wf["metadata"]["annotations"][disruption.ANNOTATION])
    ((mark,),) = record.values()
    assert (mark.type, mark.reason, mark.pods) == (
        "DisruptionTarget",
        "EvictionByEvictionAPI",
        ("node-0-1(0)",),
    )
    nodes = {n["displayName"]: n for n in wf["status"]["nodes"].values() if n.get("type") == "Pod"}
    assert nodes["node-0-0(0)"]["message"].startswith("node: Error (exit code 1)"), nodes
    assert nodes["node-0-1(0)"]["phase"] == "Failed", nodes
    assert {nodes[f"node-0-{i}(1)"]["phase"] for i in (0, 1)} == {"Succeeded"}
    assert trainer_spent(wf) == {}  # the budget (2 per rank) is intact
    assert "trainweave.io/stopped-for" not in wf["metadata"]["annotations"]
    events = kube.core.list_namespaced_event(namespace, field_selector="reason=StepDisrupted")
    (ev,) = events.items
    assert ev.involved_object.kind == "TrainJob" and "node-0-1(0)" in str(ev.message), ev
    status = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", namespace,
         "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    print(
        f"\n{disruption.ANNOTATION}: {wf['metadata']['annotations'][disruption.ANNOTATION]}"
        f"\nEvent {ev.reason}: {ev.message}\n$ trainweave status ft\n{status.stdout}"
    )


@pytest.mark.serial  # cordons a shared GPU node
def test_drained_node_costs_no_retry_and_a_real_failure_after_counts_once(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    queues()
    knobs = {"trainweave.test/duration.0": "40s", "trainweave.test/exit-code.0": "1",
             "trainweave.test/duration.1": "2s", "trainweave.test/exit-code.1": "137",
             "trainweave.test/duration.2": "2s"}  # fmt: skip
    apply(kube, namespace, *trainer(namespace, knobs))
    ranks = wait_until("both ranks running", lambda: running_ranks(kube, namespace), timeout=180)
    wl = kube.workload(namespace, "ft-node-a0")
    assert wl is not None
    drained = ranks["node-0-1(0)"].spec.node_name
    kube.core.patch_node(drained, {"spec": {"unschedulable": True}})
    try:  # kubectl drain: cordon, then evict the node's pods (here: this test's)
        on_node = [p for p in kube.pods(namespace) if p.spec.node_name == drained]
        for p in on_node:
            evict(kube, p)

        def replaced() -> Pod | None:
            pods = {slot(p): p for p in kube.pods(namespace, "trainweave.io/step=node")}
            new = pods.get("node-0-1(1)")
            return new if new is not None and new.spec.node_name else None

        moved = wait_until("rank 1 replaced on another node", replaced, timeout=120)
        assert moved.spec.node_name != drained
    finally:
        kube.core.patch_node(drained, {"spec": {"unschedulable": False}})
    wf, _ = finish(kube, namespace, wl["metadata"]["uid"])

    record = disruption.decode(wf["metadata"]["annotations"][disruption.ANNOTATION])
    marks = record["node"]
    assert {(m.type, m.reason) for m in marks} == {("DisruptionTarget", "EvictionByEvictionAPI")}
    assert "node-0-1(0)" in {p for m in marks for p in m.pods}
    # each rank's 137 after the drain counts once; the evicted rank and its peer's exit 1 do not
    assert trainer_spent(wf) == {"node-0-0": 1, "node-0-1": 1}
    assert "trainweave.io/stopped-for" not in wf["metadata"]["annotations"]


def urgent_group(namespace: str, name: str, priority: str) -> Json:
    """A one-pod Kueue pod group of higher priority asking the trainer's 2 GPUs (no owner: kwok
    keeps it Running until its Workload is deleted)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kueue.x-k8s.io/queue-name": "gpu",
                "kueue.x-k8s.io/pod-group-name": name,
                "kueue.x-k8s.io/priority-class": priority,
            },
            "annotations": {"kueue.x-k8s.io/pod-group-total-count": "1"},
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.invalid/trainweave/urgent:test",
                    "resources": {
                        "requests": {"cpu": "1", "memory": "1Gi"},
                        "limits": {"nvidia.com/gpu": "2"},
                    },
                }
            ],
        },
    }


def test_two_kueue_preemptions_cost_no_retry_and_real_failures_after_count(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """Kueue preempts the running trainer twice (``TerminationTarget``); then each rank exits 3
    twice (counted: 2 of ``backoffLimitPerIndex: 2``) and succeeds. Argo's ``retries`` counts the
    preempted attempts too, so Argo's own budget check would have failed the step at the second
    exit 3; the controller's judgement does not."""
    queues(gpu_quota=2)
    high = f"{namespace}-high"
    kube.create(
        KUEUE,
        "workloadpriorityclasses",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": high},
            "value": 1000,
        },
    )
    knobs = {"trainweave.test/duration.0": "600s", "trainweave.test/duration.1": "600s",
             "trainweave.test/duration.2": "2s", "trainweave.test/exit-code.2": "3",
             "trainweave.test/duration.3": "2s", "trainweave.test/exit-code.3": "3",
             "trainweave.test/duration.4": "2s"}  # fmt: skip
    try:
        apply(kube, namespace, *trainer(namespace, knobs))
        check = never_failed(kube, namespace)
        uid = ""
        for round_ in range(2):

            def ranks(round_: int = round_) -> bool:
                next(check)
                pods = {slot(p): p for p in kube.pods(namespace, "trainweave.io/step=node")}
                now = [pods.get(f"node-0-{i}({round_})") for i in (0, 1)]
                return all(p is not None and p.status.phase == "Running" for p in now)

            wait_until(f"round {round_}: both ranks running", ranks, timeout=300)
            wl = kube.workload(namespace, "ft-node-a0")
            assert wl is not None and (not uid or wl["metadata"]["uid"] == uid)
            uid = wl["metadata"]["uid"]
            urgent = f"urgent-{round_}"
            pod = urgent_group(namespace, urgent, high)
            kube.core.create_namespaced_pod(namespace, cast(Any, pod))
            kube.wait_workload(
                namespace,
                "ft-node-a0",
                lambda w: condition_is(w, "Evicted") and condition_is(w, "QuotaReserved", "False"),
                "preempted",
            )
            kube.wait_workload(namespace, urgent, lambda w: condition_is(w, "QuotaReserved"), "in")
            kube.delete(KUEUE, "workloads", urgent, namespace)  # frees the quota: re-admission
        wf, _ = finish(kube, namespace, uid)
    finally:
        kube.delete(KUEUE, "workloadpriorityclasses", high)

    marks = disruption.decode(wf["metadata"]["annotations"][disruption.ANNOTATION])["node"]
    assert {(m.type, m.reason) for m in marks} == {
        ("TerminationTarget", "WorkloadEvictedDueToPreempted")
    }
    stopped = {p for m in marks for p in m.pods}
    assert stopped == {"node-0-0(0)", "node-0-1(0)", "node-0-0(1)", "node-0-1(1)"}, stopped
    assert trainer_spent(wf) == {
        "node-0-0": 2,
        "node-0-1": 2,
    }  # the two exit 3s, not the preemptions
    status = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", namespace,
         "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = status.stdout.splitlines()
    disrupted = [ln.strip() for ln in lines if ln.strip().startswith("disrupted node:")]
    assert len(disrupted) == len(marks), status.stdout
    assert all("WorkloadEvictedDueToPreempted" in ln for ln in disrupted), status.stdout
    assert "  retries counted node/node: node-0-0=2, node-0-1=2 (budget 2 per pod)" in lines, (
        status.stdout
    )
    print(f"\n$ trainweave status ft\n{status.stdout}")
