"""The controller's start-up reconcile and its Events: the first jobsStatus goes out with the
start, and Events never hold a reconcile up; its Workflow views go with their Workflows."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.unit.cluster_objects import cluster_runtime, trainjob, workflow
from tests.unit.fakeapi import Transport
from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.resources import Target
from tests.unit.test_reconcile import INIT_OK, NOW, fake_renderer
from trainweave.integrations.cluster.controller import Config, Controller
from trainweave.integrations.cluster.events import EventSender, is_event
from trainweave.integrations.cluster.informer import WorkQueue
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.requests import api
from trainweave.integrations.views.requests.event import event
from trainweave.labels import EventReason, EventType

Json = dict[str, Any]


def cluster() -> Transport:
    """The fake API server holding the TrainJob ``ft`` and its runtime."""
    return Transport.of(trainjob(), cluster_runtime())


def answering_nothing(fake: Transport) -> api.Send:
    """``fake``, its write answers dropped: the write lands, the controller gets no object back
    to put in its caches (as when a watch event is all it will learn from)."""

    def send(req: api.Request) -> Json:
        out = fake(req)
        return {} if req.is_write else out

    return send


def controller(
    fake: Transport, async_events: bool = False, send: api.Send | None = None
) -> Controller:
    ctl = Controller(
        send or fake, fake.stream, fake_renderer, Config(), Metrics(), lambda: NOW, async_events
    )
    tj = fake.server.find("TrainJob", "ns", "ft")
    assert tj is not None
    ctl.trainjobs.put(tj)
    return ctl


def writes(fake: Transport, path_end: str) -> list[Json]:
    return [r.body or {} for r in fake.write_requests if r.path.endswith(path_end)]


def test_start_up_reconcile_writes_the_first_jobs_status_with_the_children() -> None:
    fake = cluster()
    ctl = controller(fake)
    ctl.reconcile(("ns", "ft"))
    statuses = writes(fake, "/status")
    assert len(statuses) == 1  # one status write, after the Workflow exists
    jobs = statuses[0]["status"]["jobsStatus"]
    assert [j["name"] for j in jobs] == ["dataset-initializer", "model-initializer", "node"]
    assert all(j["failed"] == 0 and j["succeeded"] == 0 for j in jobs)
    assert len(writes(fake, "/workflows")) == 1  # started once
    stored = fake.server.find("TrainJob", "ns", "ft")
    assert stored is not None and stored["status"]["jobsStatus"] == jobs
    assert len(ctl.queue) == 0  # nothing left for a later reconcile to finish


def test_start_up_reconcile_without_write_through_leaves_the_status_to_the_next_one() -> None:
    """When the children are not in the caches after the start (an API server that answers no
    object), nothing is started twice: the key goes back in the queue."""
    fake = cluster()
    ctl = controller(fake, send=answering_nothing(fake))
    ctl.reconcile(("ns", "ft"))
    assert len(writes(fake, "/workflows")) == 1
    assert len(ctl.queue) == 1


def held(gate: threading.Event, taken: threading.Event | None = None) -> Callable[..., None]:
    """A hook that holds each Event POST until ``gate`` opens (``taken`` set when one waits)."""

    def hook(method: str, target: Target, body: Json | None) -> None:
        if method == "POST" and target.resource.kind.kind == "Event":
            if taken is not None:
                taken.set()
            gate.wait(10)

    return hook


def note(reason: str) -> api.Request:
    return event(trainjob(), EventType.NORMAL, reason, "m", NOW)


def test_events_are_queued_and_sent_in_order_from_their_own_thread() -> None:
    fake, gate = cluster(), threading.Event()
    fake.server.hooks.append(held(gate))

    def first_fails(method: str, target: Target, body: Json | None) -> None:
        if method == "POST" and (body or {}).get("reason") == "A":
            raise Failure(500, "InternalError", "etcd is away")  # logged; the next ones still go

    fake.server.hooks.append(first_fails)
    events = EventSender(fake)
    reqs = [note(r) for r in "ABC"]
    assert all(is_event(r) for r in reqs)
    assert [events.put(r) for r in reqs] == [{}, {}, {}]  # returned before any was sent
    assert fake.server.objects("Event") == []
    gate.set()
    events.close(timeout=10)
    assert [(r.body or {})["reason"] for r in fake.sent] == ["A", "B", "C"]
    assert [e["reason"] for e in fake.server.objects("Event", "ns")] == ["B", "C"]
    assert not is_event(api.merge_patch(api.TRAINJOB, "ns", "ft", {"status": {}}, "status"))


def test_a_full_event_queue_drops_the_newest_and_counts_it() -> None:
    fake, taken, gate = cluster(), threading.Event(), threading.Event()
    fake.server.hooks.append(held(gate, taken))
    dropped: list[int] = []
    events = EventSender(fake, lambda: dropped.append(1), pending_max=1)
    events.put(note("A"))
    assert taken.wait(10)  # the thread holds the first one
    events.put(note("B"))  # fills the queue of one
    events.put(note("C"))  # dropped
    assert dropped == [1]
    gate.set()
    events.close(timeout=10)
    assert [e["reason"] for e in fake.server.objects("Event", "ns")] == ["A", "B"]


def test_the_controller_queues_events_and_still_writes_status_in_line() -> None:
    fake, gate = cluster(), threading.Event()
    fake.server.hooks.append(held(gate))
    ctl = controller(fake, async_events=True)
    ctl.reconcile(("ns", "ft"))
    assert len(writes(fake, "/status")) == 1
    tj = ctl.trainjobs.get("ns", "ft")
    assert tj is not None
    step = event(tj, EventType.NORMAL, EventReason.STEP_ADMITTED, "m", NOW)
    assert ctl.send(step) == {}  # queued while the sender is held up
    assert fake.server.objects("Event") == []
    gate.set()
    ctl.stop()
    assert [e["reason"] for e in writes(fake, "/events")] == ["StepAdmitted"]
    assert [e["reason"] for e in fake.server.objects("Event", "ns")] == ["StepAdmitted"]
    assert ctl.metrics.events_dropped._value.get() == 0


def test_a_workflow_view_is_kept_until_its_workflow_changes_or_goes() -> None:
    ctl = controller(cluster())
    wf = workflow({"init": INIT_OK})
    wf["metadata"].update(uid="wf-uid", resourceVersion="5")
    ctl.workflows.put(wf)
    first = ctl.view(wf)
    assert ctl.view(wf) is first  # same resourceVersion: the same view
    ctl.workflows._drop(("ns", "ft"))  # as a DELETED watch event does, then on_change
    ctl._enq_wf(wf)
    assert "wf-uid" not in ctl.views


def test_a_trainjob_being_deleted_is_reconciled_first_and_without_settling() -> None:
    ctl = controller(cluster())
    ctl.queue = WorkQueue(settle=60.0)  # a settle time no test waits out
    other = trainjob()
    other["metadata"]["name"] = "other"
    ctl._enq(other)  # a start-up: waits to settle
    deleting = trainjob()
    deleting["metadata"]["deletionTimestamp"] = "2026-11-01T10:10:00Z"
    ctl._enq(deleting)
    assert ctl.queue.get(timeout=0) == ("ns", "ft")
    assert ctl.queue.get(timeout=0) is None
