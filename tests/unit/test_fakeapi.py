"""The fake API server answers as the API server does: the semantics the controller's tests
rely on, each pinned here (``tests/unit/fakeapi``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.http import Served
from trainweave.integrations.cluster.kube import KubeClient
from trainweave.integrations.views.requests import api

Json = dict[str, Any]


def cm(name: str, labels: dict[str, str] | None = None, **data: str) -> Json:
    meta: Json = {"name": name, "namespace": "ns", "labels": labels or {}}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def tj(name: str = "ft") -> Json:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"runtimeRef": {"name": "rt"}},
        "status": {"conditions": [{"type": "Created"}]},
    }


@pytest.fixture
def t() -> Transport:
    return Transport(FakeApi())


def status_of(call: Any) -> tuple[int, str]:
    with pytest.raises(api.ApiError) as err:
        call()
    return err.value.status, str(err.value.body.get("reason"))


def test_create_assigns_server_metadata_and_a_second_create_is_already_exists(
    t: Transport,
) -> None:
    got = t(api.create(api.CONFIGMAP, "ns", cm("a", x="1")))
    meta = got["metadata"]
    assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
    assert meta["generation"] == 1 and got["data"] == {"x": "1"}
    assert t(api.get(api.CONFIGMAP, "ns", "a")) == got
    assert status_of(lambda: t(api.create(api.CONFIGMAP, "ns", cm("a")))) == (409, "AlreadyExists")
    assert status_of(lambda: t(api.get(api.CONFIGMAP, "ns", "b"))) == (404, "NotFound")


def test_errors_are_status_objects(t: Transport) -> None:
    with pytest.raises(api.ApiError) as err:
        t(api.get(api.TRAINJOB, "ns", "nope"))
    assert (err.value.status, err.value.reason) == (404, "Not Found")
    assert err.value.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'trainjobs.trainer.kubeflow.org "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "trainer.kubeflow.org", "kind": "trainjobs"},
        "code": 404,
    }


@pytest.mark.parametrize(
    ("name", "labels"),
    [("Bad_Name", {}), ("ok", {"a b": "c"}), ("ok", {"a": "x" * 64})],
    ids=["name", "label-key", "label-value"],
)
def test_invalid_objects_are_422(t: Transport, name: str, labels: dict[str, str]) -> None:
    assert status_of(lambda: t(api.create(api.CONFIGMAP, "ns", cm(name, labels)))) == (
        422,
        "Invalid",
    )


def test_a_validator_refuses_as_a_crd_schema_does() -> None:
    fake = FakeApi()
    fake.validators["TrainJob"] = lambda o: (
        [("spec.x", "Required value")] if "x" not in o["spec"] else []
    )
    t = Transport(fake)
    assert status_of(lambda: t(api.create(api.TRAINJOB, "ns", tj()))) == (422, "Invalid")


def test_create_drops_the_status_of_a_kind_with_a_status_subresource(t: Transport) -> None:
    made = t(api.create(api.TRAINJOB, "ns", tj()))
    assert "status" not in made
    patched = t(api.merge_patch(api.TRAINJOB, "ns", "ft", {"status": {"a": 1}}, "status"))
    assert patched["status"] == {"a": 1}
    # an object write leaves the status alone; a status write leaves the rest alone
    again = t(api.merge_patch(api.TRAINJOB, "ns", "ft", {"spec": {"x": 1}, "status": {"a": 2}}))
    assert (again["status"], again["spec"]["x"], again["metadata"]["generation"]) == (
        {"a": 1},
        1,
        2,
    )
    status = t(
        api.merge_patch(api.TRAINJOB, "ns", "ft", {"spec": {"x": 2}, "status": {"a": 3}}, "status")
    )
    assert (status["status"], status["spec"]["x"]) == ({"a": 3}, 1)


def test_no_status_subresource_where_the_kind_has_none(t: Transport) -> None:
    t(api.create(api.CONFIGMAP, "ns", cm("a")))
    assert status_of(lambda: t(api.merge_patch(api.CONFIGMAP, "ns", "a", {}, "status")))[0] == 404


def test_update_on_a_stale_resource_version_is_a_conflict_and_a_no_op_writes_nothing(
    t: Transport,
) -> None:
    first = t(api.create(api.CONFIGMAP, "ns", cm("a", x="1")))
    second = t(api.update(api.CONFIGMAP, "ns", "a", {**first, "data": {"x": "2"}}))
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    stale = {**first, "data": {"x": "3"}}
    assert status_of(lambda: t(api.update(api.CONFIGMAP, "ns", "a", stale))) == (409, "Conflict")
    same = t(api.merge_patch(api.CONFIGMAP, "ns", "a", {"data": {"x": "2"}}))
    assert same["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_patch_flavours(t: Transport) -> None:
    t(api.create(api.POD, "ns", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}))  # fmt: skip
    strategic = {"spec": {"containers": [{"name": "b", "image": "z"}]}}
    got = t(api.Request("PATCH", api.POD.path("ns", "p"), body=strategic,
        content_type="application/strategic-merge-patch+json"))  # fmt: skip
    assert [(c["name"], c["image"]) for c in got["spec"]["containers"]] == [("a", "x"), ("b", "z")]
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}},
           {"op": "remove", "path": "/spec/containers/0"}]  # fmt: skip
    got = t(api.Request("PATCH", api.POD.path("ns", "p"), body=ops,  # type: ignore[arg-type]
        content_type="application/json-patch+json"))  # fmt: skip
    assert got["metadata"]["labels"] == {"k": "v"} and len(got["spec"]["containers"]) == 1
    merged = t(api.merge_patch(api.POD, "ns", "p", {"spec": {"containers": [{"name": "c"}]}}))
    assert merged["spec"]["containers"] == [{"name": "c"}]  # a merge patch replaces lists
    t(api.create(api.TRAINJOB, "ns", tj()))
    req = api.Request("PATCH", api.TRAINJOB.path("ns", "ft"), body={"spec": {}},
        content_type="application/strategic-merge-patch+json")  # fmt: skip
    assert status_of(lambda: t(req)) == (415, "UnsupportedMediaType")  # custom resources


def apply(t: Transport, manager: str, body: Json, force: bool = False, sub: str = "") -> Json:
    query = (("fieldManager", manager),) + ((("force", "true"),) if force else ())
    path = api.TRAINJOB.path("ns", "ft", sub)
    return t(api.Request("PATCH", path, query, body, "application/apply-patch+yaml"))


def test_server_side_apply_sets_owns_and_conflicts(t: Transport) -> None:
    base = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "ft", "namespace": "ns"}}  # fmt: skip
    made = apply(t, "a", {**base, "spec": {"x": 1, "y": 2}})
    assert made["spec"] == {"x": 1, "y": 2}
    assert status_of(lambda: apply(t, "b", {**base, "spec": {"x": 9}})) == (409, "Conflict")
    assert apply(t, "b", {**base, "spec": {"x": 9}}, force=True)["spec"] == {"x": 9, "y": 2}
    # a's next apply without y removes y (a owns it alone); x is b's now
    assert apply(t, "a", {**base, "spec": {}})["spec"] == {"x": 9}
    status = apply(t, "s", {**base, "status": {"p": 30}}, sub="status")
    assert status["status"] == {"p": 30}
    req = api.Request(
        "PATCH", api.TRAINJOB.path("ns", "ft"), (), base, "application/apply-patch+yaml"
    )
    assert status_of(lambda: t(req)) == (400, "BadRequest")  # no fieldManager


def test_delete_preconditions_finalizers_and_propagation(t: Transport) -> None:
    made = t(api.create(api.CONFIGMAP, "ns", cm("a")))
    assert status_of(lambda: t(api.delete(api.CONFIGMAP, "ns", "a", uid="other"))) == (
        409,
        "Conflict",
    )
    gone = t(api.delete(api.CONFIGMAP, "ns", "a", uid=made["metadata"]["uid"]))
    assert gone["kind"] == "Status" and gone["status"] == "Success"
    assert status_of(lambda: t(api.get(api.CONFIGMAP, "ns", "a")))[0] == 404
    held = cm("b")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    t(api.create(api.CONFIGMAP, "ns", held))
    deleting = t(api.delete(api.CONFIGMAP, "ns", "b"))
    assert deleting["metadata"]["deletionTimestamp"]
    add = {"metadata": {"finalizers": ["example.com/hold", "x.io/more"]}}
    assert status_of(lambda: t(api.merge_patch(api.CONFIGMAP, "ns", "b", add)))[0] == 422
    t(api.merge_patch(api.CONFIGMAP, "ns", "b", {"metadata": {"finalizers": None}}))
    assert status_of(lambda: t(api.get(api.CONFIGMAP, "ns", "b")))[0] == 404
    fg = api.Request("DELETE", api.TRAINJOB.path("ns", "ft"),
        body={"propagationPolicy": "Foreground"})  # fmt: skip
    t(api.create(api.TRAINJOB, "ns", tj()))
    assert t(fg)["metadata"]["finalizers"] == ["foregroundDeletion"]


def test_dry_run_checks_and_stores_nothing(t: Transport) -> None:
    dry = api.Request("POST", api.CONFIGMAP.path("ns"), (("dryRun", "All"),), cm("a"))
    assert t(dry)["metadata"]["name"] == "a"
    assert status_of(lambda: t(api.get(api.CONFIGMAP, "ns", "a")))[0] == 404
    bad = api.Request("POST", api.CONFIGMAP.path("ns"), (("dryRun", "All"),), cm("A"))
    assert status_of(lambda: t(bad))[0] == 422


def test_paged_list_with_a_selector_is_one_snapshot(t: Transport) -> None:
    for i in range(5):
        t(api.create(api.CONFIGMAP, "ns", cm(f"c{i}", {"app": "x" if i % 2 == 0 else "y"})))
    page = t(api.list_(api.CONFIGMAP, "ns", "app=x", limit="2"))
    assert [o["metadata"]["name"] for o in page["items"]] == ["c0", "c2"]
    assert "kind" not in page["items"][0]  # a built-in kind's list items have no kind
    t(api.create(api.CONFIGMAP, "ns", cm("c5", {"app": "x"})))  # after the snapshot
    rest = t(
        api.list_(
            api.CONFIGMAP, "ns", "app=x", limit="2", **{"continue": page["metadata"]["continue"]}
        )
    )
    assert [o["metadata"]["name"] for o in rest["items"]] == ["c4"]
    assert rest["metadata"]["resourceVersion"] == page["metadata"]["resourceVersion"]
    assert "continue" not in rest["metadata"]
    sets = t(api.list_(api.CONFIGMAP, "ns", "app in (y),!missing"))
    assert [o["metadata"]["name"] for o in sets["items"]] == ["c1", "c3"]


def watch(t: Transport, rv: str, selector: str = "") -> Iterator[Json]:
    return t.stream(api.watch(api.CONFIGMAP, "ns", selector, rv))


def test_watch_from_a_version_sees_what_came_after_in_order(t: Transport) -> None:
    first = t(api.create(api.CONFIGMAP, "ns", cm("a", {"app": "x"})))
    rv = first["metadata"]["resourceVersion"]
    t(api.merge_patch(api.CONFIGMAP, "ns", "a", {"metadata": {"labels": {"app": "y"}}}))
    t(api.create(api.CONFIGMAP, "ns", cm("b", {"app": "x"})))
    t(api.delete(api.CONFIGMAP, "ns", "b"))
    events = watch(t, rv, "app=x")
    got = [next(events) for _ in range(3)]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [
        ("DELETED", "a"),  # a left the selector
        ("ADDED", "b"),
        ("DELETED", "b"),
    ]


def test_watch_waits_for_news_and_a_watch_too_old_is_gone() -> None:
    fake = FakeApi(history=2)
    t = Transport(fake)
    first = t(api.create(api.CONFIGMAP, "ns", cm("a")))
    events = watch(t, first["metadata"]["resourceVersion"])
    got: list[Json] = []
    reader = threading.Thread(target=lambda: got.append(next(events)))
    reader.start()
    t(api.create(api.CONFIGMAP, "ns", cm("b")))
    reader.join(10)
    assert got[0]["type"] == "ADDED" and got[0]["object"]["metadata"]["name"] == "b"
    for name in ("c", "d", "e"):
        t(api.create(api.CONFIGMAP, "ns", cm(name)))
    expired = next(watch(t, first["metadata"]["resourceVersion"]))
    assert expired["type"] == "ERROR" and expired["object"]["code"] == 410


def test_garbage_collection_is_played_when_asked(t: Transport) -> None:
    owner = t(api.create(api.TRAINJOB, "ns", tj()))
    child = cm("child")
    child["metadata"]["ownerReferences"] = [{"uid": owner["metadata"]["uid"], "name": "ft"}]
    t(api.create(api.CONFIGMAP, "ns", child))
    t(api.delete(api.TRAINJOB, "ns", "ft"))
    assert t.server.find("ConfigMap", "ns", "child") is not None  # the GC has not run yet
    assert t.server.collect_garbage() == 1
    assert t.server.find("ConfigMap", "ns", "child") is None


def test_over_http_with_the_real_client() -> None:
    """The same server behind 127.0.0.1, through ``KubeClient``: answers, errors and a watch."""
    served = Served(FakeApi())
    try:
        kube = KubeClient(client.Configuration(host=served.url))
        made = kube.send(api.create(api.CONFIGMAP, "ns", cm("a", x="1")))
        with pytest.raises(api.ApiError) as err:
            kube.send(api.create(api.CONFIGMAP, "ns", cm("a")))
        assert (err.value.status, err.value.body["reason"]) == (409, "AlreadyExists")
        t = Transport(served.api)
        t(api.create(api.CONFIGMAP, "ns", cm("b")))
        events = kube.stream(
            api.watch(api.CONFIGMAP, "ns", "", made["metadata"]["resourceVersion"])
        )
        assert next(events)["object"]["metadata"]["name"] == "b"
    finally:
        served.close()
