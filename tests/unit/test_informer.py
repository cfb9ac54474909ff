"""Informer (list + watch into a transformed store) and WorkQueue (coalescing, lanes, backoff).

The API edge is a scripted ``send``/``stream`` pair: these tests are about the cache and queue
logic; the same classes run against the real API server in tests/e2e.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from trainweave.integrations.cluster.informer import Informer, WorkQueue
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.requests import api

Json = dict[str, Any]


def tj(name: str, rv: str, **status: Any) -> Json:
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv, "managedFields": [{"m": 1}]}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "status": status}  # fmt: skip


class Script:
    """One LIST answer, then watch streams served in order (an ERROR event ends one)."""

    def __init__(self, items: list[Json], streams: list[list[Json]]) -> None:
        self.items, self.streams = items, streams
        self.lists = 0
        self.watched_from: list[str] = []
        self.informer: Informer | None = None

    def send(self, req: api.Request) -> Json:
        self.lists += 1
        return {"metadata": {"resourceVersion": "10"}, "items": self.items}

    def stream(self, req: api.Request) -> Iterator[Json]:
        self.watched_from.append(dict(req.query).get("resourceVersion", ""))
        if not self.streams:
            assert self.informer is not None
            self.informer.stopped.set()  # script done: end Informer.run
            return
        yield from self.streams.pop(0)


def run(script: Script, **kw: Any) -> tuple[Informer, list[Json]]:
    seen: list[Json] = []
    script.informer = Informer(
        script.send, script.stream, api.TRAINJOB, on_change=seen.append, **kw
    )
    script.informer.run()
    return script.informer, seen


def test_list_then_watch_keeps_transformed_objects_and_resumes_from_last_version() -> None:
    script = Script(
        [tj("a", "9")],
        [
            [{"type": "MODIFIED", "object": tj("a", "11", phase="x")}],
            [{"type": "ADDED", "object": tj("b", "12")}],
        ],
    )
    inf, seen = run(script, transform=slim.trainjob)
    assert [o["metadata"]["name"] for o in seen] == ["a", "a", "b"]
    stored = inf.get("ns", "a")
    assert stored is not None and "managedFields" not in stored["metadata"]
    assert script.watched_from == ["10", "11", "12"]
    assert script.lists == 1


def test_gone_relists_and_an_unchanged_object_notifies_no_one_again() -> None:
    gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired"}}
    script = Script([tj("a", "9")], [[gone], []])
    _, seen = run(script)
    assert script.lists == 2 and len(seen) == 1


def test_event_for_the_version_already_cached_notifies_no_one() -> None:
    mine, theirs = tj("a", "20"), tj("a", "21", phase="x")
    script = Script(
        [], [[{"type": "MODIFIED", "object": mine}, {"type": "MODIFIED", "object": theirs}]]
    )
    seen: list[Json] = []
    inf = Informer(script.send, script.stream, api.TRAINJOB, on_change=seen.append)
    inf.put(tj("a", "20"))  # the API's response to our own status write (write-through)
    assert inf._watch("20") == "21"
    assert [o["metadata"]["resourceVersion"] for o in seen] == ["21"]
    stored = inf.get("ns", "a")
    assert stored is not None and stored["metadata"]["resourceVersion"] == "21"


def test_event_changing_only_dropped_fields_is_stored_and_notifies_no_one() -> None:
    def pod(rv: str, phase: str, restarts: int) -> Json:
        meta = {"name": "p", "namespace": "ns", "resourceVersion": rv}
        status = {"phase": phase, "containerStatuses": [{"restartCount": restarts}]}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": status}

    events = [pod("2", "Running", 1), pod("3", "Succeeded", 1)]  # restarts: not kept (slim.pod)
    script = Script([pod("1", "Running", 0)], [[{"type": "MODIFIED", "object": e} for e in events]])
    inf, seen = run(script, transform=slim.pod)
    assert [o["metadata"]["resourceVersion"] for o in seen] == ["1", "3"]
    stored = inf.get("ns", "p")
    assert stored is not None and stored["metadata"]["resourceVersion"] == "3"


def test_queue_coalesces_and_requeues_a_key_changed_while_active() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    q.add(("ns", "a"))
    assert len(q) == 1
    assert q.get() == ("ns", "a")
    q.add(("ns", "a"))  # changed while a worker holds it: not handed to a second worker
    assert len(q) == 0
    q.done(("ns", "a"))
    assert q.get() == ("ns", "a")


def test_higher_lanes_go_first_and_a_higher_add_moves_a_waiting_key() -> None:
    q = WorkQueue()
    for name in ("a", "b", "c", "e"):
        q.add(("ns", name))
    q.add(("ns", "d"), 1)
    q.add(("ns", "c"), 0)
    q.add(("ns", "e"), 1)
    q.add(("ns", "d"), 2)  # a lower add leaves it where it is
    assert len(q) == 5
    got = [q.get() for _ in range(5)]
    assert got == [("ns", "c"), ("ns", "d"), ("ns", "e"), ("ns", "a"), ("ns", "b")]


def test_a_change_while_active_comes_back_in_the_highest_lane_asked() -> None:
    q = WorkQueue()
    q.add(("ns", "a"))
    assert q.get() == ("ns", "a")
    q.add(("ns", "b"), 1)
    q.add(("ns", "a"), 2)
    q.add(("ns", "a"), 0)
    q.add(("ns", "a"), 1)
    q.done(("ns", "a"))
    assert q.get() == ("ns", "a")
    assert q.get() == ("ns", "b")


def test_retry_backs_off_exponentially_and_forget_resets() -> None:
    q = WorkQueue(base_delay=0.2, max_delay=1.0)
    key = ("ns", "a")
    assert [q.retry(key) for _ in range(4)] == [0.2, 0.4, 0.8, 1.0]
    q.forget(key)
    assert q.retry(key) == 0.2


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_a_new_key_waits_out_the_settle_time_and_its_later_events_join_it() -> None:
    clock = Clock()
    q = WorkQueue(settle=0.05, clock=clock)
    q.add(("ns", "a"), 1)
    assert q.get(timeout=0) is None  # queued 0 s ago: still settling
    clock.t += 0.03
    q.add(("ns", "a"), 2)  # a second event of the same change: joins the waiting key
    q.add(("ns", "b"), 2)
    assert q.get(timeout=0) is None
    clock.t += 0.02
    assert q.get(timeout=0) == ("ns", "a")  # 0.05 s after its first event, once
    assert q.get(timeout=0) is None  # b settles 0.05 s after its own add
    clock.t += 0.03
    assert q.get(timeout=0) == ("ns", "b")


def test_a_finished_workflow_and_a_timed_recheck_do_not_wait_to_settle() -> None:
    clock = Clock()
    q = WorkQueue(settle=10.0, clock=clock)
    q.add(("ns", "a"), 2)
    q.add(("ns", "f"), 0)
    q.add_after(("ns", "t"), 1.0)
    assert q.get(timeout=0) == ("ns", "f")
    assert q.get(timeout=0) is None
    clock.t += 1.0
    assert q.get(timeout=0) == ("ns", "t")  # due: at once, ahead of a still settling
    q.add(("ns", "a"), 0)  # a waiting key moved to the first lane goes at once too
    assert q.get(timeout=0) == ("ns", "a")


def test_get_waits_for_the_settle_time_on_the_real_clock() -> None:
    q = WorkQueue(settle=0.05)
    start = time.monotonic()
    q.add(("ns", "a"), 1)
    assert q.get() == ("ns", "a")
    assert time.monotonic() - start >= 0.05
