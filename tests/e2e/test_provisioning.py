"""Per-step ProvisioningRequests on the engines (issue 40): a trainer's GPU nodes are asked for
when the trainer is due, and the pipeline runs to Complete under trainweave.

The stand-in for cluster-autoscaler (hack/provisioner.py, started by ``hack/cluster.py
provisioner on``; docs/provisioning.md) makes kwok nodes labelled ``trainweave.test/pool:
provisioned`` for best-effort-atomic-scale-up requests, ``Provisioned`` only once they are Ready
(``--wait-for-nodes``), 15 s after the scale-up; it books capacity for 10 s only, by time (as
cluster-autoscaler 1.36.1), shorter than the initializers (20 s). The test's GPU ClusterQueue
offers the flavor ``provisioned`` (no node has its label before the scale-up) behind an
AdmissionCheck of Kueue's ProvisioningRequest controller (class best-effort-atomic,
``managedResources: [nvidia.com/gpu]``); its CPU ClusterQueue has the same check, which the CPU
steps pass without a request. The controller runs with ``--kept-position``: the trainer's
Workload exists, gated, from the start, and must not get a request before its gate lifts.

What it shows: one request for the GPU step and none for the CPU steps; none while the trainer
is still gated; ``trainweave status`` says "waiting for capacity" (the request's name) while
the check is Pending, and the controller's ``StepWaitingForCapacity`` Event; the trainer's pods
carry the consume and class annotations of Kueue's podSetUpdates and run on the new nodes; the
TrainJob is Complete though the booking expired long before the trainer was due, its trainer's
budget untouched, and its quota record keeps the request and the wait for capacity.

The same TrainJob under upstream (Kubeflow Trainer + JobSet + Kueue, one Workload per TrainJob)
behind the same check and provisioner is tests/e2e/upstream_phase.py's ``provisioning`` half:
its request is made at admission, while the initializers start; the booking expires while they
run, the Workload stays Admitted and Kueue makes no second request (v0.19.2
``pkg/controller/admissionchecks/provisioning/controller.go:276-279``: a Ready check is not
synced; ``290-292``: "if the workload is Admitted we don't want to retry on BookingExpired"), the
unbooked nodes are scaled down, and the trainer's pods, due after the initializers, stay
unschedulable: ``test_upstream_loses_the_booking_an_initializer_outlives`` pins it.

Flags, durations and the check's objects: tests/e2e/capacity.py. Serial: it starts a
cluster-wide process (the provisioner), may restart Kueue (when the cluster was started before
`up` installed the ProvisioningRequest CRD) and adds nodes; the upstream test asks for
``upstream_results`` (upstream on).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from trainweave import labels as L
from trainweave.integrations.views.read import checks, quota
from trainweave.labels import QUOTA_ANNOTATION

from .capacity import (
    CLASS,
    CPU_QUOTA,
    DURATIONS,
    GPU_QUOTA,
    PREFIX,
    Requests,
    check_objects,
    cluster_queue,
    conditions,
    local_queue,
    provisioner,
)
from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition, condition_is, default_kubeconfig, wait_until
from .pipelines import apply, ended, example, trainer_spent, wait_condition, workflows
from .test_admin_view import queues_cli
from .upstream_phase import TRAINER_WAIT, UpstreamResults

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
Json = dict[str, Any]
TRAINER = "ft-node-a0"


@pytest.fixture(name="provisioner")
def provisioner_on() -> Iterator[None]:
    """hack/provisioner.py running as a cluster process; off afterwards (its nodes deleted)."""
    with provisioner():
        yield


@pytest.fixture
def capacity_queues(kube: Kube, namespace: str) -> Iterator[str]:
    """The ProvisioningRequestConfig and AdmissionCheck (cluster-scoped, named after the test's
    namespace), a ResourceFlavor for the provisioned nodes, and the ClusterQueues <ns>-cpu and
    <ns>-gpu with the check, LocalQueues cpu and gpu; the check's name. The cluster-scoped
    objects but the flavor are deleted afterwards."""
    with check_objects(kube, f"{namespace}-gpu-nodes") as check:
        queues = [
            cluster_queue(namespace, "cpu", {"cpu": CPU_QUOTA}, check, on="cpu"),
            cluster_queue(namespace, "gpu", {"provisioned": GPU_QUOTA}, check),
        ]
        try:
            for cq in queues:
                kube.create(KUEUE, "clusterqueues", cq)
            for lq in ("cpu", "gpu"):
                local_queue(kube, namespace, lq)
            yield check
        finally:
            for cq in queues:
                kube.delete(KUEUE, "clusterqueues", cq["metadata"]["name"])


@pytest.fixture
def kept_controller(
    kube: Kube, namespace: str, controller_kubeconfig: Path
) -> Iterator[ControllerProc]:
    """The test's controller with ``--kept-position``; its Lease removed after."""
    ctl = ControllerProc(namespace, "a", controller_kubeconfig, args=["--kept-position"])
    try:
        wait_until("controller ready", lambda: ctl.get("/readyz")[0] == 200, timeout=60)
        yield ctl
    finally:
        ctl.stop(signal.SIGKILL)
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(
                ctl.lease_name, ctl.lease_namespace
            )
        except client.ApiException as e:
            if e.status != 404:
                raise


