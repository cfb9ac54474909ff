"""WaitForPodsReady evicts a trainer that is not Ready in time; it costs no retry (issue 20, 3).

Kueue runs with ``waitForPodsReady.timeout: 20s`` for this test (``hack/cluster.py kueue-config``,
restored to the default after). The llm-finetune example's 2-pod trainer asks for a node label
no node has yet, so its admitted pods stay ``Pending`` (not Ready), as pods that pull a large
image do. Kueue evicts the Workload (``Evicted``, reason ``PodsReadyTimeout``), stops the pods
(``TerminationTarget``, ``WorkloadEvictedDueToPodsReadyTimeout``) and requeues it; the test then
labels the GPU nodes, Argo's retries join the same Workload, Kueue re-admits it and they run.
The TrainJob ends ``Complete``, never ``Failed``, the trainer's budget untouched.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainweave.integrations.views.read import disruption, quota
from trainweave.labels import QUOTA_ANNOTATION

from .controller_proc import ControllerProc
from .kube import (
    Kube,
    Pod,
    Timeout,
    condition,
    condition_is,
    default_kubeconfig,
    wait_until,
)
from .pipelines import apply, example, trainer_spent, trainjob, workflows

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
Json = dict[str, Any]
CLUSTER_PY = Path(__file__).resolve().parents[2] / "hack" / "cluster.py"
TIMEOUT = "20s"
LATE_LABEL = "trainweave.test/pods-ready"  # the first attempt's pods wait for it
NODE_NAME = "workflows.argoproj.io/node-name"
WORKLOAD = "ft-node-a0"


def cluster(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(CLUSTER_PY), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"cluster.py {args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


@pytest.fixture
def short_pods_ready() -> Iterator[None]:
    """Kueue restarted with a 20 s waitForPodsReady timeout and a 1 s requeuing backoff base;
    the default configuration back afterwards, whatever happened (both waited for healthy)."""
    cluster("kueue-config", "--pods-ready-timeout", TIMEOUT, "--backoff-base", "1")
    try:
        yield
    finally:
        cluster("kueue-config", "--default")


def slot(pod: Pod) -> str:
    """``node-0-1(0)`` of a step pod (Argo's node name)."""
    return str((pod.metadata.annotations or {}).get(NODE_NAME, "")).rsplit(".", 1)[-1]


def stuck(kube: Kube, namespace: str) -> str:
    """What the trainer waits for: its Workload's status and Events, pods, Argo's nodes of the
    trainer and the TrainJob's conditions."""
    wl = kube.workload(namespace, WORKLOAD) or {}
    pods = [
        (slot(p), p.status.phase, p.spec.node_name, p.metadata.deletion_timestamp)
        for p in kube.pods(namespace, "trainweave.io/step=node")
    ]
    events = [
        (e.involved_object.kind, e.type, e.reason, e.message)
        for e in kube.core.list_namespaced_event(namespace).items
        if e.involved_object.kind in ("Workload", "TrainJob")
    ]
    argo = [
        (n["displayName"], n["type"], n["phase"], n.get("taskResultSynced"), n.get("message"))
        for wf in workflows(kube, namespace)
        for n in wf["status"].get("nodes", {}).values()
        if n["displayName"].startswith("node-0-")
    ]
    tj = trainjob(kube, namespace)
    return (
        f"Workload status: {json.dumps(wl.get('status'), indent=1)}\npods: {pods}\n"
        f"events: {json.dumps(events, indent=1)}\nArgo nodes: {json.dumps(argo, indent=1)}\n"
        f"TrainJob conditions: {json.dumps((tj.get('status') or {}).get('conditions'))}"
    )


class Watch:
    """Polls the TrainJob: asserts it is never Failed, keeps every quota state of the trainer's
    Workload that ``trainweave.io/quota`` showed."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.quota_states: list[str] = []

    def look(self) -> Json:
        tj = trainjob(self.kube, self.namespace)
        failed = condition(tj, "Failed")
        assert not (failed and failed["status"] == "True"), failed
        value = (tj["metadata"].get("annotations") or {}).get(QUOTA_ANNOTATION)
        for q in quota.decode(value):
            if q.workload == WORKLOAD and q.state not in self.quota_states[-1:]:
                self.quota_states.append(q.state)
        return tj


def test_pods_not_ready_in_time_are_evicted_requeued_and_cost_no_retry(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc, short_pods_ready: None
) -> None:
    queues()
    # 5 s Running: Argo sees the re-admitted pods Running before they end (a pod that went from
    # Pending to Succeeded between two of Argo v4.0.7's passes got its retry node Succeeded and
    # still a third attempt, which Kueue kept gated behind the Finished Workload)
    tj, rt = example(namespace, nodes=2, durations={"node": "5s"})
    (node,) = [j for j in rt["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == "node"]
    node["template"]["spec"]["template"]["spec"]["nodeSelector"] = {LATE_LABEL: namespace}
    apply(kube, namespace, tj, rt)
    watch = Watch(kube, namespace)

    def evicted() -> Json | None:
        watch.look()
        wl = kube.workload(namespace, WORKLOAD)
        cond = condition(wl or {}, "Evicted")
        return wl if cond and cond["reason"] == "PodsReadyTimeout" else None

    wl = wait_until("trainer evicted for PodsReadyTimeout", evicted, timeout=240)
    uid = wl["metadata"]["uid"]
    ev_cond = condition(wl, "Evicted")
    listed: list[Any] = kube.core.list_node(label_selector="trainweave.test/pool=gpu").items
    gpu_nodes = [str(n.metadata.name) for n in listed]

    def stopped() -> bool:  # Kueue deleted the first attempt (else it could still be scheduled)
        watch.look()
        return not [p for p in kube.pods(namespace, "trainweave.io/step=node")
                    if slot(p).endswith("(0)")]  # fmt: skip

    wait_until("the first attempt's pods gone", stopped, timeout=60)
    try:
        for name in gpu_nodes:  # the "image" is there now
            kube.core.patch_node(name, {"metadata": {"labels": {LATE_LABEL: namespace}}})

        def complete() -> Json | None:
            tj = watch.look()
            return tj if condition_is(tj, "Complete") else None

        try:
            final = wait_until("TrainJob Complete", complete, timeout=300)
        except Timeout as err:
            seen = f"quota states seen: {watch.quota_states}"
            raise AssertionError(f"{err}\n{seen}\n{stuck(kube, namespace)}") from err
    finally:
        for name in gpu_nodes:
            kube.core.patch_node(name, {"metadata": {"labels": {LATE_LABEL: None}}})

    (wf,) = workflows(kube, namespace)
    wl_after = kube.workload(namespace, WORKLOAD)
    assert (
        wl_after is not None and wl_after["metadata"]["uid"] == uid
    )  # the same Workload, re-admitted
    stats = (wl_after["status"].get("schedulingStats") or {}).get("evictions") or []
    assert [(s["reason"], s["count"]) for s in stats] == [("PodsReadyTimeout", 1)], stats
    assert condition_is(wl_after, "Finished")

    marks = disruption.decode(wf["metadata"]["annotations"][disruption.ANNOTATION])["node"]
    assert {(m.type, m.reason) for m in marks} == {
        ("TerminationTarget", "WorkloadEvictedDueToPodsReadyTimeout")
    }
    assert {p for m in marks for p in m.pods} == {"node-0-0(0)", "node-0-1(0)"}
    nodes = {n["displayName"]: n for n in wf["status"]["nodes"].values() if n.get("type") == "Pod"}
    assert {nodes[f"node-0-{i}(0)"]["phase"] for i in (0, 1)} == {"Failed"}, nodes
    assert {nodes[f"node-0-{i}(1)"]["phase"] for i in (0, 1)} == {"Succeeded"}, nodes
    assert not [n for n in nodes if n.endswith("(2)")], nodes  # no attempt after the success
    # the first attempts' Container nodes, which Argo left Pending, ended by the controller
    ended = {
        n["name"].rsplit(".", 2)[-2]: n
        for n in wf["status"]["nodes"].values()
        if n.get("type") == "Container"
        and re.fullmatch(r"node-0-\d[(]0[)]", n["name"].rsplit(".", 2)[-2])
    }
    assert sorted(ended) == ["node-0-0(0)", "node-0-1(0)"], ended
    assert {(n["phase"], n["message"].split(" pod ")[0]) for n in ended.values()} == {
        ("Failed", "trainweave:")
    }, ended
    assert trainer_spent(wf) == {}  # the budget is intact
    assert "trainweave.io/stopped-for" not in wf["metadata"]["annotations"]

    assert "Evicted" in watch.quota_states, watch.quota_states
    records = [q for q in quota.decode(final["metadata"]["annotations"][QUOTA_ANNOTATION])
               if q.workload == WORKLOAD]  # fmt: skip
    assert [(q.state, q.evictions) for q in records] == [("Finished", {"PodsReadyTimeout": 1})]

    wl_events = kube.core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.kind=Workload,involvedObject.name={WORKLOAD}"
    ).items
    evictions = [e for e in wl_events if "PodsReady" in f"{e.reason} {e.message}"]
    assert evictions, [(e.reason, e.message) for e in wl_events]
    disrupted = kube.core.list_namespaced_event(namespace, field_selector="reason=StepDisrupted")
    step_evs = disrupted.items  # one per mark: Kueue may stop the two pods in two passes
    assert {e.involved_object.kind for e in step_evs} == {"TrainJob"}
    assert all("WorkloadEvictedDueToPodsReadyTimeout" in str(e.message) for e in step_evs)
    named = {p for e in step_evs for p in ("node-0-0(0)", "node-0-1(0)") if p in str(e.message)}
    assert named == {"node-0-0(0)", "node-0-1(0)"}, [e.message for e in step_evs]
    status = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", namespace,
         "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    shown = [ln.strip() for ln in status.stdout.splitlines()]
    assert sum(ln.startswith("disrupted node:") for ln in shown) == len(marks), status.stdout
    assert any(ln.startswith("retries counted node/node: none") for ln in shown), status.stdout
    assert "evicted node (ft-node-a0): PodsReadyTimeout x1" in shown, status.stdout
    print(
        f"\nWorkload Evicted condition: {json.dumps(ev_cond)}"
        f"\nschedulingStats.evictions: {json.dumps(stats)}"
        f"\nquota states seen: {watch.quota_states}"
        + "".join(f"\nEvent Workload {e.type} {e.reason}: {e.message}" for e in wl_events)
        + "".join(f"\nEvent TrainJob {e.type} {e.reason}: {e.message}" for e in step_evs)
        + f"\n{disruption.ANNOTATION}: {wf['metadata']['annotations'][disruption.ANNOTATION]}"
        f"\n{QUOTA_ANNOTATION}: {final['metadata']['annotations'][QUOTA_ANNOTATION]}"
        f"\n$ trainweave status ft\n{status.stdout}"
    )
