"""views/bodies: typed read-only views over wire dicts; absent fields give the documented
defaults, present ones are read."""

from __future__ import annotations

from typing import Any

import pytest

from trainweave import labels as L
from trainweave.integrations.views.read.bodies import (
    Body,
    ClusterQueueBody,
    LocalQueueBody,
    Meta,
    PodBody,
    TrainJobBody,
    WorkflowBody,
    WorkloadBody,
    list_at,
    obj_at,
)

Json = dict[str, Any]

META: Json = {
    "name": "tj",
    "namespace": "team-a",
    "uid": "u-1",
    "resourceVersion": "42",
    "creationTimestamp": "2026-11-01T10:00:00Z",
    "deletionTimestamp": "2026-11-01T10:05:00Z",
    "labels": {"app": "x", "empty": ""},
    "annotations": {"note": "y"},
    "ownerReferences": [
        {"uid": "owner-1", "controller": True},
        {"uid": "owner-2"},
    ],
    "finalizers": ["foregroundDeletion"],
}


@pytest.mark.parametrize("obj", [{}, {"metadata": None}, None])
def test_meta_absent_gives_defaults(obj: Json | None) -> None:
    m = Meta.of(obj)
    assert (m.name, m.namespace, m.uid, m.resource_version) == ("", "", "", "")
    assert (m.creation_timestamp, m.deletion_timestamp, m.continue_token) == ("", "", "")
    assert dict(m.labels) == {} and dict(m.annotations) == {}
    assert m.label("app") == "" and m.annotation("note") == ""
    assert m.label("app", "0") == "0" and m.annotation("note", "d") == "d"
    assert m.owner_references == () and m.owner_uids == frozenset()
    assert m.finalizers == ()
    assert not m.controlled_by("owner-1")


def test_meta_null_subfields_give_defaults() -> None:
    m = Meta.of({"metadata": {"labels": None, "annotations": None, "ownerReferences": None}})
    assert dict(m.labels) == {} and dict(m.annotations) == {} and m.owner_references == ()


def test_meta_present_is_read() -> None:
    m = Meta.of({"metadata": META})
    assert (m.name, m.namespace, m.uid, m.resource_version) == ("tj", "team-a", "u-1", "42")
    assert m.creation_timestamp == "2026-11-01T10:00:00Z"
    assert m.deletion_timestamp == "2026-11-01T10:05:00Z"
    assert m.label("app") == "x" and m.annotation("note") == "y"
    assert m.label("empty", "d") == ""  # present but empty: not the default
    assert m.owner_uids == frozenset({"owner-1", "owner-2"})
    assert m.controlled_by("owner-1") and not m.controlled_by("owner-2")
    assert m.finalizers == ("foregroundDeletion",)
    assert Meta.of({"metadata": {"continue": "tok"}}).continue_token == "tok"


def test_body_spec_status_conditions() -> None:
    empty = Body.of({})
    assert empty.spec == {} and empty.status == {} and empty.conditions == []
    assert Body.of(None).meta.name == ""
    cond = {"type": "Finished", "status": "True"}
    b = Body.of({"spec": {"a": 1}, "status": {"conditions": [cond]}})
    assert b.spec == {"a": 1} and b.conditions == [cond]
    assert b.condition_true("Finished") and not b.condition_true("Other")


def test_trainjob_body() -> None:
    tj = TrainJobBody.of({"metadata": META})
    assert not tj.suspend and tj.managed_by == "" and tj.active_deadline_seconds is None
    assert tj.runtime_ref == {} and tj.jobs_status == [] and tj.conditions == []
    assert TrainJobBody.of({"spec": {"activeDeadlineSeconds": 0}}).active_deadline_seconds is None
    job = {"name": "node", "active": 1}
    tj = TrainJobBody.of(
        {
            "spec": {
                "suspend": True,
                "managedBy": "kueue.x-k8s.io/multikueue",
                "activeDeadlineSeconds": 60,
                "runtimeRef": {"name": "torch"},
            },
            "status": {"jobsStatus": [job]},
        }
    )
    assert tj.suspend and tj.managed_by == "kueue.x-k8s.io/multikueue"
    assert tj.active_deadline_seconds == 60 and tj.runtime_ref == {"name": "torch"}
    assert tj.jobs_status == [job]


