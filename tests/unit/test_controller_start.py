"""The controller's start-up reconcile and its Events: the first jobsStatus goes out with the
start, and Events never hold a reconcile up; its Workflow views go with their Workflows."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from typing import Any

from tests.unit.cluster_objects import trainjob, workflow
from tests.unit.test_reconcile import INIT_OK, NOW, fake_renderer
from trainweave.integrations.cluster.controller import Config, Controller
from trainweave.integrations.cluster.events import EventSender, is_event
from trainweave.integrations.cluster.informer import WorkQueue
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views import api
from trainweave.integrations.views.event import event
from trainweave.labels import EventReason, EventType

Json = dict[str, Any]
TJ_PATH = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/ft"
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "rt"},
    "spec": {},
}


class ApiServer:
    """A fake edge that answers writes as the API server does: the object as stored, with a
    resourceVersion (so the controller's write-through has something to put in its caches)."""

    def __init__(self, tj: Json, answers: bool = True) -> None:
        self.answers = answers  # False: writes answer no object (nothing to write through)
        self.objects: dict[str, Json] = {
            TJ_PATH: tj,
            "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/rt": RUNTIME,
        }
        self.sent: list[api.Request] = []
        self.rv = 10

    def __call__(self, req: api.Request) -> Json:
        self.sent.append(req)
        self.rv += 1
        if req.method == "GET":
            if req.path in self.objects:
                return copy.deepcopy(self.objects[req.path])
            raise api.ApiError(404, "NotFound")
        if not self.answers:
            return {}
        if req.method == "POST":
            body = copy.deepcopy(req.body or {})
            meta = body.setdefault("metadata", {})
            meta.update(uid=f"uid-{self.rv}", resourceVersion=str(self.rv))
            meta.setdefault("name", f"{meta.get('generateName', 'x')}{self.rv}")
            return body
        if req.method == "PATCH" and req.path.startswith(TJ_PATH):
            tj = self.objects[TJ_PATH]
            patch = req.body or {}
            for k, v in patch.get("metadata", {}).get("annotations", {}).items():
                tj["metadata"].setdefault("annotations", {})[k] = v
            tj.setdefault("status", {}).update(patch.get("status", {}))
            tj["metadata"]["resourceVersion"] = str(self.rv)
            return copy.deepcopy(tj)
        return {}

    def writes(self, path_end: str) -> list[Json]:
        return [r.body or {} for r in self.sent if r.is_write and r.path.endswith(path_end)]


def no_stream(req: api.Request) -> Iterator[Json]:
    return iter(())


def controller(server: ApiServer, async_events: bool = False) -> Controller:
    ctl = Controller(
        server, no_stream, fake_renderer, Config(), Metrics(), lambda: NOW, async_events
    )
    tj = copy.deepcopy(server.objects[TJ_PATH])
    tj["metadata"]["resourceVersion"] = "1"
    ctl.trainjobs.put(tj)
    return ctl


def test_start_up_reconcile_writes_the_first_jobs_status_with_the_children() -> None:
    server = ApiServer(trainjob())
    ctl = controller(server)
    ctl.reconcile(("ns", "ft"))
    statuses = server.writes("/status")
    assert len(statuses) == 1  # one status write, after the Workflow exists
    jobs = statuses[0]["status"]["jobsStatus"]
    assert [j["name"] for j in jobs] == ["dataset-initializer", "model-initializer", "node"]
    assert all(j["failed"] == 0 and j["succeeded"] == 0 for j in jobs)
    assert len(server.writes("/workflows")) == 1  # started once
    assert len(ctl.queue) == 0  # nothing left for a later reconcile to finish


def test_start_up_reconcile_without_write_through_leaves_the_status_to_the_next_one() -> None:
    """When the children are not in the caches after the start (an API server that answers no
    object), nothing is started twice: the key goes back in the queue."""
    server = ApiServer(trainjob(), answers=False)
    ctl = controller(server)
    ctl.reconcile(("ns", "ft"))
    assert len(server.writes("/workflows")) == 1
    assert len(ctl.queue) == 1


def test_events_are_queued_and_sent_in_order_from_their_own_thread() -> None:
    sent: list[str] = []
    gate = threading.Event()

    def send(req: api.Request) -> Json:
        gate.wait(10)
        sent.append(str((req.body or {})["reason"]))
        if len(sent) == 1:
            raise api.ApiError(500, "InternalError")  # logged; the next ones still go
        return {}

    events = EventSender(send)
    reqs = [api.create(api.EVENT, "ns", {"reason": r, "metadata": {}}) for r in "ABC"]
    assert all(is_event(r) for r in reqs)
    assert [events.put(r) for r in reqs] == [{}, {}, {}]  # returned before any was sent
    assert sent == []
    gate.set()
    events.close(timeout=10)
    assert sent == ["A", "B", "C"]
    assert not is_event(api.merge_patch(api.TRAINJOB, "ns", "ft", {"status": {}}, "status"))


def test_a_full_event_queue_drops_the_newest_and_counts_it() -> None:
    taken, gate = threading.Event(), threading.Event()
    dropped: list[int] = []

    def send(req: api.Request) -> Json:
        taken.set()
        gate.wait(10)
        return {}

    events = EventSender(send, lambda: dropped.append(1), pending_max=1)
    req = api.create(api.EVENT, "ns", {"reason": "A", "metadata": {}})
    events.put(req)
    assert taken.wait(10)  # the thread holds the first one
    events.put(req)  # fills the queue of one
    events.put(req)  # dropped
    assert dropped == [1]
    gate.set()
    events.close(timeout=10)


def test_the_controller_queues_events_and_still_writes_status_in_line() -> None:
    server = ApiServer(trainjob())
    gate = threading.Event()

    def slow_events(req: api.Request) -> Json:
        if is_event(req):
            gate.wait(10)
        return server(req)

    ctl = controller(server, async_events=True)
    assert ctl.events is not None
    ctl.events.send = slow_events
    ctl.reconcile(("ns", "ft"))
    assert len(server.writes("/status")) == 1
    tj = ctl.trainjobs.get("ns", "ft")
    assert tj is not None
    note = event(tj, EventType.NORMAL, EventReason.STEP_ADMITTED, "m", NOW)
    assert ctl.send(note) == {}  # queued while the sender is held up
    assert server.writes("/events") == []
    gate.set()
    ctl.stop()
    assert [e["reason"] for e in server.writes("/events")] == ["StepAdmitted"]
    assert ctl.metrics.events_dropped._value.get() == 0


def test_a_workflow_view_is_kept_until_its_workflow_changes_or_goes() -> None:
    ctl = controller(ApiServer(trainjob()))
    wf = workflow({"init": INIT_OK})
    wf["metadata"].update(uid="wf-uid", resourceVersion="5")
    ctl.workflows.put(wf)
    first = ctl.view(wf)
    assert ctl.view(wf) is first  # same resourceVersion: the same view
    ctl.workflows._drop(("ns", "ft"))  # as a DELETED watch event does, then on_change
    ctl._enq_wf(wf)
    assert "wf-uid" not in ctl.views


def test_a_trainjob_being_deleted_is_reconciled_first_and_without_settling() -> None:
    ctl = controller(ApiServer(trainjob()))
    ctl.queue = WorkQueue(settle=60.0)  # a settle time no test waits out
    other = trainjob()
    other["metadata"]["name"] = "other"
    ctl._enq(other)  # a start-up: waits to settle
    deleting = trainjob()
    deleting["metadata"]["deletionTimestamp"] = "2026-11-01T10:10:00Z"
    ctl._enq(deleting)
    assert ctl.queue.get(timeout=0) == ("ns", "ft")
    assert ctl.queue.get(timeout=0) is None
