"""What `trainweave status`, `status --timeline` and `trainweave queues` show of a step that
holds its quota waiting for capacity (a ProvisioningRequest admission check, issue 40), apart
from a step waiting for quota. Workloads as Kueue v0.19.2 writes them (kueue_checks.py)."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

from tests.unit import kueue_checks as K
from tests.unit.cluster_objects import (
    Pod,
    StepState,
    cluster_queue,
    local_queue,
    pod,
    trainjob,
    workflow,
)
from tests.unit.fakeapi import Transport
from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.resources import Target
from trainweave import labels as L
from trainweave.integrations.commands import status_cli
from trainweave.integrations.commands.queues_format import format_table
from trainweave.integrations.commands.timeline_format import format_text, to_json
from trainweave.integrations.views.read import quota
from trainweave.integrations.views.read.observed import Observed, quota_records
from trainweave.integrations.views.read.queues_view import Cluster, queues_view
from trainweave.integrations.views.read.queues_view import to_json as queues_json
from trainweave.integrations.views.read.timeline import SpanKind, timeline

Json = dict[str, Any]
NOW = K.T + timedelta(minutes=10)
REQ1 = f"{K.WL}-{K.CHECK}-1"
STEPS = {
    "init": StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)]),
    "node": StepState("Running", [Pod("node-0-0", "Running")], role="trainer", queue="gpu"),
}


def obs(wl: Json, *pods: Json) -> Observed:
    tj = trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})
    return Observed(tj, (workflow(STEPS),), pods, (wl,))


def running_pod(start: float) -> Json:
    """The trainer's pod: its container started ``start`` minutes past 10:00, 2 GPUs."""
    p = pod("ft", "node", "node-0-0", "Running")
    p["status"]["containerStatuses"] = [
        {"name": "node", "state": {"running": {"startedAt": K.at(start)}}}
    ]
    p["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    return p


def spans(o: Observed) -> list[tuple[str, float, float]]:
    (row,) = (r for r in timeline(o, NOW).rows if r.step == "node")
    return [(str(s.kind), (s.start - K.T).total_seconds() / 60, s.seconds / 60) for s in row.spans]


# --- status --timeline ---------------------------------------------------------------------------


def test_the_wait_for_capacity_is_a_hold_of_its_own() -> None:
    """Quota reserved at 10:04, still no capacity at 10:10: the GPUs are held all along."""
    o = obs(K.waiting(message=K.NOT_FOUND))
    assert spans(o) == [("waiting", 1, 3), ("capacity", 4, 6)]
    (row,) = timeline(o, NOW).rows
    assert (row.gpu_seconds_held, row.gpu_seconds_used) == (2 * 6 * 60, 0)
    assert row.seconds(SpanKind.CAPACITY) == row.held_seconds == 6 * 60


def test_after_admission_the_capacity_span_ends_at_admitted_also_from_the_annotation() -> None:
    live = obs(K.admitted(), running_pod(7))
    want = [("waiting", 1, 3), ("capacity", 4, 2), ("held", 6, 1), ("running", 7, 3)]
    assert spans(live) == want
    ann = quota.encode(quota_records(live, NOW))
    gone = Observed(trainjob(annotations={L.QUOTA_ANNOTATION: ann}))
    assert [k for k, _, _ in spans(gone)] == ["waiting", "capacity", "held"]
    assert spans(gone)[1] == ("capacity", 4, 2)


def test_the_gantt_marks_capacity_and_says_which_request() -> None:
    text = format_text(timeline(obs(K.waiting(message=K.NOT_FOUND)), NOW))
    print(text)
    lines = text.splitlines()
    bar = next(ln for ln in lines if ln.startswith("node a0"))
    assert "." in bar and "~" in bar and "=" not in bar
    assert any(ln.strip() == "~ quota held, waiting for capacity (an admission check)"
               for ln in lines)  # fmt: skip
    assert lines[-1] == (
        f"node a0 has held its quota 6m00s waiting for capacity: ProvisioningRequest {REQ1}"
        f" (admission check {K.CHECK} Pending: {K.NOT_FOUND})"
    )
    done = format_text(timeline(obs(K.admitted(), running_pod(7)), NOW)).splitlines()
    assert done[-1] == (
        f"node a0 held its quota 2m00s waiting for ProvisioningRequest {REQ1}"
        f" (admission check {K.CHECK})"
    )
    lost = format_text(timeline(obs(K.evicted_retry()), NOW)).splitlines()
    assert lost[-1].startswith(f"node a0: ProvisioningRequest {REQ1} failed ({K.CHECK}: ")
    assert lost[-2].startswith("node a0 waited 9m00s in gpu (ClusterQueue -), evicted")
    table = next(ln.split() for ln in lines if ln.startswith("node a0  "))
    assert table[4:7] == ["QuotaReserved", "3m00s", "6m00s"]  # STATE WAITED HELD


def test_timeline_json_has_the_capacity_seconds_and_request() -> None:
    node = to_json(timeline(obs(K.admitted(), running_pod(7)), NOW))["steps"][0]
    assert (node["capacitySeconds"], node["heldSeconds"], node["runningSeconds"]) == (
        120.0,
        360.0,
        180.0,
    )
    assert (node["check"], node["request"], node["capacity"]) == (K.CHECK, REQ1, "")
    assert [p["phase"] for p in node["phases"]] == ["waiting", "capacity", "held", "running"]


# --- status --------------------------------------------------------------------------------------

PROVREQ: Json = {
    "apiVersion": "autoscaling.x-k8s.io/v1",
    "kind": "ProvisioningRequest",
    "metadata": {"name": REQ1, "namespace": "ns"},
    "spec": {"provisioningClassName": K.CLASS, "podSets": []},
    "status": {
        "conditions": [
            {"type": "Accepted", "status": "True", "reason": "Accepted", "message": ""},
            {"type": "Provisioned", "status": "False", "reason": "CapacityIsNotFound",
             "message": K.NOT_FOUND},
        ]
    },
}  # fmt: skip


def test_status_shows_waiting_for_capacity_apart_and_the_request_condition() -> None:
    fake = Transport.of(PROVREQ)
    requests = status_cli.provisioning_requests(fake, "ns")
    assert list(requests) == [REQ1]
    out = io.StringIO()
    status_cli.print_status(obs(K.waiting(message=K.NOT_FOUND)), NOW, out, requests)
    print(out.getvalue())
    lines = out.getvalue().splitlines()
    node = next(ln.split("  ") for ln in lines if ln.startswith("node "))
    assert "QuotaReserved (waiting for capacity)" in [c.strip() for c in node]
    assert lines[-2:] == [
        f"  capacity node ({K.WL}): waiting for capacity: ProvisioningRequest {REQ1}"
        f" (admission check {K.CHECK} Pending: {K.NOT_FOUND})",
        f"    ProvisioningRequest {REQ1}: Accepted=True (Accepted),"
        f" Provisioned=False (CapacityIsNotFound: {K.NOT_FOUND})",
    ]


def test_status_of_a_step_waiting_for_quota_is_unchanged() -> None:
    out = io.StringIO()
    status_cli.print_status(obs(K.pending_quota()), NOW, out)
    assert "capacity" not in out.getvalue()
    assert "Pending (Pending)" in out.getvalue()


def test_status_without_rights_on_requests_says_what_the_workload_says() -> None:
    fake = Transport.of(PROVREQ)

    def forbidden(method: str, target: Target, body: Json | None) -> None:
        raise Failure(403, "Forbidden", "provisioningrequests is forbidden")

    fake.server.hooks.append(forbidden)
    assert status_cli.provisioning_requests(fake, "ns") == {}
    out = io.StringIO()
    status_cli.print_status(obs(K.deactivated()), NOW, out, {})
    assert out.getvalue().splitlines()[-1] == (
        f"  capacity node ({K.WL}): its ProvisioningRequest rejected ({K.CHECK}: {K.REVOKED}):"
        f" Kueue deactivated Workload {K.WL}: the step waits until it is active again"
    )


GPU8 = {"gpu": {"nvidia.com/gpu": "8"}}
GPU2_RESERVED = {"gpu": {"nvidia.com/gpu": "2"}}

# --- queues --------------------------------------------------------------------------------------


def test_queues_count_the_steps_waiting_for_capacity_per_cluster_queue() -> None:
    cluster = Cluster(
        cluster_queues=(cluster_queue("ns-gpu", GPU8, reserved=GPU2_RESERVED, pending=1),),
        local_queues=(local_queue("gpu", "ns-gpu"),),
        workloads=(K.waiting(message=K.NOT_FOUND),),
        trainjobs=(trainjob(),),
        workflows=(workflow(STEPS),),
    )
    view = queues_view(cluster, NOW)
    text = format_table(view)
    print(text)
    lines = text.splitlines()
    assert lines[0] == (
        "ClusterQueue ns-gpu  cohort: -  admitted: 0  pending: 1  waiting for capacity: 1"
    )
    row = next(ln for ln in lines if ln.startswith("  ns "))
    assert "QuotaReserved (waiting for capacity)" in row and "6m00s" in row  # held, not waiting
    assert lines[-1] == (
        f"  ns/ft node: waiting for capacity: ProvisioningRequest {REQ1}"
        f" (admission check {K.CHECK} Pending: {K.NOT_FOUND})"
    )
    doc = queues_json(view, NOW)
    (cq,) = doc["clusterQueues"]
    assert cq["waitingForCapacity"] == 1
    (step,) = cq["namespaces"][0]["pipelines"][0]["steps"]
    assert step["capacity"]["request"] == REQ1 and step["capacity"]["waiting"] is True
    assert step["heldSeconds"] == 360.0
