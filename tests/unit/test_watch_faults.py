"""Watch faults (issue 37, item 4): a watch that ends with 410 Gone, a connection reset mid-stream,
a partial or non-JSON line, an API server restart. The stream parser (``KubeClient.stream``)
turns each into an ``api.ApiError`` or a clean end; the informer relists, tells ``on_change`` of
every change made while it was not watching exactly once (no lost event) and of nothing that did
not change (no duplicate reconcile, so no duplicate write)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client

from tests.unit.test_kube_stream import Pool, Response
from trainweave.integrations.cluster.informer import Informer
from trainweave.integrations.cluster.kube import KubeClient
from trainweave.integrations.views.requests import api

Json = dict[str, Any]


def tj(name: str, rv: str, phase: str = "") -> Json:
    """A TrainJob at ``rv`` whose status says so (a change the caches keep)."""
    phase = phase or f"v{rv}"
    meta = {"name": name, "namespace": "ns", "resourceVersion": rv}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": meta,
            "status": {"phase": phase} if phase else {}}  # fmt: skip


def line(etype: str, obj: Json) -> bytes:
    return json.dumps({"type": etype, "object": obj}).encode() + b"\n"


# --- the stream parser --------------------------------------------------------------------


class Resets(Response):
    """Chunks, then the connection resets (as urllib3 reports it)."""

    def stream(self, amt: int, decode_content: bool) -> Iterator[bytes]:
        yield from self.chunks
        raise urllib3.exceptions.ProtocolError("Connection broken", ConnectionResetError(104))


def kube(resp: Response) -> KubeClient:
    out = KubeClient(client.Configuration(host="http://127.0.0.1:1"))
    out.pool = Pool(resp)
    return out


def names(events: list[Json]) -> list[str]:
    return [e["object"]["metadata"]["name"] for e in events]


def test_a_connection_reset_mid_stream_is_an_api_error_after_the_whole_events() -> None:
    resp = Resets([line("ADDED", tj("a", "2")) + line("ADDED", tj("b", "3"))[:10]])
    got: list[Json] = []
    with pytest.raises(api.ApiError) as err:
        got.extend(kube(resp).stream(api.watch(api.TRAINJOB, "ns", "", "1")))
    assert err.value.status == 0 and err.value.reason == "ProtocolError"
    assert names(got) == ["a"] and resp.released


@pytest.mark.parametrize(
    "bad", [b"<html>502 Bad Gateway</html>\n", b'{"type": "ADDED", "obj\n', b"[1, 2]\n", b"7\n"]
)
def test_a_line_that_is_no_json_event_is_an_api_error_after_the_events_before_it(
    bad: bytes,
) -> None:
    resp = Response([line("ADDED", tj("a", "2")) + bad + line("ADDED", tj("b", "3"))])
    got: list[Json] = []
    with pytest.raises(api.ApiError) as err:
        got.extend(kube(resp).stream(api.watch(api.TRAINJOB, "ns", "", "1")))
    assert err.value.status == 0 and err.value.reason == "BadWatchEvent"
    assert names(got) == ["a"] and resp.released


def test_a_partial_last_line_is_dropped_and_the_stream_ends_cleanly() -> None:
    """The server closed mid-line: the cut event is not guessed at; the informer resumes from
    the last whole event's resourceVersion and the server sends it again."""
    resp = Response([line("ADDED", tj("a", "2")) + line("ADDED", tj("b", "3"))[:-9]])
    got = list(kube(resp).stream(api.watch(api.TRAINJOB, "ns", "", "1")))
    assert names(got) == ["a"] and resp.released


# --- the informer ---------------------------------------------------------------------------


class Cluster:
    """LIST answers and watch streams served in order; a stream's item that is an exception is
    raised there (the connection failing); a LIST answer that is one fails that LIST."""

    def __init__(self, lists: list[Any], streams: list[list[Any]]) -> None:
        self.lists, self.streams = lists, streams
        self.listed = 0
        self.watched_from: list[str] = []
        self.informer: Informer | None = None

    def send(self, req: api.Request) -> Json:
        self.listed += 1
        answer = self.lists.pop(0) if len(self.lists) > 1 else self.lists[0]
        if isinstance(answer, Exception):
            raise answer
        rv, items = answer
        return {"metadata": {"resourceVersion": rv}, "items": items}

    def stream(self, req: api.Request) -> Iterator[Json]:
        self.watched_from.append(dict(req.query).get("resourceVersion", ""))
        if not self.streams:
            assert self.informer is not None
            self.informer.stopped.set()  # script done
            return
        for item in self.streams.pop(0):
            if isinstance(item, Exception):
                raise item
            yield item


