"""What Argo Workflows and Kueue really do with "one workflow step = one Kueue pod group".

Each surprising behaviour is pinned here and written down in docs/engines.md. Pods are played
by kwok (hack/e2e/pod-stages.yaml): `trainweave.test/exit-code[.N]`, `trainweave.test/duration[.N]`.
"""

from __future__ import annotations

import ipaddress
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest

from .kube import (
    ARGO,
    KUEUE,
    Kube,
    Pod,
    condition,
    condition_is,
    default_kubeconfig,
    load_manifest,
    parse_time,
    pod_nodes,
    wait_until,
)

pytestmark = pytest.mark.e2e

GATE = "kueue.x-k8s.io/admission"
POOL = "trainweave.test/pool"
FINAL = ("Succeeded", "Failed", "Error")
Json = dict[str, Any]


# ------------------------------------------------------------------------------------------------
# fixtures and helpers


def submit(kube: Kube, namespace: str, manifest: str, **subst: str) -> str:
    wf = load_manifest(manifest, **subst)
    kube.create(ARGO, "workflows", wf, namespace)
    return str(wf["metadata"]["name"])


def make_pod_group(
    kube: Kube, ns: str, group: str, count: int, queue: str = "gpu", priority: str | None = None
) -> None:
    for i in range(count):
        pod = load_manifest(
            "pod-group.yaml", NS=ns, GROUP=group, INDEX=str(i), QUEUE=queue, COUNT=str(count)
        )
        if priority:
            pod["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority
        kube.core.create_namespaced_pod(ns, pod)


def reserved_at(wl: dict[str, Any]) -> datetime | None:
    c = condition(wl, "QuotaReserved")
    if c and c.get("status") == "True":
        return parse_time(c["lastTransitionTime"])
    return None


def gated(pod: Pod) -> bool:
    return any(g.name == GATE for g in pod.spec.scheduling_gates or [])


def finished_at(node: dict[str, Any]) -> datetime:
    return parse_time(node["finishedAt"])


def podsets(wl: dict[str, Any]) -> list[int]:
    return [int(ps["count"]) for ps in wl["spec"]["podSets"]]


def now_floor() -> datetime:
    """Now, rounded down to the second (API timestamps have second precision)."""
    return datetime.now(UTC).replace(microsecond=0)


def wf_message(wf: dict[str, Any]) -> str:
    st = wf.get("status") or {}
    nodes = {n["displayName"]: (n["phase"], n.get("message")) for n in st.get("nodes", {}).values()}
    return f"phase={st.get('phase')} message={st.get('message')} nodes={nodes}"


def finished(kube: Kube, ns: str, group: str) -> dict[str, Any]:
    """Wait for Kueue to mark the Workload Finished (from its pods, apart from Argo's phase)."""
    return kube.wait_workload(
        ns, group, lambda wl: condition_is(wl, "Finished"), "Finished", timeout=30
    )


def finalizers_removed(kube: Kube, ns: str, pod: str) -> None:
    """Wait for Kueue to take its finalizer off ``pod``."""
    wait_until(
        f"finalizers removed from pod {pod}",
        lambda: not cast(Pod, kube.core.read_namespaced_pod(pod, ns)).metadata.finalizers,
        timeout=30,
    )


class Watcher:
    """Polls a workflow and its Workloads until a predicate holds, recording what it saw."""

    def __init__(self, kube: Kube, ns: str, wf: str) -> None:
        self.kube, self.ns, self.wf = kube, ns, wf
        self.first_reserved: dict[str, datetime] = {}
        self.uids: dict[str, set[str]] = {}
        # (pod phases by pod group, workloads present); Workloads are read before pods, and pod
        # phases only move forward, so a Workload seen implies at least the pod phases read after
        # it. (Argo's node phases are not used here: Argo creates the next step's pods before it
        # persists the status that marks the previous step done.)
        self.seen: list[tuple[dict[str, set[str]], set[str]]] = []

    def poll(self) -> dict[str, Any]:
        wls = self.kube.list(KUEUE, "workloads", self.ns)
        for wl in wls:
            name = wl["metadata"]["name"]
            self.uids.setdefault(name, set()).add(wl["metadata"]["uid"])
            t = reserved_at(wl)
            if t and name not in self.first_reserved:
                self.first_reserved[name] = t
        phases: dict[str, set[str]] = {}
        for pod in self.kube.pods(self.ns):
            group = (pod.metadata.labels or {}).get("kueue.x-k8s.io/pod-group-name", "")
            phases.setdefault(group, set()).add(pod.status.phase)
        self.seen.append((phases, {w["metadata"]["name"] for w in wls}))
        return self.kube.workflow(self.ns, self.wf)

    def until(
        self, what: str, pred: Callable[[dict[str, Any]], bool], timeout: float = 180
    ) -> dict[str, Any]:
        return wait_until(what, lambda: (lambda wf: wf if pred(wf) else None)(self.poll()), timeout)

    def finish(self, timeout: float = 180) -> dict[str, Any]:
        return self.until(
            f"workflow {self.wf} finished",
            lambda wf: (wf.get("status") or {}).get("phase") in FINAL,
            timeout,
        )


# ------------------------------------------------------------------------------------------------
# 1. three steps, three pod groups, each admitted only when its step starts


def test_each_step_is_one_pod_group_admitted_when_it_starts(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    queues(gpu_quota=16)
    name = submit(
        kube, namespace, "workflow-three-steps.yaml",
        NAME="three", CPU_DURATION="3s", GPU_DURATION="3s",
    )  # fmt: skip
    w = Watcher(kube, namespace, name)
    wf = w.finish()
    assert wf["status"]["phase"] == "Succeeded", wf_message(wf)

    # Kueue marks a Workload Finished from its pods, independently of Argo finishing the Workflow.
    def all_finished() -> dict[str, dict[str, Any]] | None:
        wls = {wl["metadata"]["name"]: wl for wl in kube.list(KUEUE, "workloads", namespace)}
        return wls if all(condition_is(wl, "Finished") for wl in wls.values()) else None

    wls = wait_until("Workloads Finished", all_finished, timeout=30)
    assert set(wls) == {f"{name}-init", f"{name}-train", f"{name}-post"}
    expected = {"init": ([1], "cpu"), "train": ([2], "gpu"), "post": ([1], "cpu")}
    for step, (counts, queue) in expected.items():
        wl = wls[f"{name}-{step}"]
        assert podsets(wl) == counts, (step, wl["spec"]["podSets"])
        assert wl["spec"]["queueName"] == queue
        assert wl["metadata"]["annotations"]["kueue.x-k8s.io/is-group-workload"] == "true"
        adm = wl["status"]["admission"]
        assert adm["clusterQueue"] == f"{namespace}-{queue}"
        assert adm["podSetAssignments"][0]["flavors"]["cpu"] == queue
        fin = condition(wl, "Finished")
        assert fin and fin["status"] == "True" and fin["reason"] == "Succeeded", fin
        assert len(w.uids[f"{name}-{step}"]) == 1  # one Workload for the step's whole life

    # Admitted only when its step started: no Workload exists before its step's pods do, and the
    # quota is reserved after the previous step finished.
    init = pod_nodes(wf, "init")[0]
    trains = pod_nodes(wf, "train-")
    post = pod_nodes(wf, "post")[0]
    assert len(trains) == 2
    assert w.first_reserved[f"{name}-train"] >= finished_at(init)
    assert w.first_reserved[f"{name}-post"] >= max(finished_at(n) for n in trains)
    assert w.first_reserved[f"{name}-init"] <= parse_time(init["startedAt"]) + timedelta(seconds=1)
    for phases, present in w.seen:
        if f"{name}-train" in present:  # the trainer's group exists only once init succeeded
            assert phases.get(f"{name}-init") == {"Succeeded"}, (phases, present)
        if f"{name}-post" in present:
            assert phases.get(f"{name}-train") == {"Succeeded"}, (phases, present)
    assert post["phase"] == "Succeeded"

    # Kueue put the flavor's nodeLabels on the pods: GPU pods ran on the GPU pool only.
    for pod in kube.group_pods(namespace, f"{name}-train"):
        assert pod.spec.node_selector == {POOL: "gpu"}
        assert pod.spec.node_name.startswith("kwok-gpu-")
        assert pod.metadata.labels["kueue.x-k8s.io/cluster-queue-name"] == f"{namespace}-gpu"
    for pod in kube.group_pods(namespace, f"{name}-init"):
        assert pod.spec.node_name.startswith("kwok-cpu-")


# ------------------------------------------------------------------------------------------------
# 2. GPU quota held elsewhere: step 2 queues, step 1 is not held up


def test_gpu_step_waits_for_quota_while_cpu_step_runs(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    queues(gpu_quota=16)
    make_pod_group(kube, namespace, "blocker", 2)
    kube.wait_workload(namespace, "blocker", lambda wl: reserved_at(wl) is not None, "admitted")

    name = submit(
        kube, namespace, "workflow-three-steps.yaml",
        NAME="queued", CPU_DURATION="1s", GPU_DURATION="2s",
    )  # fmt: skip
    w = Watcher(kube, namespace, name)
    train = f"{name}-train"

    def train_pending(wf: dict[str, Any]) -> bool:
        wl = kube.workload(namespace, train)
        return wl is not None and condition_is(wl, "QuotaReserved", "False")

    wf = w.until("train Workload pending on quota", train_pending, timeout=120)
    init = pod_nodes(wf, "init")[0]
    assert init["phase"] == "Succeeded"  # step 1 ran unhindered by the full GPU queue
    wl = kube.workload(namespace, train)
    assert wl is not None
    qr = condition(wl, "QuotaReserved")
    assert qr and qr["reason"] == "Pending", qr
    pods = kube.group_pods(namespace, train)
    assert len(pods) == 2 and all(gated(p) for p in pods)
    assert all(p.status.phase == "Pending" and not p.spec.node_name for p in pods)
    assert wf["status"]["phase"] == "Running"
    # Argo shows a gated pod as a Pending node: nothing tells "queued by Kueue" from "unschedulable"
    # except the pod's gate and the Workload's condition.
    assert {n["phase"] for n in pod_nodes(wf, "train-")} == {"Pending"}

    freed = now_floor()
    kube.delete(KUEUE, "workloads", "blocker", namespace)
    wf = w.finish()
    assert wf["status"]["phase"] == "Succeeded", wf_message(wf)
    assert w.first_reserved[train] >= freed
    assert len(w.uids[train]) == 1


# ------------------------------------------------------------------------------------------------
# 3. Argo retries on a pod group


def test_retry_on_137_joins_the_admitted_workload(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    queues(gpu_quota=8)
    name = submit(
        kube, namespace, "workflow-retry.yaml", NAME="oom", EXIT_CODE_0="137", EXIT_CODE_1="0"
    )
    group = f"{name}-step"
    w = Watcher(kube, namespace, name)
    wf = w.finish()
    assert wf["status"]["phase"] == "Succeeded", wf_message(wf)
    attempts = pod_nodes(wf, "oom")
    assert [n["phase"] for n in attempts] == ["Failed", "Succeeded"], wf_message(wf)
    assert attempts[0]["outputs"]["exitCode"] == "137"

    pods = kube.group_pods(namespace, group)
    assert [p.status.phase for p in pods] == ["Failed", "Succeeded"]
    assert pods[0].spec.containers[0].resources == pods[1].spec.containers[0].resources
    role = "kueue.x-k8s.io/role-hash"
    assert pods[0].metadata.annotations[role] == pods[1].metadata.annotations[role]
    # Same Workload, admitted once: the retry pod was ungated into the still-admitted Workload.
    # (Kueue marks it Finished from the pods, independently of Argo finishing the Workflow.)
    wl = finished(kube, namespace, group)
    assert len(w.uids[group]) == 1
    assert podsets(wl) == [1]
    assert w.first_reserved[group] <= pods[1].metadata.creation_timestamp
    assert reserved_at(wl) == w.first_reserved[group]  # never re-admitted
    fin = condition(wl, "Finished")
    assert fin and fin["status"] == "True" and fin["reason"] == "Succeeded", fin
    # The replaced (Failed) pod loses Kueue's finalizer; both are owners of the Workload.
    finalizers_removed(kube, namespace, pods[0].metadata.name)
    owners = {o["name"] for o in wl["metadata"]["ownerReferences"]}
    assert owners == {p.metadata.name for p in pods}


def test_exit_1_is_permanent_and_the_workload_keeps_its_quota(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    queues(gpu_quota=8)
    name = submit(
        kube, namespace, "workflow-retry.yaml", NAME="bug", EXIT_CODE_0="1", EXIT_CODE_1="0"
    )
    group = f"{name}-step"
    w = Watcher(kube, namespace, name)
    wf = w.finish()
    assert wf["status"]["phase"] == "Failed", wf_message(wf)
    attempts = pod_nodes(wf, "bug")
    assert len(attempts) == 1 and attempts[0]["phase"] == "Failed"
    assert attempts[0]["outputs"]["exitCode"] == "1"
    pods = kube.group_pods(namespace, group)
    assert len(pods) == 1 and pods[0].status.phase == "Failed"

    # Kueue does not know Argo gave up: the group is retriable by default, so its Workload stays
    # admitted, holding the GPU quota and waiting for a replacement pod that never comes.
    def stuck(wl: dict[str, Any]) -> bool:
        return condition_is(wl, "WaitingForReplacementPods") and reserved_at(wl) is not None

    wl = kube.wait_workload(namespace, group, stuck, "waiting for replacement pods", timeout=30)
    assert condition(wl, "Finished") is None
    assert "kueue.x-k8s.io/managed" in (pods[0].metadata.finalizers or [])
    cq = kube.get(KUEUE, "clusterqueues", f"{namespace}-gpu")
    assert cq is not None and cq["status"].get("admittedWorkloads") == 1

    # The way out without deleting the Workload: mark a pod of the group not retriable.
    kube.core.patch_namespaced_pod(
        pods[0].metadata.name,
        namespace,
        {"metadata": {"annotations": {"kueue.x-k8s.io/retriable-in-group": "false"}}},
    )
    wl = finished(kube, namespace, group)
    fin = condition(wl, "Finished")
    assert fin is not None
    # ... and even then the reason is Succeeded: a pod-group Workload never finishes as Failed.
    assert fin["reason"] == "Succeeded" and fin["message"] == "Pods succeeded: 0/1.", fin
    wait_until(
        "GPU ClusterQueue quota released",
        lambda: (
            (kube.get(KUEUE, "clusterqueues", f"{namespace}-gpu") or {})
            .get("status", {})
            .get("admittedWorkloads")
            == 0
        ),
        timeout=30,
    )
    finalizers_removed(kube, namespace, pods[0].metadata.name)


# ------------------------------------------------------------------------------------------------
# 4. preemption of a running GPU step


def test_preemption_of_a_running_gpu_step(
    kube: Kube, namespace: str, queues: Callable[..., None], pod_history: dict[str, Json]
) -> None:
    queues(gpu_quota=16)
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
    try:
        _preemption(kube, namespace, high, pod_history)
    finally:
        kube.delete(KUEUE, "workloadpriorityclasses", high)


def _preemption(kube: Kube, namespace: str, high: str, pod_history: dict[str, Json]) -> None:
    name = submit(kube, namespace, "workflow-preempt.yaml", NAME="victim")
    group = f"{name}-train"
    w = Watcher(kube, namespace, name)
    w.until(
        "both train pods running",
        lambda wf: [n["phase"] for n in pod_nodes(wf, "train-")] == ["Running", "Running"],
        timeout=120,
    )
    first = kube.group_pods(namespace, group)
    uid = kube.workload(namespace, group)["metadata"]["uid"]  # type: ignore[index]

    make_pod_group(kube, namespace, "urgent", 2, priority=high)

    # Kueue evicts the victim Workload (same object, quota released) ...
    wl = kube.wait_workload(
        namespace,
        group,
        lambda wl: condition_is(wl, "Evicted") and condition_is(wl, "QuotaReserved", "False"),
        "evicted",
        timeout=60,
    )
    ev = condition(wl, "Evicted")
    assert ev and ev["reason"] == "Preempted", ev
    assert wl["metadata"]["uid"] == uid
    pre = condition(wl, "Preempted")
    assert pre and pre["status"] == "True" and pre["reason"] == "InClusterQueue", pre
    kube.wait_workload(namespace, "urgent", lambda wl: reserved_at(wl) is not None, "admitted")

    # ... marks each running pod with the TerminationTarget condition and deletes it; the
    # deleted pods end in phase Failed, exit code 143 from the kubelet (kwok), and stay while
    # Kueue's finalizer holds them (they may be gone already: their watch kept the last state).
    def evicted_pods() -> list[Json] | None:
        pods = [pod_history.get(p.metadata.name) or {} for p in first]
        ok = all(
            p.get("metadata", {}).get("deletionTimestamp")
            and p.get("status", {}).get("phase") == "Failed"
            for p in pods
        )
        return pods if ok else None

    old = wait_until("preempted pods terminated", evicted_pods, timeout=60)
    for p in old:
        conds = {c["type"]: c for c in p["status"].get("conditions") or []}
        assert "TerminationTarget" in conds, conds
        assert conds["TerminationTarget"]["reason"] == "WorkloadEvictedDueToPreempted"
        assert "DisruptionTarget" not in conds

    # Argo sees the pods fail (exit 143) and its retryStrategy creates replacement pods: same group,
    # same role hash, gated until Kueue re-admits the same Workload.
    wf = w.until(
        "Argo retried both train tasks",
        lambda wf: len(pod_nodes(wf, "train-")) == 4,
        timeout=60,
    )
    failed = [n for n in pod_nodes(wf, "train-") if n["phase"] in ("Failed", "Error")]
    assert len(failed) == 2, wf_message(wf)
    for n in failed:  # an ordinary failure to Argo: nothing says "preempted"
        assert n["phase"] == "Failed" and n["message"] == "main: Error (exit code 143)", n
        assert n["outputs"]["exitCode"] == "143"
    replacements = wait_until(
        "two gated replacement pods",
        lambda: (
            [
                p
                for p in kube.group_pods(namespace, group)
                if p.metadata.deletion_timestamp is None and gated(p)
            ]
            if len(kube.group_pods(namespace, group)) >= 2
            else None
        ),
        timeout=60,
    )
    assert len(replacements) == 2
    wl = kube.wait_workload(
        namespace,
        group,
        lambda wl: (
            condition_is(wl, "QuotaReserved", "False")
            and condition_is(wl, "WaitingForReplacementPods", "False")
        ),
        "requeued, pending on quota",
        timeout=60,
    )
    assert wl["metadata"]["uid"] == uid

    # Free the quota: the same Workload is re-admitted, the replacements run, the workflow succeeds.
    freed = now_floor()
    kube.delete(KUEUE, "workloads", "urgent", namespace)
    wf = w.finish(timeout=180)
    assert wf["status"]["phase"] == "Succeeded", wf_message(wf)
    wl = finished(kube, namespace, group)
    assert wl["metadata"]["uid"] == uid and len(w.uids[group]) == 1
    t = reserved_at(wl)
    assert t is not None and t >= freed
    fin = condition(wl, "Finished")
    assert fin and fin["reason"] == "Succeeded" and fin["message"] == "Pods succeeded: 2/2.", fin


# ------------------------------------------------------------------------------------------------
# 5. clean-up: deleting a workflow with a running step


def _run_to_train(kube: Kube, namespace: str, name: str) -> tuple[str, list[str]]:
    submit(kube, namespace, "workflow-preempt.yaml", NAME=name)
    group = f"{name}-train"
    Watcher(kube, namespace, name).until(
        "both train pods running",
        lambda wf: [n["phase"] for n in pod_nodes(wf, "train-")] == ["Running", "Running"],
        timeout=120,
    )
    return group, [p.metadata.name for p in kube.group_pods(namespace, group)]


def _admitted_workloads(kube: Kube, namespace: str) -> int | None:
    cq = kube.get(KUEUE, "clusterqueues", f"{namespace}-gpu") or {}
    n = (cq.get("status") or {}).get("admittedWorkloads")
    return None if n is None else int(n)


def test_deleted_workflow_leaves_the_workload_holding_quota(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    """Default (background) deletion, as `kubectl delete workflow` or `argo delete`."""
    queues(gpu_quota=16)
    group, pods = _run_to_train(kube, namespace, "gone")
    kube.delete(ARGO, "workflows", "gone", namespace)
    wait_until("workflow gone", lambda: kube.get(ARGO, "workflows", "gone", namespace) is None, 60)

    # The garbage collector deleted the pods; Kueue's finalizer keeps them (Failed, Terminating),
    # and the Workload stays admitted, waiting for replacement pods that will never come.
    def stuck() -> list[Pod] | None:
        ps: list[Pod] = [kube.core.read_namespaced_pod(p, namespace) for p in pods]
        ok = all(p.metadata.deletion_timestamp and p.status.phase == "Failed" for p in ps)
        return ps if ok else None

    for p in wait_until("pods terminating under Kueue's finalizer", stuck, timeout=60):
        assert p.metadata.finalizers == ["kueue.x-k8s.io/managed"]
    wl = kube.wait_workload(
        namespace,
        group,
        lambda wl: (
            condition_is(wl, "WaitingForReplacementPods")
            and reserved_at(wl) is not None
            and condition_is(wl, "PodsReady", "False")
        ),
        "admitted, waiting for replacement pods, not PodsReady",
        timeout=30,
    )
    assert condition(wl, "Finished") is None
    # waitForPodsReady notices (PodsReady=False, WaitForRecovery) but recoveryTimeout 0s never evicts
    prc = condition(wl, "PodsReady")
    assert prc and prc["status"] == "False" and prc["reason"] == "WaitForRecovery", prc
    assert _admitted_workloads(kube, namespace) == 1

    # Deleting the Workload is the clean-up: Kueue strips the finalizers, the pods go.
    kube.delete(KUEUE, "workloads", group, namespace)
    wait_until("pods gone", lambda: not kube.group_pods(namespace, group), timeout=60)
    wait_until("quota released", lambda: _admitted_workloads(kube, namespace) == 0, timeout=30)


def test_foreground_deleted_workflow_takes_its_workloads_along_or_strands_them(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    """Foreground deletion cascades Workflow -> pods -> Workload (Kueue makes every pod of the
    group an owner of the Workload), and the Workload's deletion strips the pods' finalizers.

    Unless Argo races it: Argo keeps operating a Workflow that is being deleted, and when it sees
    the GC's deleted pods fail (143) its retryStrategy (limit 2 here) creates replacement pods. The
    GC deletes a pod in foreground only if its graph already shows the pod owning something; a
    replacement deleted before Kueue's owner reference to it reaches the graph is deleted in the
    background. When every pod left owning the Workload went that way, nothing deletes the
    Workload: it holds its quota, the pods stay Terminating under Kueue's finalizer and the Workflow
    under `foregroundDeletion`, as after a background deletion (3 runs in 44, docs/engines.md).
    Both outcomes are pinned; deleting the Workload ends the second."""
    queues(gpu_quota=16)
    group, _ = _run_to_train(kube, namespace, "fg")
    kube.custom.delete_namespaced_custom_object(
        *ARGO, namespace, "workflows", "fg", propagation_policy="Foreground"
    )

    def outcome() -> str | None:
        wf = kube.get(ARGO, "workflows", "fg", namespace)
        if wf is None:
            return "cascaded"
        pods = kube.group_pods(namespace, group)
        stranded = (
            # completed (the retries spent, or a 2 s retry ran out): Argo creates no more pods
            wf.get("status", {}).get("phase") in ("Succeeded", "Failed", "Error")
            and kube.workload(namespace, group) is not None
            and pods
            and all(
                p.metadata.deletion_timestamp
                and p.metadata.finalizers == ["kueue.x-k8s.io/managed"]
                for p in pods
            )
        )
        return "stranded" if stranded else None

    # the retries are spent within about 60 s (docs/engines.md); the wait allows for the budget
    if wait_until("workflow gone, or its Workload stranded", outcome, 180) == "stranded":
        wf = kube.get(ARGO, "workflows", "fg", namespace)
        assert wf and wf["metadata"]["finalizers"] == ["foregroundDeletion"], wf and wf["metadata"]
        wl = kube.workload(namespace, group)
        assert wl and reserved_at(wl) is not None and condition(wl, "Finished") is None, wl
        owners = {o["name"] for o in wl["metadata"]["ownerReferences"]}
        assert owners >= {p.metadata.name for p in kube.group_pods(namespace, group)}, owners
        assert _admitted_workloads(kube, namespace) == 1
        kube.delete(KUEUE, "workloads", group, namespace)  # the clean-up, as after background
        wait_until(
            "workflow gone", lambda: kube.get(ARGO, "workflows", "fg", namespace) is None, 60
        )
    wait_until("Workload gone", lambda: kube.workload(namespace, group) is None, timeout=60)
    wait_until("pods gone", lambda: not kube.group_pods(namespace, group), timeout=60)
    wait_until("quota released", lambda: _admitted_workloads(kube, namespace) == 0, timeout=30)


# ------------------------------------------------------------------------------------------------
# 6. the loopback rule of the local control plane (skipped on other clusters, e.g. kind)


def _listeners(pid: int) -> set[tuple[str, int]]:
    """(address, port) of the TCP sockets in LISTEN state that process `pid` holds."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] != "0A" or f[9] not in inodes:  # 0A = LISTEN
                continue
            hexaddr, hexport = f[1].split(":")
            raw = bytes.fromhex(hexaddr)
            if width == 8:
                addr = str(ipaddress.IPv4Address(raw[::-1]))
            else:  # four little-endian 32-bit words
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                addr = str(ipaddress.IPv6Address(words))
            out.add((addr, int(hexport, 16)))
    return out


def test_local_control_plane_listens_on_loopback_only() -> None:
    state_file = default_kubeconfig().parent / "cluster.json"
    if not state_file.exists():  # e.g. kind: no hack/cluster.py state beside the kubeconfig
        pytest.skip("not the local control plane (hack/cluster.py)")
    state = json.loads(state_file.read_text())
    pids = dict(state["pids"])
    kwok_pids = state_file.parent / "kwok" / "clusters"
    for f in kwok_pids.glob("*/pids/*.pid"):
        pids[f.stem] = int(f.read_text())
    assert {"etcd", "kube-apiserver", "kueue", "workflow-controller", "argo-server"} <= set(pids)
    argo_server_port = int(state["argo_server"].rsplit(":", 1)[1])
    seen = {}
    for name, pid in pids.items():
        for addr, port in _listeners(pid):
            seen[f"{name}:{port}"] = addr
            if name == "workflow-controller" and port == 6060:
                continue  # upstream hard-wires pprof/healthz on :6060 (docs/local-control-plane.md)
            if name == "argo-server" and port == argo_server_port:
                continue  # upstream binds ":<port>" (auth-mode=client: a token needed, ibid.)
            assert ipaddress.ip_address(addr).is_loopback, (name, addr, port)
    assert any(k.startswith("kube-apiserver:") for k in seen), seen