def test_pod_body() -> None:
    p = PodBody.of({})
    assert p.phase == "" and not p.terminal and not p.ready
    assert p.scheduling_gates == () and not p.gated and not p.deleting
    p = PodBody.of(
        {
            "metadata": {"deletionTimestamp": "2026-11-01T10:05:00Z"},
            "spec": {"schedulingGates": [{"name": L.KUEUE_ADMISSION_GATE}]},
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }
    )
    assert p.phase == "Running" and not p.terminal and p.ready
    assert p.scheduling_gates == (L.KUEUE_ADMISSION_GATE,) and p.gated and p.deleting
    for phase in ("Succeeded", "Failed"):
        assert PodBody.of({"status": {"phase": phase}}).terminal
    unready = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    assert not PodBody.of(unready).ready


def test_workflow_body() -> None:
    assert WorkflowBody.of({}).phase == "" and WorkflowBody.of({}).templates == ()
    wf = WorkflowBody.of({"spec": {"templates": [{"name": "a"}]}, "status": {"phase": "Failed"}})
    assert wf.phase == "Failed" and wf.templates == ({"name": "a"},)


def test_workload_body() -> None:
    wl = WorkloadBody.of({})
    assert wl.queue_name == "" and wl.cluster_queue == "" and not wl.finished
    wl = WorkloadBody.of(
        {
            "spec": {"queueName": "lq"},
            "status": {
                "admission": {"clusterQueue": "cq"},
                "conditions": [{"type": "Finished", "status": "True"}],
            },
        }
    )
    assert wl.queue_name == "lq" and wl.cluster_queue == "cq" and wl.finished


def test_queue_bodies() -> None:
    assert LocalQueueBody.of({}).cluster_queue == ""
    assert LocalQueueBody.of({"spec": {"clusterQueue": "cq"}}).cluster_queue == "cq"
    cq = ClusterQueueBody.of({})
    assert cq.cohort == "" and cq.resource_groups == [] and cq.flavors_reservation == []
    assert cq.admitted_workloads == 0 and cq.pending_workloads == 0
    cq = ClusterQueueBody.of(
        {
            "spec": {"cohortName": "c", "resourceGroups": [{"flavors": []}]},
            "status": {
                "flavorsReservation": [{"name": "f"}],
                "admittedWorkloads": 2,
                "pendingWorkloads": 3,
            },
        }
    )
    assert cq.cohort == "c" and cq.resource_groups == [{"flavors": []}]
    assert cq.flavors_reservation == [{"name": "f"}]
    assert (cq.admitted_workloads, cq.pending_workloads) == (2, 3)


def test_paths() -> None:
    task = {"arguments": {"parameters": [{"name": "replica", "value": "1"}]}}
    assert list_at(task, "arguments", "parameters") == [{"name": "replica", "value": "1"}]
    assert list_at(task, "dag", "tasks") == [] and list_at(None, "x") == []
    assert list_at({"dag": None}, "dag", "tasks") == []
    assert obj_at(task, "arguments") == task["arguments"]
    assert obj_at(task, "missing", "deeper") == {} and obj_at({"a": "text"}, "a") == {}


def test_views_read_through_and_are_frozen() -> None:
    raw: Json = {"metadata": {"name": "a"}}
    body = Body.of(raw)
    raw["metadata"]["name"] = "b"  # views read through: the dict stays the data
    assert body.meta.name == "b"
    with pytest.raises(AttributeError):
        body.raw = {}  # type: ignore[misc]
