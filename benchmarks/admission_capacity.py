"""The provisioning traces' cluster side (benchmarks/admission.py ``--trace prov-*``, issue 40):
Kueue's ProvisioningRequest admission check on the GPU flavor, the stand-in for
cluster-autoscaler (hack/provisioner.py, run by ``hack/cluster.py provisioner on|off``), watches
of its nodes and of the requests, the records benchmarks/admission_provisioning.py computes on,
and the GPU-node timeline picture.

Both setups run behind the same check: a ResourceFlavor ``provisioned`` whose node label no node
has until the provisioner makes one (every run starts from zero GPU nodes of that flavor:
``provisioner off`` deletes them), a ProvisioningRequestConfig of class
best-effort-atomic-scale-up with ``managedResources: [nvidia.com/gpu]``, and the AdmissionCheck
on that flavor of the GPU ClusterQueue (upstream: its one ClusterQueue). The provisioner runs
with cluster-autoscaler's times (booking 600 s, scale-down-unneeded 600 s; a scale-up's nodes
come 30 s after it) times ``TIME`` x the trace's ``--scale``, as cluster-autoscaler master does
(a booking ends once its pods are bound; 1.36.1 holds it for the whole 600 s).
"""

from __future__ import annotations

import contextlib
import importlib
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from admission_provisioning import (
    BoundPod,
    NodeLife,
    Records,
    RequestLife,
    TrainerStart,
    expired,
    node_idle,
)
from admission_record import KUEUE, Recorder, Steps, latest, stamp, trainjob_of
from admission_trace import GPU, Job, Json, queues
from kubernetes import client

ROOT = Path(__file__).resolve().parents[1]
AUTOSCALING = ("autoscaling.x-k8s.io", "v1")
FLAVOR = "provisioned"  # as tests/e2e/test_provisioning.py's
POOL_LABEL = "trainweave.test/pool"
NODE_LABEL = "provisioner.trainweave.test/node"  # hack/provisioner_wire.py
OWNER = "provisioner.trainweave.test/for"
CHECK = "bench-gpu-nodes"
CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
TIME = 0.1  # cluster-autoscaler's seconds -> the trace's seconds (before --scale)
CA_BOOKING = CA_SCALE_DOWN = 600.0  # processor.go defaultReservationTime; config/const.go
CA_RETRY_BASE = 60.0  # Kueue's retryStrategy.backoffBaseSeconds default


def provisioner_flags(scale: float) -> list[str]:
    """hack/provisioner.py's flags: the GPU pool's node with the flavor's label, at most 8
    nodes (64 GPUs, twice the quota), cluster-autoscaler's times scaled by ``TIME * scale``."""
    return [
        "--scale", f"{TIME * scale:g}", "--pool", "gpu", "--label", f"{POOL_LABEL}={FLAVOR}",
        "--prefix", "bench-gpu", "--max-nodes", "8",
        "--booking", f"{CA_BOOKING:g}", "--scale-down-unneeded", f"{CA_SCALE_DOWN:g}",
    ]  # fmt: skip


def check_objects(scale: float, check: str) -> list[Json]:
    """The ResourceFlavor, ProvisioningRequestConfig and AdmissionCheck ``check``
    (cluster-scoped)."""
    base = max(1, round(CA_RETRY_BASE * TIME * scale))
    return [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
         "metadata": {"name": FLAVOR}, "spec": {"nodeLabels": {POOL_LABEL: FLAVOR}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
         "metadata": {"name": check},
         "spec": {"provisioningClassName": CLASS, "managedResources": [GPU],
                  "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": base}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
         "metadata": {"name": check},
         "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                  "parameters": {"apiGroup": "kueue.x-k8s.io",
                                 "kind": "ProvisioningRequestConfig", "name": check}}},
    ]  # fmt: skip


PLURALS = {
    "ResourceFlavor": "resourceflavors",
    "ProvisioningRequestConfig": "provisioningrequestconfigs",
    "AdmissionCheck": "admissionchecks",
}


class CapacityRecorder(Recorder):
    """The admission benchmark's watches, and two more: the provisioner's nodes (cluster-wide,
    by its label) and the namespace's ProvisioningRequests. Nodes: created, ready (Ready True);
    requests: created."""

    KINDS = (*Recorder.KINDS, "nodes", "provisioningrequests")

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        super().__init__(api, ns)
        self.nodes: dict[str, Json] = {}
        self.requests: dict[str, Json] = {}
        self.stores.update(nodes=self.nodes, provisioningrequests=self.requests)

    def _stream(self, w: Any, kind: str, **kwargs: Any) -> Any:
        if kind == "nodes":
            return w.stream(self.core.list_node, label_selector=f"{NODE_LABEL}=true", **kwargs)
        if kind == "provisioningrequests":
            return w.stream(self.custom.list_namespaced_custom_object, *AUTOSCALING, self.ns,
                            kind, **kwargs)  # fmt: skip
        return super()._stream(w, kind, **kwargs)

    def _states(self, kind: str, obj: Json) -> list[tuple[str, str]]:
        uid = obj["metadata"]["uid"]
        if kind == "nodes":
            conds = (obj.get("status") or {}).get("conditions") or []
            ready = any(c["type"] == "Ready" and c["status"] == "True" for c in conds)
            return [(uid, "created")] + ([(uid, "ready")] if ready else [])
        if kind == "provisioningrequests":
            return [(uid, "created")]
        return super()._states(kind, obj)

    def last_seen(self) -> float:
        """When the watches last saw an object in a state not seen before."""
        return max(self.first.values(), default=0.0)


