"""docs/extending.md's "Watch a new kind", followed by a test.

A toy ``Toy`` kind (a CRD the fake API server installs) written the way the page says: its
``api.Kind``, a ``slim`` transform, one ``controller.Watch`` row beside ``controller.WATCHES``
(passed as ``Controller(..., watches=...)``, the shipped table untouched). The real controller
then starts on the fake API server with it, becomes ready (the toy informer started and
awaited from the same table), keeps Toys as the transform says, maps a Toy to its TrainJob,
and puts what its own writes return into the Toy cache (write-through by the request's kind).
This file imports only modules the page lists (checked from its own imports).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit import extending
from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.resources import Resource
from tests.unit.fakeapi.running import Running, example, wait_until
from trainweave import labels
from trainweave.integrations.cluster.controller import WATCHES, Controller, Watch, tj_index
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
NS = "team-a"
TOY = api.Kind("toys.example.org", "v1", "toys", "Toy")


def slim_toy(obj: Json) -> Json:
    """What a reconcile would read of a Toy: its metadata and ``spec.size``."""
    spec = obj.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": slim.metadata(obj),
        "spec": {"size": spec.get("size")},
    }


CHANGED: list[Json] = []


def toy_changed(ctl: Controller, obj: Json) -> None:
    CHANGED.append(obj)
    ctl.enqueue_child(obj)


TOY_WATCH = Watch(TOY, slim_toy, toy_changed, labels.TRAINJOB, {"tj": tj_index})
TABLE = (*WATCHES, TOY_WATCH)


def toy(name: str, size: int, trainjob: str = "ft") -> Json:
    return {
        "apiVersion": TOY.api_version,
        "kind": TOY.kind,
        "metadata": {"name": name, "namespace": NS, "labels": {labels.TRAINJOB: trainjob}},
        "spec": {"size": size, "unread": "x" * 100},
    }


@pytest.fixture
def fake() -> FakeApi:
    fake = FakeApi()
    fake.routes.add(Resource(TOY, returns_deleted=True))  # the CRD installed
    return fake


@pytest.fixture
def controller(fake: FakeApi) -> Iterator[Running]:
    CHANGED.clear()
    ctl = Running(fake, NS, watches=TABLE).start()
    yield ctl
    ctl.stop()


def test_the_controller_with_a_new_kind_becomes_ready_and_caches_it(
    fake: FakeApi, controller: Running
) -> None:
    """``start`` returns once every informer of the table synced, the toy's too; ``/readyz``
    names none; a Toy created by a user is kept slim, indexed by its TrainJob, and its change
    enqueues that TrainJob, which runs as before."""
    ctl = controller.ctl
    assert list(ctl.informers) == ["Workload", "Pod", "Workflow", "TrainJob", "Toy"]
    assert all(inf.synced.is_set() for inf in ctl.informers.values())
    assert ctl.not_ready() == []
    user = Transport(fake)
    tj, rt = example(NS)
    user(api.create(api.TRAINING_RUNTIME, NS, rt))
    user(api.create(api.TRAINJOB, NS, tj))
    user(api.create(TOY, NS, toy("t1", 3)))
    toys = ctl.informers[TOY.kind]
    kept = wait_until("the Toy cached", fake, lambda: toys.get(NS, "t1"))
    assert kept["spec"] == {"size": 3}
    assert [o["metadata"]["name"] for o in toys.by_index("tj", f"{NS}/ft")] == ["t1"]
    assert any(o["metadata"]["name"] == "t1" for o in CHANGED)
    wait_until("the Workflow", fake, lambda: fake.find("Workflow", NS, "ft"))
    wait_until("settled", fake, controller.settled)
    assert ctl.not_ready() == []


def test_a_write_of_the_new_kind_goes_into_its_cache_by_the_requests_kind(
    fake: FakeApi,
) -> None:
    """Write-through finds the cache by ``api.Request.kind`` (no informer started here, so only
    the write can have put the Toy there); until its informer syncs, ``/readyz`` names it."""
    ctl = Running(fake, NS, watches=TABLE).ctl  # built, not started
    assert "informer toys: not synced" in ctl.not_ready()
    ctl.send(api.create(TOY, NS, toy("t2", 5)))
    kept = ctl.informers[TOY.kind].get(NS, "t2")
    assert kept is not None and kept["spec"] == {"size": 5}
    ctl.send(api.merge_patch(TOY, NS, "t2", {"spec": {"size": 6}}))
    kept = ctl.informers[TOY.kind].get(NS, "t2")
    assert kept is not None and kept["spec"] == {"size": 6}
    # a kind the table does not watch is not cached: a ConfigMap the controller creates
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}}
    ctl.send(api.create(api.CONFIGMAP, NS, cm))
    assert all(inf.get(NS, "cm") is None for inf in ctl.informers.values())


def test_a_kind_watched_twice_is_refused(fake: FakeApi) -> None:
    with pytest.raises(ValueError, match="watched twice"):
        Running(fake, NS, watches=(*TABLE, TOY_WATCH))


def test_the_toy_touches_only_the_places_the_page_lists() -> None:
    assert extending.unlisted(__file__, "Watch a new kind") == [], (
        "imported by the toy kind but not on docs/extending.md's checklist"
    )
