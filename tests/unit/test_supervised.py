"""Supervised threads: one object never stops the controller, a thread that ends anyway fails
``/healthz``, an informer that stops keeping up fails ``/readyz`` (issue 37, item 1)."""

from __future__ import annotations

import base64
import copy
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.unit.cluster_objects import trainjob, workflow
from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.test_reconcile import INIT_OK, NOW, fake_renderer
from trainweave.integrations.cluster.controller import Config, Controller
from trainweave.integrations.cluster.events import EventSender
from trainweave.integrations.cluster.health import Health
from trainweave.integrations.cluster.informer import STALE_AFTER, Informer
from trainweave.integrations.cluster.metrics import Metrics, serve_http
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "rt"},
    "spec": {},
}


class ApiServer(Transport):
    """The unit tier's fake API server (``tests.unit.fakeapi``) holding TrainJob ``ns/ft`` and
    its runtime, reached in-process."""

    def __init__(self, tj: Json) -> None:
        super().__init__(FakeApi())
        self.server.seed(tj, RUNTIME)

    def written(self, path_end: str) -> list[Json]:
        return [r.body or {} for r in self.write_requests if r.path.endswith(path_end)]


def controller(server: ApiServer) -> Controller:
    """A controller on ``server`` (no threads), its TrainJob cache holding ``ns/ft``."""
    ctl = Controller(server, server.stream, fake_renderer, Config(), Metrics(), lambda: NOW)
    tj = server.server.find("TrainJob", "ns", "ft")
    assert tj is not None
    ctl.trainjobs.put(tj)
    return ctl


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _sample(ctl: Any, name: str, **labels: str) -> float | None:
    value: float | None = ctl.metrics.registry.get_sample_value(name, labels)
    return value


def _events(server: ApiServer, reason: str) -> list[Json]:
    return [b for b in server.written("/events") if b.get("reason") == reason]


def test_a_workflow_that_breaks_its_informer_is_counted_skipped_and_told_on_its_trainjob() -> None:
    server = ApiServer(trainjob())
    ctl = controller(server)

    def boom(obj: Json) -> Json:
        if obj["metadata"]["name"] == "ft-bad":
            raise RuntimeError("cannot read this one")
        return slim.workflow(obj)

    ctl.workflows.transform = boom
    good = workflow({"init": INIT_OK})
    bad = copy.deepcopy(good)
    bad["metadata"]["name"] = "ft-bad"
    for i, obj in enumerate((bad, good)):
        obj["metadata"]["resourceVersion"] = str(20 + i)
        ctl.workflows.handle({"type": "ADDED", "object": obj})
    assert ctl.workflows.get("ns", "ft") is not None  # the next object is kept
    assert ctl.workflows.get("ns", "ft-bad") is None  # the broken one skipped
    assert _sample(ctl, "trainweave_object_errors_total", kind="Workflow") == 1
    (note,) = _events(server, "ObjectUnreadable")
    assert note["type"] == "Warning" and note["involvedObject"]["name"] == "ft"
    assert (
        "Workflow ft-bad skipped" in note["message"] and "cannot read this one" in note["message"]
    )


def test_a_workflow_of_no_cached_trainjob_is_counted_without_an_event() -> None:
    server = ApiServer(trainjob())
    ctl = controller(server)
    ctl.workflows.transform = lambda obj: 1 / 0  # type: ignore[assignment,return-value]
    wf = workflow({"init": INIT_OK}, tj="someone-else", namespace="tenant")
    ctl.workflows.handle({"type": "MODIFIED", "object": wf})
    assert _sample(ctl, "trainweave_object_errors_total", kind="Workflow") == 1
    assert _events(server, "ObjectUnreadable") == []


def test_a_hostile_compressed_nodes_string_is_no_error_at_all() -> None:
    """The tenant's patch of issue 37: ``status.compressedNodes`` that is no base64. The
    Workflow is kept with its nodes unknown; the good TrainJob beside it reconciles."""
    server = ApiServer(trainjob())
    ctl = controller(server)
    wf = workflow({"init": INIT_OK}, tj="ft", namespace="tenant")
    for i, packed in enumerate(["%%% not base64 %%%", base64.b64encode(b"\x1f\x8bxx").decode()]):
        wf["status"] = {"phase": "Running", "compressedNodes": packed}
        wf["metadata"]["resourceVersion"] = str(30 + i)
        ctl.workflows.handle({"type": "MODIFIED", "object": wf})
        kept = ctl.workflows.get("tenant", "ft")
        assert kept is not None and ctl.view(kept).nodes_known is False
    # counted (and told, had the tenant a TrainJob ft), never raised
    assert _sample(ctl, "trainweave_object_errors_total", kind="Workflow") == 2
    ctl.reconcile(("ns", "ft"))
    assert len(server.written("/workflows")) == 1  # the good TrainJob started


