"""Per-step ProvisioningRequests (issue 40): a step whose quota is reserved while its admission
check is Pending waits for capacity, apart from a step waiting for quota; a request that fails,
expires or is revoked costs the step no retry and the TrainJob says why. Workloads as Kueue
v0.19.2 writes them (tests/unit/kueue_checks.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from tests.unit import kueue_checks as K
from tests.unit.cluster_objects import Pod, StepState, pod, trainjob, workflow
from trainweave import labels as L
from trainweave.adapters.argo import retry
from trainweave.integrations.views.decide import reconcile, verdict
from trainweave.integrations.views.read import capacity, checks, disruption, quota, slim
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed, quota_records
from trainweave.model import RetryPolicy

Json = dict[str, Any]
NOW = K.T + timedelta(minutes=10)
INFO = {"step": "node", "role": "trainer", "attempt": 0}
REQ1, REQ2 = f"{K.WL}-{K.CHECK}-1", f"{K.WL}-{K.CHECK}-2"
INIT_OK = StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)])


# --- reading the Workload ----------------------------------------------------------------------

# (Workload, (quota state, check, check state, request, waiting for capacity, evicted by check))
CASES = [
    pytest.param(K.pending_quota, ("Pending", "", "", "", False, False), id="waiting-for-quota"),
    pytest.param(K.kept_gated, ("Pending", "", "", "", False, False), id="kept-gate-no-request"),
    pytest.param(K.waiting, ("QuotaReserved", K.CHECK, "Pending", REQ1, True, False),
                 id="quota-held-check-pending"),
    pytest.param(lambda: K.waiting(retries=1, message=K.NOT_FOUND),
                 ("QuotaReserved", K.CHECK, "Pending", REQ2, True, False),
                 id="second-attempt-not-found-yet"),
    pytest.param(K.admitted, ("Admitted", K.CHECK, "Ready", REQ1, False, False),
                 id="provisioned-admitted"),
    pytest.param(K.evicted_retry, ("Evicted", K.CHECK, "Retry", REQ1, False, True),
                 id="failed-retry-evicted"),
    pytest.param(K.deactivated, ("Evicted", K.CHECK, "Rejected", "", False, True),
                 id="rejected-deactivated"),
]  # fmt: skip


@pytest.mark.parametrize(("make", "want"), CASES)
def test_what_the_check_does_to_the_step(
    make: Callable[[], Json], want: tuple[str, str, str, str, bool, bool]
) -> None:
    for wl in (make(), slim.workload(make())):  # the controller's cache keeps what it reads
        q = quota.step_quota(wl, INFO, NOW)
        got = (q.state, q.check, q.check_state, q.request)
        assert (*got, q.waiting_for_capacity, q.evicted_by_check) == want


def test_a_kept_workload_asks_for_nothing_before_its_gate_lifts() -> None:
    """Kueue makes no request for a Workload without quota (controller.go:135-139), and a gated
    Workload is not admissible: trainweave shows no wait for capacity and keeps no record."""
    wl = K.kept_gated()
    assert checks.capacity(wl) is None
    wf = workflow({"node": StepState("Pending", role="trainer", queue="gpu")})
    assert quota_records(Observed(trainjob(), (wf,), (), (wl,)), NOW) == []


def test_an_eviction_still_releasing_the_quota_is_no_new_wait() -> None:
    """Kueue resets the checks in the eviction's own patch, and releases the quota once the
    pods stopped: in between, no wait for the next request is shown."""
    wl = K.waiting(retries=1)
    wl["status"]["conditions"].append(K.evicted_retry()["status"]["conditions"][1])
    assert checks.capacity(wl) is None


def test_waiting_for_capacity_holds_quota_and_is_counted_held() -> None:
    q = quota.step_quota(K.waiting(), INFO, NOW)
    assert q.state in quota.HOLDING and q.hold_seconds == 6 * 60
    assert q.resource_seconds["nvidia.com/gpu"] == 2 * 6 * 60
    assert q.wait_seconds == 3 * 60  # waiting for quota ended at the reservation


def test_kueue_names_long_requests_as_it_cuts_object_names() -> None:
    short = checks.request_name("wl", "c", 3)
    assert short == "wl-c-3"
    name = checks.request_name("w" * 250, "check", 1)
    assert len(name) == 253 and name[:247] == ("w" * 250)[:247] and name[247] == "-"


def test_the_record_round_trips_and_old_records_read_as_before() -> None:
    recs = [quota.step_quota(make(), INFO, NOW) for make in (K.admitted, K.deactivated)]
    assert quota.decode(quota.encode(recs)) == recs
    plain = quota.step_quota(K.pending_quota(), INFO, NOW)
    assert "deactivated" not in quota.encode([plain])  # nothing new on a step without a check


def test_a_deactivated_record_keeps_the_request_seen_before() -> None:
    before = quota.step_quota(K.waiting(retries=1), INFO, NOW)
    after = quota.step_quota(K.deactivated(), INFO, NOW)
    (merged,) = quota.merge([before], [after])
    assert (merged.request, merged.check_state, merged.deactivated) == (REQ2, "Rejected", True)
    assert quota.needs_admin(merged)
    assert quota.changed([before], [merged])


def test_slim_keeps_the_checks_and_drops_what_is_not_theirs() -> None:
    wl = K.admitted()
    wl["spec"]["active"] = "no"  # not a bool: gone
    wl["status"]["admissionChecks"] += [
        {"state": "Ready"},  # no name
        {"name": "x", "retryCount": "2", "podSetUpdates": [{"annotations": {"a": "b"}}, 3]},
    ]
    kept = slim.workload(wl)
    assert "active" not in kept["spec"]
    assert [c["name"] for c in kept["status"]["admissionChecks"]] == [K.CHECK, "x"]
    assert kept["status"]["admissionChecks"][1] == {"name": "x"}
    assert checks.checks(kept)[0].request == REQ1


# --- what the user reads -------------------------------------------------------------------------


def test_the_words_for_each_state() -> None:
    def note(wl: Json) -> str:
        return capacity.note(quota.step_quota(wl, INFO, NOW))

    assert note(K.pending_quota()) == ""
    assert note(K.waiting(retries=1, message=K.NOT_FOUND)) == (
        f"waiting for capacity: ProvisioningRequest {REQ2} (admission check {K.CHECK} Pending:"
        f" {K.NOT_FOUND})"
    )
    assert note(K.evicted_retry()) == (
        f"ProvisioningRequest {REQ1} failed ({K.CHECK}: injected failure): Kueue gave its quota"
        " back and makes a new request after its backoff"
    )
    expired = K.evicted_retry("Retrying after booking expired: Capacity reservation time expired")
    assert note(expired).startswith(
        f"the booking of ProvisioningRequest {REQ1} expired ({K.CHECK}: Capacity reservation"
    )
    assert note(K.deactivated()) == (
        f"its ProvisioningRequest rejected ({K.CHECK}: {K.REVOKED}): Kueue deactivated Workload"
        f" {K.WL}: the step waits until it is active again"
    )
    again = K.deactivated()
    again["spec"]["active"] = True  # an admin re-activated it: Kueue queues it
    assert note(again).endswith(f"Workload {K.WL} is active again: Kueue queues it")


def test_request_conditions_on_one_line() -> None:
    req = {
        "status": {
            "conditions": [
                {"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""},
                {"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound",
                 "message": K.NOT_FOUND},
            ]
        }
    }  # fmt: skip
    assert capacity.request_conditions(req) == (
        f"Accepted=True (Accepted), Provisioned=False (CapacityIsNotFound: {K.NOT_FOUND})"
    )
    assert capacity.request_conditions({}) == "no condition yet"


# --- the controller's Events ---------------------------------------------------------------------


def events_of(states: list[Json], tj: Json | None = None) -> list[tuple[str, str, str]]:
    """The Events of one reconcile per Workload state, each after the last one's writes (the
    ``trainweave.io/quota`` annotation) are applied; a repeat of the last state adds none."""
    tj = tj or trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wf = workflow({"init": INIT_OK, "node": StepState("Running", role="trainer", queue="gpu")})
    out = []
    for wl in [*states, states[-1]]:
        plan = reconcile.actions(Observed(tj, (wf,), (), (wl,)), NOW)
        for req in plan.after_start:
            body = req.body or {}
            if body.get("kind") == "Event":
                out.append((body["type"], body["reason"], body["message"]))
            elif req.method == "PATCH" and not req.path.endswith("/status"):
                tj["metadata"].setdefault("annotations", {}).update(body["metadata"]["annotations"])
    return out


def test_events_tell_waiting_for_quota_from_waiting_for_capacity() -> None:
    got = events_of([K.pending_quota(), K.waiting(), K.admitted()])
    assert [(kind, why) for kind, why, _ in got] == [
        ("Normal", "StepWaitingForQuota"),
        ("Normal", "StepWaitingForCapacity"),
        ("Normal", "StepAdmitted"),
    ]
    assert got[1][2] == (
        "step node holds its quota in ClusterQueue ns-gpu and is waiting for capacity:"
        f" ProvisioningRequest {REQ1} (admission check {K.CHECK} Pending)"
    )


def test_a_failed_then_revoked_request_says_why_and_warns_once_deactivated() -> None:
    got = events_of([K.waiting(), K.evicted_retry(), K.waiting(retries=1), K.deactivated()])
    assert [(kind, why) for kind, why, _ in got] == [
        ("Normal", "StepWaitingForCapacity"),
        ("Normal", "StepCapacityRetry"),
        ("Normal", "StepWaitingForCapacity"),
        ("Warning", "StepCapacityRejected"),
    ]
    assert REQ1 in got[1][2] and "no retry of the step is spent" in got[1][2]
    assert REQ2 in got[2][2]
    assert got[3][2] == (
        f"step node: ProvisioningRequest {REQ2} rejected ({K.CHECK}: {K.REVOKED}): Kueue"
        f" deactivated Workload {K.WL}: the step waits until it is active again; no retry of"
        " the step is spent"
    )


def test_a_deactivated_step_is_not_failed() -> None:
    """Rejected: Kueue keeps the Workload inactive until someone makes it active again, and
    upstream's TrainJob stays suspended behind it: the TrainJob waits, it does not fail."""
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    wf = workflow({"init": INIT_OK, "node": StepState("Running", role="trainer", queue="gpu")})
    plan = reconcile.actions(Observed(tj, (wf,), (), (K.deactivated(),)), NOW)
    status = [r.body for r in plan.after_start if r.path.endswith("/status")]
    conds = [c for b in status if b for c in b["status"].get("conditions", [])]
    assert all(c["type"] != "Failed" for c in conds)
    assert not [r for r in plan.requests if r.body and "shutdown" in (r.body.get("spec") or {})]
    assert [q.workload for q in plan.waiting] == [K.WL]


