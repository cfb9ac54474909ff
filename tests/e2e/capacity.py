"""Kueue's ProvisioningRequest check and the stand-in for cluster-autoscaler, as the e2e tier uses
them (tests/e2e/test_provisioning.py under trainweave, upstream_phase.py's ``provisioning`` half
under upstream): the provisioner's flags, the TrainJob's durations, the check's objects, a
ClusterQueue behind it, and a watch of the requests.

The provisioner (hack/provisioner.py, ``hack/cluster.py provisioner on``; docs/provisioning.md)
makes kwok nodes labelled ``trainweave.test/pool: provisioned`` for best-effort-atomic-scale-up
requests, ``Provisioned`` only once they are Ready (``--wait-for-nodes``), 15 s after the
scale-up; it books capacity for 10 s only, by time (as cluster-autoscaler 1.36.1), shorter than
the initializers (20 s), and deletes a node that has been empty for 5 s after its booking ended
(cluster-autoscaler's scale-down-unneeded time, scaled shorter than the initializers' rest).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .kube import KUEUE, Kube, condition_is, resumable_watch, wait_until

Json = dict[str, Any]
CLUSTER_PY = Path(__file__).resolve().parents[2] / "hack" / "cluster.py"
AUTOSCALING = ("autoscaling.x-k8s.io", "v1")
POOL = "trainweave.test/pool"
FLAVOR = "provisioned"  # a ResourceFlavor no node matches until the provisioner makes one
CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
PREFIX = "prov"  # the provisioner's node names
# durations in cluster-autoscaler's seconds, times --scale 0.1: booking 10 s, nodes 15 s after the
# scale-up, a node empty 5 s after its booking deleted (after the test `provisioner off` deletes
# the rest)
PROVISIONER = [
    "--scale", "0.1", "--pool", "gpu", "--label", f"{POOL}={FLAVOR}", "--prefix", PREFIX,
    "--booking", "100", "--booking-by-time-only", "--provision-delay", "150",
    "--wait-for-nodes", "--scale-down-unneeded", "50", "--max-nodes", "4",
]  # fmt: skip
INIT = "20s"  # each initializer: longer than the booking and the scale-down after it
DURATIONS = {"dataset-initializer": INIT, "model-initializer": INIT, "node": "5s"}
CPU_QUOTA = {"cpu": "64", "memory": "512Gi"}
GPU_QUOTA = {"cpu": "256", "memory": "2Ti", "nvidia.com/gpu": "8"}


def cluster(*args: str) -> None:
    """``hack/cluster.py ARGS``, which must succeed."""
    done = subprocess.run(
        [sys.executable, str(CLUSTER_PY), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"cluster.py {args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"


@contextmanager
def provisioner() -> Iterator[None]:
    """hack/provisioner.py running as a cluster process; off afterwards (its nodes deleted)."""
    cluster("provisioner", "on", "--", *PROVISIONER)
    try:
        yield
    finally:
        cluster("provisioner", "off")


def cluster_queue(
    ns: str, name: str, flavors: dict[str, Json], check: str, on: str = FLAVOR
) -> Json:
    """A ClusterQueue ``<ns>-<name>`` of ``ns``: one resource group of ``flavors`` (name -> quota,
    in order; every flavor covers the same resources, 0 where it has none) and the
    ProvisioningRequest ``check`` on the flavor ``on``."""
    covered = sorted({r for quota in flavors.values() for r in quota})
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"{ns}-{name}"},
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": r, "nominalQuota": quota.get(r, "0")} for r in covered
                            ],
                        }
                        for flavor, quota in flavors.items()
                    ],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": check, "onFlavors": [on]}]},
        },
    }


def local_queue(kube: Kube, ns: str, name: str) -> None:
    """LocalQueue ``name`` of ``ns`` on ClusterQueue ``<ns>-<name>``, awaited Active."""
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": f"{ns}-{name}"},
    }  # fmt: skip
    kube.create(KUEUE, "localqueues", body, ns)

    def active() -> bool:
        return condition_is(kube.get(KUEUE, "localqueues", name, ns), "Active")

    wait_until(f"LocalQueue {name} Active", active, timeout=30)


@contextmanager
def check_objects(kube: Kube, check: str) -> Iterator[str]:
    """The ResourceFlavor FLAVOR (shared, left in place), and the ProvisioningRequestConfig and
    AdmissionCheck ``check`` (deleted afterwards), the check awaited Active; yields ``check``."""
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
    try:
        kube.create(KUEUE, "admissionchecks", {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
            "metadata": {"name": check},
            "spec": {
                "controllerName": "kueue.x-k8s.io/provisioning-request",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                    "name": check,
                },
            },
        })  # fmt: skip
        wait_until(
            f"AdmissionCheck {check} Active (Kueue's provisioning controller runs only when the"
            " ProvisioningRequest CRD was served at its start)",
            lambda: condition_is(kube.get(KUEUE, "admissionchecks", check), "Active"),
            timeout=60,
        )
        yield check
    finally:
        kube.delete(KUEUE, "admissionchecks", check)
        kube.delete(KUEUE, "provisioningrequestconfigs", check)


class Requests:
    """Every ProvisioningRequest of one namespace its watch saw created, as last seen (Kueue
    deletes them once the Workload finishes: CleanupProvisioningRequestsOnEviction,
    docs/provisioning.md)."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube, self.namespace = kube, namespace
        self._seen: dict[str, Json] = {}  # name -> the request as last seen
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error = ""

    def __enter__(self) -> Requests:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join(timeout=30)

    @property
    def seen(self) -> dict[str, Json]:
        """A copy: name -> the request as last seen."""
        with self._lock:
            return dict(self._seen)

    def names(self) -> set[str]:
        return set(self.seen)

    def _run(self) -> None:
        error = resumable_watch(
            self.kube.custom.list_namespaced_custom_object,
            *AUTOSCALING, self.namespace, "provisioningrequests",
            stopped=self._stopped, on_object=self._see,
        )  # fmt: skip
        if error:
            self.error = f"ProvisioningRequest watch failed: {error}"

    def _see(self, request: Json) -> None:
        with self._lock:
            self._seen[request["metadata"]["name"]] = request


def conditions(request: Json) -> dict[str, Json]:
    """A ProvisioningRequest's conditions by type."""
    return {c["type"]: c for c in (request.get("status") or {}).get("conditions") or []}


def booking_expired(request: Json) -> bool:
    c = conditions(request).get("BookingExpired")
    return c is not None and c.get("status") == "True"