def is_gpu_pod(pod: Json) -> bool:
    for c in pod["spec"].get("containers") or []:
        res = c.get("resources") or {}
        if float(str((res.get("limits") or {}).get(GPU) or (res.get("requests") or {}).get(GPU)
                     or 0)):  # fmt: skip
            return True
    return False


def _true(obj: Json, ctype: str) -> Json | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype and c["status"] == "True":
            return dict(c)
    return None


def records(
    rec: CapacityRecorder, steps: Steps, trainjobs: list[str], t0: float, stopped: float, end: float
) -> Records:
    """What ``rec`` saw of the run's GPU nodes (made for this namespace's requests), GPU pods,
    requests and trainers (step ``node``) of ``trainjobs``, relative to ``t0``."""

    def rel(t: float | None) -> float | None:
        return None if t is None else t - t0

    nodes = []
    for uid, node in rec.nodes.items():
        owner = (node["metadata"].get("annotations") or {}).get(OWNER, "")
        created = rec.first.get((uid, "created"))
        if not owner.startswith(f"{rec.ns}/") or created is None:
            continue
        nodes.append(NodeLife(node["metadata"]["name"], created - t0,
                              rel(rec.first.get((uid, "ready"))), rel(rec.deleted.get(uid)),
                              owner.split("/", 1)[1]))  # fmt: skip
    pods = []
    for uid, pod in rec.pods.items():
        bound = rec.first.get((uid, "scheduled"))
        if not is_gpu_pod(pod) or bound is None:
            continue
        ends = [t for t in (rec.first.get((uid, "succeeded")), rec.deleted.get(uid)) if t]
        pods.append(BoundPod(trainjob_of(pod), pod["spec"]["nodeName"], bound - t0,
                             rel(min(ends, default=None))))  # fmt: skip
    tj_of = {wl["metadata"]["name"]: trainjob_of(wl) for wl in rec.workloads.values()}
    tj_of |= {name: key[0] for name, key in steps.group.items()}
    requests = []
    for uid, req in rec.requests.items():
        owners = req["metadata"].get("ownerReferences") or []
        workload = next((o["name"] for o in owners if o.get("kind") == "Workload"), "")
        provisioned, lapsed = _true(req, "Provisioned"), _true(req, "BookingExpired") or {}
        requests.append(RequestLife(
            tj_of.get(workload, ""), req["metadata"]["name"],
            rec.first.get((uid, "created"), t0) - t0,
            rel(stamp(provisioned.get("lastTransitionTime"))) if provisioned else None,
            rel(stamp(lapsed.get("lastTransitionTime"))), lapsed.get("reason", ""),
        ))  # fmt: skip
    starts = []
    for tj in trainjobs:
        uids = steps.pods.get((tj, "node"), [])
        starts.append(TrainerStart(tj, steps.done(tj, "node"), rel(latest(rec, uids, "created")),
                                   rel(latest(rec, uids, "running"))))  # fmt: skip
    return Records(tuple(sorted(nodes, key=lambda n: n.created)), tuple(pods), tuple(requests),
                   tuple(starts), end - t0, stopped - t0, tuple(trainjobs))  # fmt: skip