def gated(wl: Json | None) -> bool:
    """The kept Workload still carries Kueue's admission gate annotation (docs/design.md D21)."""
    return wl is not None and bool(_annotations(wl).get(L.KUEUE_ADMISSION_GATED_BY))


def _annotations(obj: Json) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def _label(obj: Json, key: str) -> str:
    return str((obj["metadata"].get("labels") or {}).get(key, ""))


def status(ns: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", ns,
         "--kubeconfig", str(default_kubeconfig()), *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout


def test_a_trainer_gets_its_nodes_when_due_and_the_pipeline_completes(
    kube: Kube,
    namespace: str,
    provisioner: None,
    capacity_queues: str,
    kept_controller: ControllerProc,
    pod_history: dict[str, Json],
) -> None:
    ns, check = namespace, capacity_queues
    request = checks.request_name(TRAINER, check, 1)
    tj, rt = example(ns, nodes=2, gpus=1, durations=DURATIONS)
    with Requests(kube, ns) as requests:
        apply(kube, ns, tj, rt)
        gate_seen = wait_until(
            "the trainer's kept Workload, gated", lambda: gated(kube.workload(ns, TRAINER))
        )
        assert gate_seen

        # while the initializers run the trainer's Workload stays gated: no request (names are
        # read before the Workload, so a request listed was made while it was still gated)
        def reserved_for_capacity() -> Json | None:
            made = requests.names()
            wl = kube.workload(ns, TRAINER)
            if gated(wl):
                assert not made, f"requests {made} while the trainer is still gated"
                return None
            if wl is not None and condition_is(wl, "Admitted"):
                raise AssertionError(f"admitted before the wait for capacity was seen: {wl}")
            return wl if wl is not None and condition_is(wl, "QuotaReserved") else None

        wait_until("the trainer's quota reserved, waiting for capacity", reserved_for_capacity,
                   timeout=120, interval=0.2)  # fmt: skip

        # trainweave status while the check is Pending (the nodes come 15 s after the scale-up)
        shown = status(ns)
        print(f"$ trainweave status ft\n{shown}")
        lines = [ln.strip() for ln in shown.splitlines()]
        node = next(ln for ln in lines if ln.startswith("node "))
        assert "QuotaReserved (waiting for capacity)" in node, shown
        assert any(
            ln.startswith(f"capacity node ({TRAINER}): waiting for capacity: ProvisioningRequest"
                          f" {request} (admission check {check} Pending")
            for ln in lines
        ), shown  # fmt: skip
        listed = queues_cli(ns)
        print(f"$ trainweave queues -n {ns}\n{listed}")
        head = next(ln for ln in listed.splitlines() if ln.startswith(f"ClusterQueue {ns}-gpu "))
        assert head.endswith("waiting for capacity: 1"), listed

        def waiting_event() -> bool:
            events: list[Any] = kube.core.list_namespaced_event(
                ns, field_selector="involvedObject.name=ft"
            ).items
            return any(
                e.reason == "StepWaitingForCapacity" and request in str(e.message) for e in events
            )

        wait_until("StepWaitingForCapacity event", waiting_event, timeout=30)
        final = wait_condition(kube, ns, "Complete", timeout=300)
        assert not requests.error, requests.error
        made = requests.names()

    # exactly one request, the GPU step's; the CPU steps passed the check without one
    assert made == {request}, made
    provreq = requests.seen[request]
    assert provreq["spec"]["provisioningClassName"] == CLASS
    assert sum(ps["count"] for ps in provreq["spec"]["podSets"]) == 2  # the 2-node trainer

    # the trainer's pods carry Kueue's podSetUpdates and ran on the provisioned nodes
    trainers = [p for p in pod_history.values() if _label(p, L.STEP) == "node"]
    scheduled = [p for p in trainers if p["spec"].get("nodeName")]
    assert len(scheduled) >= 2, sorted(pod_history)
    for p in scheduled:
        ann = _annotations(p)
        assert ann.get(checks.CONSUME) == request, ann
        assert ann.get(checks.CLASS) == CLASS, ann
        assert p["spec"]["nodeName"].startswith(f"{PREFIX}-"), p["spec"]["nodeName"]
    others = [p for p in pod_history.values() if _label(p, L.STEP) != "node"]
    assert others and not [p for p in others if checks.CONSUME in _annotations(p)]

    # nothing counted, never evicted, and the record keeps the wait for capacity
    assert not condition_is(kube.workload(ns, TRAINER), "Evicted")
    (wf,) = workflows(kube, ns)
    assert trainer_spent(wf) == {}
    events = kube.core.list_namespaced_event(ns, field_selector="involvedObject.name=ft").items
    reasons = [e.reason for e in events]
    assert "StepCapacityRetry" not in reasons and "StepCapacityRejected" not in reasons, reasons
    records = [q for q in quota.decode(final["metadata"]["annotations"][QUOTA_ANNOTATION])
               if q.workload == TRAINER]  # fmt: skip
    assert [(q.state, q.check, q.request) for q in records] == [("Finished", check, request)]
    assert records[0].admitted_at > records[0].reserved_at, records
    timeline = json.loads(status(ns, "--timeline", "-o", "json"))
    (row,) = (s for s in timeline["steps"] if s["step"] == "node")
    assert [p["phase"] for p in row["phases"]][:2] == ["waiting", "capacity"], row
    assert row["capacitySeconds"] > 0 and row["request"] == request, row
    print(f"\nProvisioningRequest {request}: {json.dumps(provreq.get('status'))}")
    print(status(ns, "--timeline"))


def test_upstream_loses_the_booking_an_initializer_outlives(
    upstream_results: UpstreamResults,
) -> None:
    """The same TrainJob under Kubeflow Trainer + JobSet + Kueue, behind the same check and
    provisioner (upstream_phase.py's ``provisioning`` half): one Workload for the whole TrainJob,
    so its request is made and provisioned at admission, before the initializers run. The
    booking (10 s) expires while they run (20 s): the request is ``BookingExpired``
    (``CapacityReservationTimeExpired``), the Workload stays Admitted with its check Ready, and
    Kueue makes no second request (v0.19.2 ``controller.go:276-279``, ``290-292``). The nodes,
    no longer booked and empty, are scaled down, so the trainer's pods, which carry the consume
    annotation of the expired request, stay unschedulable: the TrainJob neither completes nor
    fails within the wait (Kueue's waitForPodsReady, 5 min here, would evict it later;
    cluster-autoscaler never scales up for a pod that consumes a request, pods_filter.go)."""
    up = upstream_results.provisioning.get()
    wl = up.workload
    request = checks.request_name(wl["metadata"]["name"], up.check, 1)
    print(f"upstream: ProvisioningRequest {request}: {json.dumps(up.requests.get(request))}")
    print(f"upstream: nodes seen {up.nodes_seen}, left {up.nodes_left}; trainer pods "
          f"{up.booking_to_trainer:.1f} s after the booking expired, watched {up.trainer_waited:.1f} s")  # fmt: skip

    # one request, made at admission; none after its booking expired
    assert set(up.requests) == {request}, sorted(up.requests)
    conds = conditions(up.requests[request])
    assert conds["Provisioned"]["status"] == "True", conds
    lapsed = conds.get("BookingExpired") or {}
    assert (lapsed.get("status"), lapsed.get("reason")) == (
        "True",
        "CapacityReservationTimeExpired",
    ), conds

    # Kueue does not react: the Workload stays Admitted, its check Ready
    assert condition_is(wl, "Admitted") and not condition_is(wl, "Evicted"), wl.get("status")
    states = {c["name"]: c["state"] for c in wl["status"].get("admissionChecks") or []}
    assert states == {up.check: "Ready"}, states

    # the trainer came after the booking; the nodes it was admitted for are gone
    assert up.booking_to_trainer > 0, up.booking_to_trainer
    assert up.nodes_seen and not up.nodes_left, (up.nodes_seen, up.nodes_left)
    assert len(up.trainer_pods) == 2, [p["metadata"]["name"] for p in up.trainer_pods]
    for p in up.trainer_pods:
        assert (p["metadata"].get("annotations") or {}).get(checks.CONSUME) == request, p[
            "metadata"
        ]
        assert not p["spec"].get("nodeName"), p["spec"].get("nodeName")
        scheduled = condition(p, "PodScheduled") or {}
        assert (scheduled.get("status"), scheduled.get("reason")) == ("False", "Unschedulable"), p[
            "status"
        ]
    assert ended(up.trainjob) is None, up.trainjob.get("status")
    assert up.trainer_waited >= TRAINER_WAIT
