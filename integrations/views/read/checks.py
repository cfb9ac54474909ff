"""Kueue's admission checks on a step Workload, read as "waiting for capacity". Pure.

Kueue v0.19.2 (``apis/kueue/v1beta2/workload_types.go:796-870``, ``AdmissionCheckState``): every
check of the Workload's ClusterQueue has an entry in ``status.admissionChecks`` with a ``state``
(Pending, Ready, Retry, Rejected: ``states.CheckState``), a ``message``, a ``retryCount`` and,
once Ready, ``podSetUpdates``. A Workload is Admitted once it has quota reserved and every check
is Ready (``pkg/workload/admissionchecks.go:39-105``), so a step whose quota is reserved while a
check is not Ready holds its quota and waits: for a ProvisioningRequest check, for capacity
(docs/provisioning.md). A Workload does not say which controller a check belongs to; every check
that holds a trainweave step is read as a ProvisioningRequest check, the one admission check
Kueue runs on a worker cluster's pod groups (docs/admins.md, "Capacity on demand").

The request is named as Kueue names it: ``<workload>-<check>-<attempt>``
(``pkg/controller/admissionchecks/provisioning/provisioning.go:55-58``), cut after 247
characters and suffixed with 5 hex of its sha1 (``controller.go:63-67, 919-927``). The attempt
is the check's ``retryCount + 1`` while the check waits (``controller.go:283-288``; the request
of the last attempt is deleted at each eviction, ``CleanupProvisioningRequestsOnEviction``), and
once Ready the name is in the podSetUpdates' ``autoscaling.x-k8s.io/consume-provisioning-request``
annotation (``controller.go:706-732``), which Kueue puts on the step's pods when it ungates them.

A check that fails evicts the Workload (``pkg/controller/core/workload_controller.go:969-1000``):

- **Retry** (the request ``Failed``, or its booking expired before admission: ``controller.go:
  618-633, 642-658``, check message ``Retrying after failure: ...`` or ``Retrying after booking
  expired: ...``): ``Evicted`` with reason ``AdmissionCheck`` and message ``Evicted due to
  AdmissionCheck in Retry state: "<check>" (<message>)`` (``workload_controller.go:948-966,
  993-994``); the checks reset to Pending, a Retry one with ``retryCount + 1``
  (``pkg/workload/evict/evict.go:219-240``), so the request that failed is
  ``<workload>-<check>-<retryCount>``; the Workload is queued again after the config's backoff.
- **Rejected** (retries used up, or ``CapacityRevoked``: ``controller.go:618-641``): the Workload
  is deactivated (``spec.active: false``, ``workload_controller.go:979-990, 597-601``), then
  ``Evicted`` with reason ``DeactivatedDueToAdmissionCheck`` and message ``The workload is
  deactivated due to AdmissionCheck in Rejected state: "<check>" (<message>)``
  (``workload_controller.go:672-681``, ``evict.go:180-183``); its checks reset without a retry
  count, so the request's name is no longer on the Workload (``quota.merge`` keeps the last one
  seen). Kueue queues it again only once ``spec.active`` is true again.

Either eviction stops the group's running pods with ``TerminationTarget``, reason
``WorkloadEvictedDueTo<Evicted reason>`` (``pkg/controller/jobframework/reconciler.go:1537-1539``),
which ``disruption`` excuses: a failed request costs a step no retry.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainweave.integrations.views.read.bodies import condition, obj_at
from trainweave.states import CheckState, KueueCondition

Json = dict[str, Any]
# the pod annotations of a Ready check's podSetUpdates (cluster-autoscaler apis
# provisioningrequest/autoscaling.x-k8s.io/v1/types.go:204-207; Kueue controller.go:713-717)
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CLASS = "autoscaling.x-k8s.io/provisioning-class-name"
EVICTED_RETRY = "AdmissionCheck"  # kueue WorkloadEvictedByAdmissionCheck
EVICTED_REJECTED = "DeactivatedDueToAdmissionCheck"  # ReasonWithCause(Deactivated, AdmissionCheck)
RETRY_FAILED = "Retrying after failure: "  # controller.go:621
RETRY_EXPIRED = "Retrying after booking expired: "  # controller.go:646
WAITING = frozenset({CheckState.PENDING, CheckState.RETRY, CheckState.REJECTED})
_MAX_PREFIX = 252 - 5  # controller.go:63-67: objNameMaxPrefixLength
# `<Noun> in <state> state: "<check>" (<message>)[; "<check>" (<message>)]`, the first check
_EVICTED_BY = re.compile(r'AdmissionChecks? in \w+ state: "([^"]*)"(?: \((.*?)\))?(?:; "|$)', re.S)


@dataclass(frozen=True)
class Check:
    """One ``status.admissionChecks`` entry; ``request``: its podSetUpdates' consume annotation."""

    name: str
    state: str
    message: str = ""
    retry_count: int = 0
    request: str = ""