class Capacity:
    """The check, the provisioner and the watches of one provisioning run (``on`` before it,
    ``off`` after), for benchmarks/admission.py's ``Cluster.run``."""

    def __init__(self, custom: client.CustomObjectsApi, scale: float, jobs: list[Job]) -> None:
        self.custom, self.scale = custom, scale
        self.flags = provisioner_flags(scale)
        # no new state is seen while the longest pod runs; past that, the run is stuck
        self.stall_s = max(s for j in jobs for s in j.seconds.values()) + 20.0
        self.scale_down_s = CA_SCALE_DOWN * TIME * scale
        self.check = CHECK

    def _cluster(self, *args: str) -> None:
        subprocess.run([sys.executable, str(ROOT / "hack/cluster.py"), *args], check=True,
                       capture_output=True)  # fmt: skip

    def on(self) -> None:
        """The provisioner started afresh, the check's objects created and the check Active.
        A check of its own per run: the last run's goes only once its ClusterQueue is gone
        (Kueue's in-use finalizer), after its namespace's Workloads."""
        self.check = f"{CHECK}-{uuid.uuid4().hex[:5]}"
        self._cluster("provisioner", "on", "--", *self.flags)
        for obj in check_objects(self.scale, self.check):
            with contextlib.suppress(client.ApiException):  # 409: there already
                self.custom.create_cluster_custom_object(*KUEUE, PLURALS[obj["kind"]], obj)
        deadline = time.time() + 60
        while time.time() < deadline:
            check: Json = self.custom.get_cluster_custom_object(  # type: ignore[assignment]
                *KUEUE, "admissionchecks", self.check
            )
            if _true(check, "Active"):
                return
            time.sleep(0.5)
        raise RuntimeError(
            f"AdmissionCheck {self.check} not Active: is the ProvisioningRequest CRD served?"
        )

    def off(self) -> None:
        """The provisioner stopped and its nodes deleted; the check and its config deleted."""
        self._cluster("provisioner", "off")
        for plural in ("admissionchecks", "provisioningrequestconfigs"):
            with contextlib.suppress(client.ApiException):
                self.custom.delete_cluster_custom_object(*KUEUE, plural, self.check)

    def queues(self, ns: str, upstream: bool) -> list[Json]:
        return queues(ns, upstream, gpu_flavor=FLAVOR, check=self.check)

    def recorder(self, api: client.ApiClient, ns: str) -> CapacityRecorder:
        return CapacityRecorder(api, ns)

    def stalled(self, rec: Recorder) -> bool:
        """Nothing new seen for longer than the longest pod of the trace runs."""
        assert isinstance(rec, CapacityRecorder)
        last = rec.last_seen()
        return bool(last) and time.time() - last > self.stall_s

    def settle(self, rec: Recorder) -> None:
        """Until the run's nodes are scaled down (the idle tail is part of the run), at most the
        scale-down time and 15 s."""
        assert isinstance(rec, CapacityRecorder)
        deadline = time.time() + self.scale_down_s + 15

        def up() -> bool:
            return any(
                uid not in rec.deleted
                for uid, n in rec.nodes.items()
                if (n["metadata"].get("annotations") or {}).get(OWNER, "").startswith(f"{rec.ns}/")
            )

        while up() and time.time() < deadline:
            time.sleep(1.0)


def plot(trace_name: str, runs: list[Any], out: Path) -> None:
    """Per GPU node of each setup, side by side: up (light), a GPU pod bound (dark), the time a
    booking made for it expired (red x), a stranded trainer's pods created (dotted).
    ``runs``: admission_report.Run with ``capacity``."""
    plt: Any = importlib.import_module("matplotlib.pyplot")
    importlib.import_module("matplotlib").use("Agg")
    rows = max(len(r.capacity.nodes) for r in runs) or 1
    fig, axes = plt.subplots(1, len(runs), figsize=(7 * len(runs), 0.35 * rows + 2),
                             sharex=True, squeeze=False)  # fmt: skip
    for ax, run in zip(axes[0], runs, strict=True):
        recs: Records = run.capacity
        lapsed = {r.name: r.booking_ended for r in expired(recs.requests)}
        for y, node in enumerate(recs.nodes):
            start = node.created
            stop = node.deleted if node.deleted is not None else recs.end
            ax.barh(y, stop - start, left=start, height=0.8, color="#d9d9d9")
            for p in (p for p in recs.pods if p.node == node.name):
                ended = p.ended if p.ended is not None else recs.end
                ax.barh(y, ended - p.bound, left=p.bound, height=0.5, color="#2166ac")
            at = lapsed.get(node.request)
            if at is not None:
                ax.plot([at], [y], "x", color="#b2182b", markersize=8)
        for trainer in recs.starts:  # a trainer due whose pods never ran
            if trainer.created is not None and trainer.running is None:
                ax.axvline(trainer.created, color="#e08214", linestyle=":", linewidth=1)
        f = run.figures
        idle = sum(node_idle(n, recs.pods, recs.end).total for n in recs.nodes)
        ax.set_title(f"{run.setup}: {f['prov_gpu_node_s']:.0f} GPU node-s, idle {idle:.0f}, "
                     f"expired {f['prov_bookings_expired']:.0f}", fontsize=9)  # fmt: skip
        ax.set_xlabel("seconds since submission")
        ax.set_yticks(range(len(recs.nodes)), [f"node {i}" for i in range(len(recs.nodes))],
                      fontsize=7)  # fmt: skip
    axes[0][0].set_ylabel("GPU node")
    fig.suptitle(f"{trace_name}: grey, a GPU node up; blue, a GPU pod bound to it; x, the "
                 "booking it was made for expired; dotted, a trainer's pods created that never "
                 "ran", fontsize=9)  # fmt: skip
    fig.tight_layout()
    fig.savefig(out, dpi=90)
