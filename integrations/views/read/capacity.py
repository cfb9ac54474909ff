"""A step's admission check in words: "waiting for capacity", apart from "waiting for quota",
and why a capacity request cost the step its quota. Pure.

One text for every reader of a ``quota.StepQuota`` (``checks.capacity`` read into it):
``trainweave status``, ``status --timeline``, ``trainweave queues`` and the controller's
``StepWaitingForCapacity``, ``StepCapacityRetry`` and ``StepCapacityRejected`` Events. Kueue's
check messages are quoted as Kueue writes them, after the prefix that says which failure it was
(``checks.RETRY_FAILED``, ``checks.RETRY_EXPIRED``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainweave.integrations.views.read import checks
from trainweave.integrations.views.read.quota import StepQuota
from trainweave.states import CheckState, conditions

FAILED, EXPIRED, REJECTED = "failed", "booking expired", "rejected"


def request(q: StepQuota) -> str:
    """``ProvisioningRequest <name>``, or ``its ProvisioningRequest`` when the name is unknown."""
    return f"ProvisioningRequest {q.request}" if q.request else "its ProvisioningRequest"


def failure(q: StepQuota) -> tuple[str, str]:
    """``(what happened, Kueue's message without its prefix)`` of a check that evicted ``q``:
    ``failed`` / ``booking expired`` (Retry), ``rejected`` (Rejected: retries used up, or the
    capacity revoked; Kueue's message is the request's condition message then)."""
    if q.check_state == CheckState.REJECTED:
        return REJECTED, q.check_message
    for prefix, what in ((checks.RETRY_EXPIRED, EXPIRED), (checks.RETRY_FAILED, FAILED)):
        if q.check_message.startswith(prefix):
            return what, q.check_message.removeprefix(prefix)
    return FAILED, q.check_message


def waiting(q: StepQuota) -> str:
    """``waiting for capacity: ProvisioningRequest X (admission check C Pending: message)``."""
    told = f": {q.check_message}" if q.check_message else ""
    return f"waiting for capacity: {request(q)} (admission check {q.check} {q.check_state}{told})"


def lost(q: StepQuota) -> str:
    """Why an admission check took ``q``'s quota back, and what happens next."""
    what, message = failure(q)
    told = f" ({q.check}: {message})" if message else f" ({q.check})"
    if what == REJECTED:
        then = (
            f"Kueue deactivated Workload {q.workload}: the step waits until it is active again"
            if q.deactivated
            else f"Workload {q.workload} is active again: Kueue queues it"
        )
    else:
        then = "Kueue gave its quota back and makes a new request after its backoff"
    head = f"the booking of {request(q)} expired" if what == EXPIRED else f"{request(q)} {what}"
    return f"{head}{told}: {then}"


def note(q: StepQuota) -> str:
    """What ``q``'s admission check does to it, for a reader ("" when nothing)."""
    if q.waiting_for_capacity:
        return waiting(q)
    if q.evicted_by_check:
        return lost(q)
    return ""


def event(q: StepQuota) -> str:
    """The controller's Event message for ``q`` (``note`` with the step and ClusterQueue)."""
    if q.waiting_for_capacity:
        where = q.cluster_queue or q.queue
        return f"step {q.step} holds its quota in ClusterQueue {where} and is {waiting(q)}"
    return f"step {q.step}: {lost(q)}; no retry of the step is spent"


def request_conditions(request: Mapping[str, Any]) -> str:
    """A ProvisioningRequest's conditions on one line, as its provisioner wrote them
    (cluster-autoscaler apis ``provisioningrequest/autoscaling.x-k8s.io/v1/types.go:178-195``:
    Accepted, Provisioned, Failed, BookingExpired, CapacityRevoked):
    ``Accepted=True, Provisioned=False (CapacityIsNotFound: Capacity is not found...)``."""
    status = request.get("status")
    found = conditions(status) if isinstance(status, dict) else []
    parts = []
    for c in found:
        why = ": ".join(x for x in (c.reason, c.message) if x)
        parts.append(f"{c.type}={c.status}" + (f" ({why})" if why else ""))
    return ", ".join(parts) or "no condition yet"