@dataclass(frozen=True)
class Capacity:
    """What an admission check does to a step now: it holds the step while its quota is reserved
    (``state`` Pending, or Retry/Rejected until Kueue evicts it), it let the step through (Ready,
    with the request the pods consume), or it evicted the step (Retry: the quota given back and
    a new request to come; Rejected: the Workload deactivated). ``request``: the
    ProvisioningRequest concerned ("" when the Workload no longer says)."""

    check: str
    state: str
    message: str
    request: str

    @property
    def waiting(self) -> bool:
        """The check holds the step (its quota reserved, not admitted)."""
        return self.state in WAITING


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dicts(obj: Mapping[str, Any], *path: str) -> list[Json]:
    """The mappings of the list at ``path`` (none where it is absent or no list)."""
    *head, last = path
    found = obj_at(obj, *head).get(last)
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def checks(workload: Mapping[str, Any]) -> tuple[Check, ...]:
    """The Workload's admission checks, in Kueue's order (by name); entries without a name are
    skipped."""
    out = []
    for c in _dicts(workload, "status", "admissionChecks"):
        if not _str(c.get("name")):
            continue
        consumed = {
            _str(obj_at(u, "annotations").get(CONSUME)) for u in _dicts(c, "podSetUpdates")
        } - {""}
        out.append(
            Check(
                _str(c["name"]),
                _str(c.get("state")),
                _str(c.get("message")),
                _int(c.get("retryCount")),
                min(consumed, default=""),
            )
        )
    return tuple(out)


def request_name(workload: str, check: str, attempt: int) -> str:
    """Kueue's name of attempt ``attempt`` of ``check``'s ProvisioningRequest for ``workload``
    (``provisioning.go:55-58``, ``limitObjectName`` ``controller.go:919-927``)."""
    full = f"{workload}-{check}-{attempt}"
    if len(full) <= _MAX_PREFIX:
        return full
    return f"{full[:_MAX_PREFIX]}-{hashlib.sha1(full.encode()).hexdigest()[:5]}"


def _true(conds: list[Json], ctype: str) -> Json | None:
    cond = condition(conds, ctype)
    return cond if cond is not None and cond.get("status") == "True" else None


def active(workload: Mapping[str, Any]) -> bool:
    """``spec.active`` (Kueue: true unless set false, ``pkg/workload/workload.go:1244-1246``)."""
    return obj_at(workload, "spec").get("active") is not False


def capacity(workload: Mapping[str, Any]) -> Capacity | None:
    """What the Workload's admission checks do to its step now (module docstring); None when no
    check holds, let through with a request, or evicted it."""
    conds = _dicts(workload, "status", "conditions")
    name = _str(obj_at(workload, "metadata").get("name"))
    found = checks(workload)
    reserved = _true(conds, KueueCondition.QUOTA_RESERVED) is not None
    admitted = _true(conds, KueueCondition.ADMITTED) is not None
    evicted = _true(conds, KueueCondition.EVICTED)
    if reserved and not admitted and evicted is None:  # (evicted: its quota is being released)
        for c in found:
            if c.state in WAITING:
                attempt = c.retry_count + 1
                return Capacity(c.name, c.state, c.message, request_name(name, c.name, attempt))
    if evicted is not None and not reserved:
        why = _str(evicted.get("reason"))
        match = _EVICTED_BY.search(_str(evicted.get("message")))
        if why in (EVICTED_RETRY, EVICTED_REJECTED) and match is not None:
            check, message = match.group(1), match.group(2) or ""
            if why == EVICTED_REJECTED:
                return Capacity(check, CheckState.REJECTED, message, "")
            tries = next((c.retry_count for c in found if c.name == check), 0)
            request = request_name(name, check, tries) if tries else ""
            return Capacity(check, CheckState.RETRY, message, request)
    ready = next((c for c in found if c.state == CheckState.READY and c.request), None)
    if ready is not None and reserved:
        return Capacity(ready.name, ready.state, ready.message, ready.request)
    return None