def test_an_error_in_on_change_skips_the_object_and_the_list_goes_on() -> None:
    errors: list[str] = []

    def on_change(obj: Json) -> None:
        if obj["metadata"]["name"] == "b":
            raise KeyError("b")

    def send(req: api.Request) -> Json:
        items = [trainjob(name) | {"metadata": {"name": name, "namespace": "ns"}} for name in "abc"]
        return {"metadata": {"resourceVersion": "5"}, "items": items}

    inf = Informer(
        send,
        lambda req: iter(()),
        api.TRAINJOB,
        on_change=on_change,
        on_error=lambda obj, err: errors.append(obj["metadata"]["name"]),
    )
    assert inf.relist() == "5"
    assert errors == ["b"] and {o["metadata"]["name"] for o in inf.items()} == {"a", "b", "c"}
    assert inf.synced.is_set()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_an_informer_without_a_list_or_event_for_the_bound_is_not_ready() -> None:
    server = ApiServer(trainjob())
    ctl = controller(server)
    clock = Clock()
    for inf in ctl.informers.values():
        inf.clock, inf.last_success = clock, clock.t
        inf.synced.set()
    assert ctl.not_ready() == []
    clock.t += STALE_AFTER + 1
    ctl.workflows.handle({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    wrong = ctl.not_ready()
    assert len(wrong) == 3 and not any("workflows" in w for w in wrong)
    assert "no list or watch event for 601 s" in wrong[0]
    gauge = _sample(ctl, "trainweave_informer_seconds_since_success", kind="Pod")
    assert gauge == STALE_AFTER + 1
    assert _sample(ctl, "trainweave_informer_seconds_since_success", kind="Workflow") == 0


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_probes_answer_what_is_wrong() -> None:
    health = Health()
    wrong: list[str] = []
    server = serve_http("127.0.0.1:0", Metrics(), lambda: wrong, health.problems)
    port = server.server_address[1]
    try:
        assert _get(port, "/healthz") == (200, "ok")
        assert _get(port, "/readyz") == (200, "ok")
        wrong.append("informer pods: not synced")
        assert _get(port, "/readyz") == (503, "informer pods: not synced\n")

        def dies() -> None:
            raise RuntimeError("a bug")

        undo = health.install()
        try:
            t = health.watch(threading.Thread(target=dies, name="informer-pods"))
            t.start()
            t.join()
        finally:
            undo()
        code, body = _get(port, "/healthz")
        assert code == 500 and body == "informer-pods: RuntimeError: a bug\n"
        assert "trainweave_object_errors_total" in _get(port, "/metrics")[1]
    finally:
        server.shutdown()


def test_a_watched_thread_that_returns_is_a_problem_until_stopping() -> None:
    health = Health()
    t = health.watch(threading.Thread(target=lambda: None, name="worker-0"))
    t.start()
    t.join()
    assert health.problems() == ["worker-0: stopped"]
    health.stopping.set()
    assert health.problems() == []


def test_a_probe_that_raises_is_a_failed_probe() -> None:
    def broken() -> list[str]:
        raise RuntimeError("x")

    server = serve_http("127.0.0.1:0", Metrics(), broken, broken)
    try:
        assert _get(server.server_address[1], "/healthz")[0] == 500
        assert _get(server.server_address[1], "/readyz")[0] == 503
    finally:
        server.shutdown()


def test_the_event_sender_outlives_an_event_that_raises() -> None:
    sent: list[str] = []
    done = threading.Event()

    def send(req: api.Request) -> Json:
        if req.path.endswith("bad/events"):
            raise ValueError("not JSON")
        sent.append(req.path)
        done.set()
        return {}

    sender = EventSender(send)
    sender.put(api.Request("POST", "/api/v1/namespaces/bad/events"))
    sender.put(api.Request("POST", "/api/v1/namespaces/good/events"))
    assert done.wait(10)
    sender.close(5)
    assert sent == ["/api/v1/namespaces/good/events"]


def test_a_reconcile_that_raises_no_api_error_is_an_object_error_and_a_retry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = ApiServer(trainjob())
    ctl = controller(server)

    def broken(obs: Any, now: Any) -> Any:
        raise TypeError("a shape nobody expected")

    monkeypatch.setattr("trainweave.integrations.views.decide.reconcile.actions", broken)
    key_done = threading.Event()
    original = ctl.queue.done

    def done(key: tuple[str, str]) -> None:
        original(key)
        key_done.set()

    ctl.queue.done = done  # type: ignore[method-assign]
    ctl.queue.add(("ns", "ft"), 0)
    worker = threading.Thread(target=ctl.worker)
    worker.start()
    assert key_done.wait(10)
    ctl.queue.close()
    worker.join(10)
    assert _sample(ctl, "trainweave_object_errors_total", kind="TrainJob") == 1
    assert _sample(ctl, "trainweave_reconciles_total", result="error") == 1
    (note,) = _events(server, "TrainJobResourcesCreationFailed")
    assert "a shape nobody expected" in note["message"]