# --- pods the eviction stopped cost no retry -----------------------------------------------------

REVOKED_PODS = "WorkloadEvictedDueToDeactivatedDueToAdmissionCheck"
FAILED_PODS = "WorkloadEvictedDueToAdmissionCheck"


@pytest.mark.parametrize(
    ("reason", "wl", "told"),
    [
        pytest.param(REVOKED_PODS, K.deactivated(), f"ProvisioningRequest {REQ1} rejected",
                     id="revoked-while-running"),
        pytest.param(FAILED_PODS, K.evicted_retry(), f"ProvisioningRequest {REQ1} failed",
                     id="failed-while-running"),
    ],
)  # fmt: skip
def test_pods_stopped_by_the_check_cost_no_retry_and_the_event_names_the_request(
    reason: str, wl: Json, told: str
) -> None:
    """The trainer ran on the provisioned nodes (its pods carry the consume annotation Kueue's
    podSetUpdates gave them); Kueue evicts the Workload and stops both ranks (exit 143, and 4
    for the rank that lost its peer): nothing counts against a budget of 0."""
    pods_ = [Pod("node-0-1", "Failed", code=143), Pod("node-0-0", "Failed", code=4)]
    wf = workflow({"init": INIT_OK, "node": StepState("Running", pods_, role="trainer")})
    policy = RetryPolicy(0, shared=True)
    limits = {"node": {"node": retry.policy_wire(policy)}}
    wf["metadata"]["annotations"][L.BACKOFF_LIMITS_ANNOTATION] = json.dumps(limits)
    for node in wf["status"]["nodes"].values():
        if node["type"] == "Pod" and ".node." in node["name"]:
            node.update(startedAt=K.at(6), finishedAt=K.at(8))
    consume = {checks.CONSUME: REQ1}
    stopped = pod("ft", "node", "node-0-1", "Failed", annotations=consume)
    cond = {"type": "TerminationTarget", "status": "True", "reason": reason}
    stopped["status"]["conditions"] = [cond | {"lastTransitionTime": K.at(8)}]
    peer = pod("ft", "node", "node-0-0", "Failed", annotations=consume)
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    plan = reconcile.actions(Observed(tj, (wf,), (stopped, peer), (wl,)), NOW)
    assert not [r for r in plan.requests if r.body and "shutdown" in (r.body.get("spec") or {})]
    assert view(wf).backoff_limits["node"]["node"] == policy
    record = disruption.observe({}, "ft", [stopped, peer])
    counted, failed = verdict.spent("node", policy, view(wf).steps["node"], record)
    assert (counted, failed) == ({}, None)
    assert verdict.verdict("node", "node", policy, view(wf).steps["node"], {}) is not None
    (msg,) = [
        (r.body or {})["message"]
        for r in plan.after_start
        if (r.body or {}).get("reason") == "StepDisrupted"
    ]
    assert msg.startswith(f"step node: pods node-0-1(0) TerminationTarget ({reason}): they and")
    assert f"do not count against the step's retries; {told} ({K.CHECK}: " in msg


def test_a_preemption_event_says_nothing_of_capacity() -> None:
    q = replace(quota.step_quota(K.admitted(), INFO, NOW), state=quota.EVICTED)
    assert capacity.note(q) == ""  # Ready and evicted by something else: not the check's doing
