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

Serial: it starts a cluster-wide process (the provisioner), may restart Kueue (when the
cluster was started before `up` installed the ProvisioningRequest CRD) and adds nodes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from trainweave import labels as L
from trainweave.integrations.views.read import checks, quota
from trainweave.labels import QUOTA_ANNOTATION

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition_is, default_kubeconfig, wait_until
from .pipelines import apply, example, trainer_spent, wait_condition, workflows
from .test_admin_view import queues_cli

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
Json = dict[str, Any]
CLUSTER_PY = Path(__file__).resolve().parents[2] / "hack" / "cluster.py"
AUTOSCALING = ("autoscaling.x-k8s.io", "v1")
POOL = "trainweave.test/pool"
FLAVOR = "provisioned"  # a ResourceFlavor no node matches until the provisioner makes one
CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PREFIX = "prov"  # the provisioner's node names
# durations in cluster-autoscaler's seconds, times --scale 0.1: booking 10 s, nodes 15 s after the
# scale-up, empty nodes deleted after 60 s (after the test: `provisioner off` deletes them)
PROVISIONER = [
    "--scale", "0.1", "--pool", "gpu", "--label", f"{POOL}={FLAVOR}", "--prefix", PREFIX,
    "--booking", "100", "--booking-by-time-only", "--provision-delay", "150",
    "--wait-for-nodes", "--scale-down-unneeded", "600", "--max-nodes", "4",
]  # fmt: skip
INIT = "20s"  # each initializer: longer than the booking
TRAINER = "ft-node-a0"


def cluster(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(CLUSTER_PY), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"cluster.py {args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


@pytest.fixture
def provisioner() -> Iterator[None]:
    """hack/provisioner.py running as a cluster process; off afterwards (its nodes deleted)."""
    cluster("provisioner", "on", "--", *PROVISIONER)
    try:
        yield
    finally:
        cluster("provisioner", "off")


def cluster_queue(ns: str, name: str, flavor: str, quota_: Json, check: str) -> Json:
    """A ClusterQueue of ``ns`` with one flavor and the ProvisioningRequest check on it."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"{ns}-{name}"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "resourceGroups": [
                {
                    "coveredResources": sorted(quota_),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": r, "nominalQuota": q} for r, q in quota_.items()
                            ],
                        }
                    ],
                }
            ],
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": check, "onFlavors": [flavor]}]
            },
        },
    }


@pytest.fixture
def capacity_queues(kube: Kube, namespace: str) -> Iterator[str]:
    """The ProvisioningRequestConfig and AdmissionCheck (cluster-scoped, named after the test's
    namespace), a ResourceFlavor for the provisioned nodes, and the ClusterQueues <ns>-cpu and
    <ns>-gpu with the check, LocalQueues cpu and gpu; the check's name. The cluster-scoped
    objects but the flavor are deleted afterwards."""
    check = f"{namespace}-gpu-nodes"
    kube.create(KUEUE, "resourceflavors", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": FLAVOR}, "spec": {"nodeLabels": {POOL: FLAVOR}},
    }, exist_ok=True)  # fmt: skip
    kube.create(KUEUE, "provisioningrequestconfigs", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
        "metadata": {"name": check},
        "spec": {
            "provisioningClassName": CLASS,
            "managedResources": ["nvidia.com/gpu"],
            # no second request: the test wants exactly one; a failure shows at once
            "retryStrategy": {"backoffLimitCount": 0},
        },
    })  # fmt: skip
    kube.create(KUEUE, "admissionchecks", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": check},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": check,
            },
        },
    })  # fmt: skip
    queues = [
        cluster_queue(namespace, "cpu", "cpu", {"cpu": "64", "memory": "512Gi"}, check),
        cluster_queue(
            namespace, "gpu", FLAVOR,
            {"cpu": "256", "memory": "2Ti", "nvidia.com/gpu": "8"}, check,
        ),
    ]  # fmt: skip
    try:
        wait_until(
            f"AdmissionCheck {check} Active (Kueue's provisioning controller runs only when the"
            " ProvisioningRequest CRD was served at its start)",
            lambda: condition_is(kube.get(KUEUE, "admissionchecks", check), "Active"),
            timeout=60,
        )
        for cq in queues:
            kube.create(KUEUE, "clusterqueues", cq)
        for lq in ("cpu", "gpu"):
            body = {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": lq, "namespace": namespace},
                "spec": {"clusterQueue": f"{namespace}-{lq}"},
            }  # fmt: skip
            kube.create(KUEUE, "localqueues", body, namespace)
        for lq in ("cpu", "gpu"):

            def active(lq: str = lq) -> bool:
                return condition_is(kube.get(KUEUE, "localqueues", lq, namespace), "Active")

            wait_until(f"LocalQueue {lq} Active", active, timeout=30)
        yield check
    finally:
        for cq in queues:
            kube.delete(KUEUE, "clusterqueues", cq["metadata"]["name"])
        kube.delete(KUEUE, "admissionchecks", check)
        kube.delete(KUEUE, "provisioningrequestconfigs", check)


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


class Requests:
    """Every ProvisioningRequest of one namespace its watch saw created (Kueue deletes them once
    the Workload finishes: CleanupProvisioningRequestsOnEviction, docs/provisioning.md)."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.seen: dict[str, Json] = {}  # name -> the request as last seen
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error = ""

    def __enter__(self) -> Requests:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=30)

    def names(self) -> set[str]:
        return set(self.seen)

    def _run(self) -> None:
        version: str | None = None
        while not self._stopped.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            kwargs: dict[str, Any] = {"timeout_seconds": 2}
            if version:
                kwargs["resource_version"] = version
            try:
                for event in w.stream(  # type: ignore[no-untyped-call]
                    self.kube.custom.list_namespaced_custom_object,
                    *AUTOSCALING, self.namespace, "provisioningrequests", **kwargs,
                ):  # fmt: skip
                    obj = event["object"]
                    self.seen[obj["metadata"]["name"]] = obj
                version = w.resource_version
            except ApiException as err:
                if err.status != 410:
                    self.error = f"ProvisioningRequest watch failed: {err.status} {err.reason}"
                    return
                version = None
            except urllib3.exceptions.HTTPError:
                self._stopped.wait(0.5)


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
    tj, rt = example(
        ns, nodes=2, gpus=1,
        durations={"dataset-initializer": INIT, "model-initializer": INIT, "node": "5s"},
    )  # fmt: skip
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
