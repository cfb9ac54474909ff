"""A GPU step's Workload on a ClusterQueue with a ProvisioningRequest admission check, in each
state Kueue v0.19.2 writes it (shapes from ``pkg/controller/admissionchecks/provisioning/
controller.go``, ``pkg/controller/core/workload_controller.go``, ``pkg/workload/evict/evict.go``,
``pkg/workload/admissionchecks.go``; docs/provisioning.md). Tests only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.unit.cluster_objects import workload

Json = dict[str, Any]
T = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
WL = "ft-node-a0"
CHECK = "prov-gpu"
CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
GPU2 = {"cpu": "2", "nvidia.com/gpu": "2"}
NOT_FOUND = "Capacity is not found, CA will try to find it later."
REVOKED = "Capacity revoked by the provisioner"
FAILED = "Retrying after failure: injected failure"
NO_QUOTA = "couldn't assign flavors to pod set 9281a366: insufficient unused quota"


def at(minutes: float) -> str:
    return (T + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def check(state: str = "Pending", message: str = "", retries: int = 0, request: str = "") -> Json:
    """One ``status.admissionChecks`` entry."""
    out: Json = {"name": CHECK, "state": state, "message": message, "lastTransitionTime": at(1)}
    if retries:
        out["retryCount"] = retries
    if request:
        out["podSetUpdates"] = [
            {
                "name": "9281a366",
                "annotations": {
                    "autoscaling.x-k8s.io/consume-provisioning-request": request,
                    "autoscaling.x-k8s.io/provisioning-class-name": CLASS,
                },
            }
        ]
    return out


def _cond(ctype: str, status: str, reason: str, message: str, when: str) -> Json:
    return {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": when,
    }


def _base(checks: list[Json], reserved: str | None = None) -> Json:
    wl = workload(WL, queue="gpu", created=at(1), reserved=reserved, usage=GPU2, cq="ns-gpu")
    wl["status"]["admissionChecks"] = checks
    wl["status"]["resourceRequests"] = [{"name": "9281a366", "resources": GPU2}]
    return wl


def pending_quota() -> Json:
    """No quota yet: Kueue adds the check Pending at once (syncAdmissionCheckConditions)."""
    wl = _base([check()])
    wl["status"]["conditions"] = [_cond("QuotaReserved", "False", "Pending", NO_QUOTA, at(1))]
    return wl


def kept_gated() -> Json:
    """A kept Workload still behind trainweave's admission gate (docs/design.md, D21)."""
    wl = _base([check()])
    gate = {"kueue.x-k8s.io/admission-gated-by": "trainweave.io/predecessors"}
    wl["metadata"]["annotations"] = gate
    msg = "The workload is gated by trainweave.io/predecessors"
    wl["status"]["conditions"] = [_cond("QuotaReserved", "False", "AdmissionGated", msg, at(1))]
    return wl


def waiting(retries: int = 0, message: str = "") -> Json:
    """Quota reserved at 10:04, the check Pending: Admitted=False (UnsatisfiedChecks)."""
    wl = _base([check("Pending", message, retries)], reserved=at(4))
    wl["status"]["conditions"] = [
        _cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved", at(4)),
        _cond("Admitted", "False", "UnsatisfiedChecks", "not all checks ready", at(4)),
    ]
    return wl


def admitted(request: str = f"{WL}-{CHECK}-1") -> Json:
    """The request Provisioned at 10:06: the check Ready with its podSetUpdates, Admitted."""
    ready = check("Ready", "Provisioning Request was successfully provisioned.", 0, request)
    wl = _base([ready], reserved=at(4))
    wl["status"]["conditions"] = [
        _cond("QuotaReserved", "True", "QuotaReserved", "", at(4)),
        _cond("Admitted", "True", "Admitted", "The workload is admitted", at(6)),
    ]
    return wl


def evicted_retry(message: str = FAILED, retries: int = 1) -> Json:
    """The request Failed before admission: Retry, then evicted (quota released) and requeued
    after the backoff; the check reset to Pending with retryCount + 1."""
    wl = _base([check("Pending", "Reset to Pending after eviction. Previously: Retry", retries)])
    text = f'Evicted due to AdmissionCheck in Retry state: "{CHECK}" ({message})'
    wl["status"]["conditions"] = [
        _cond("QuotaReserved", "False", "Pending", text, at(7)),
        _cond("Evicted", "True", "AdmissionCheck", text, at(7)),
        _cond("Requeued", "False", "AdmissionCheck", text, at(7)),
    ]
    wl["status"]["schedulingStats"] = {"evictions": [{"reason": "AdmissionCheck", "count": 1}]}
    return wl


def deactivated(message: str = REVOKED) -> Json:
    """Rejected (CapacityRevoked, or retries used up): the Workload deactivated and evicted; the
    check reset without a retry count."""
    wl = _base([check("Pending", "Reset to Pending after eviction. Previously: Rejected")])
    wl["spec"]["active"] = False
    text = (
        "The workload is deactivated due to AdmissionCheck in Rejected state: "
        f'"{CHECK}" ({message})'
    )
    wl["status"]["conditions"] = [
        _cond("QuotaReserved", "False", "Pending", text, at(8)),
        _cond("Evicted", "True", "DeactivatedDueToAdmissionCheck", text, at(8)),
        _cond("Requeued", "False", "DeactivatedDueToAdmissionCheck", text, at(8)),
    ]
    stats = {"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}
    wl["status"]["schedulingStats"] = {"evictions": [stats]}
    return wl
