"""KubeClient.stream: watch events are one JSON document a line, cut anywhere by chunking."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import urllib3
from kubernetes import client

from trainweave.integrations.cluster.kube import KubeClient
from trainweave.integrations.views.requests import api


class Response:
    """The part of a streamed urllib3 response that ``stream`` reads."""

    status, reason = 200, "OK"

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.released = False

    def stream(self, amt: int, decode_content: bool) -> Iterator[bytes]:
        yield from self.chunks

    def release_conn(self) -> None:
        self.released = True


class Pool(urllib3.PoolManager):
    """Answers every request with one response."""

    def __init__(self, response: Response) -> None:
        super().__init__()
        self.response = response

    def request(self, *args: Any, **kwargs: Any) -> Any:
        return self.response


def events(n: int) -> bytes:
    docs = [{"type": "MODIFIED", "object": {"metadata": {"name": f"p{i}"}}} for i in range(n)]
    return b"".join(json.dumps(d).encode() + b"\n" for d in docs)


def test_events_cut_across_chunks_and_several_a_chunk_all_arrive_once_in_order() -> None:
    raw = events(5) + b"\n"  # a blank keep-alive line too
    cuts = [0, 7, 8, 60, 61, 200, len(raw)]  # mid-document, at a newline, several a chunk
    resp = Response([raw[a:b] for a, b in itertools.pairwise(cuts)])
    kube = KubeClient(client.Configuration(host="http://127.0.0.1:1"))
    kube.pool = Pool(resp)
    got = list(kube.stream(api.watch(api.POD, "ns", "", "1")))
    assert [e["object"]["metadata"]["name"] for e in got] == [f"p{i}" for i in range(5)]
    assert resp.released