def run(cluster: Cluster) -> tuple[Informer, list[tuple[str, str]]]:
    seen: list[tuple[str, str]] = []

    def on_change(obj: Json) -> None:
        seen.append((obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    cluster.informer = Informer(cluster.send, cluster.stream, api.TRAINJOB, on_change=on_change)
    cluster.informer.run()
    return cluster.informer, seen


def ev(etype: str, obj: Json) -> Json:
    return {"type": etype, "object": obj}


GONE = ev("ERROR", {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"})
RESET = api.ApiError(0, "ProtocolError", {"message": "Connection reset by peer"})


def test_410_gone_relists_at_once_and_tells_only_what_changed_meanwhile() -> None:
    cluster = Cluster(
        [
            ("10", [tj("a", "5"), tj("b", "6")]),
            ("20", [tj("a", "5"), tj("b", "15"), tj("c", "18")]),
        ],
        [[ev("MODIFIED", tj("b", "11")), GONE], [ev("ADDED", tj("d", "21"))]],
    )
    inf, seen = run(cluster)
    assert cluster.listed == 2 and cluster.watched_from == ["10", "20", "21"]
    # a and b listed; b's watch event; after the relist: b moved on (15) and c is new; a, which
    # did not change, is not told again; then d from the new watch
    assert seen == [("a", "5"), ("b", "6"), ("b", "11"), ("b", "15"), ("c", "18"), ("d", "21")]
    assert sorted(o["metadata"]["name"] for o in inf.items()) == ["a", "b", "c", "d"]


def test_a_connection_reset_mid_stream_relists_and_a_deletion_meanwhile_is_told_once() -> None:
    cluster = Cluster(
        [("10", [tj("a", "5"), tj("b", "6")]), ("30", [tj("a", "25")])],
        [[ev("MODIFIED", tj("a", "12")), RESET], []],
    )
    inf, seen = run(cluster)
    # the second watch closes cleanly (the server's timeout): resumed from 30, no relist
    assert cluster.listed == 2 and cluster.watched_from == ["10", "30", "30"]
    assert seen == [("a", "5"), ("b", "6"), ("a", "12"), ("b", "6"), ("a", "25")]  # b: deleted
    assert [o["metadata"]["name"] for o in inf.items()] == ["a"]


def test_a_line_that_is_no_event_relists() -> None:
    bad = api.ApiError(0, "BadWatchEvent", {"message": "not an event"})
    cluster = Cluster(
        [("10", [tj("a", "5")]), ("12", [tj("a", "11")])],
        [[ev("MODIFIED", tj("a", "7")), bad], [{"type": "ADDED"}], []],
    )
    _, seen = run(cluster)
    # the parser's ApiError, then an event with no object (Informer.handle): each relists
    assert cluster.listed == 3
    assert seen == [("a", "5"), ("a", "7"), ("a", "11")]


def test_an_api_server_restart_relists_once_it_answers_and_loses_no_event() -> None:
    """The watch drops, the next LISTs are refused while the server restarts, then it answers
    with what changed during the outage; the cache ends equal to the server's."""
    refused = api.ApiError(0, "NewConnectionError", {"message": "Connection refused"})
    cluster = Cluster(
        [("10", [tj("a", "5")]), refused, refused, ("40", [tj("a", "33", "x"), tj("b", "39")])],
        [[RESET], [ev("MODIFIED", tj("b", "41"))]],
    )
    inf, seen = run(cluster)
    assert cluster.listed == 4 and cluster.watched_from == ["10", "40", "41"]
    assert seen == [("a", "5"), ("a", "33"), ("b", "39"), ("b", "41")]
    assert sorted(
        (o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in inf.items()
    ) == [
        ("a", "33"),
        ("b", "41"),
    ]
    assert inf.synced.is_set()
