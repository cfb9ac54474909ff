"""integrations.cluster.status_server over real HTTPS, the API server the unit tier's fake.

Upstream's TestServerErrorResponses (kubeflow/trainer v2.3.0 ``pkg/statusserver/server_test.go``:
unauthorized 403, invalid payload 422, oversized payload 413) plus the TokenReview (audience,
namespace), the route, the chunked limit, the API server's refusals and the status apply.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakeapi import Transport
from tests.unit.fakeapi.resources import Target
from trainweave import trainer_status as ts
from trainweave.integrations.cluster import status_server as ss
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
URL = ts.status_url("default", "test-job")
AUDIENCE = ts.token_audience("default", "test-job")
GOOD = {"trainerStatus": {"progressPercentage": 30, "lastUpdatedTime": "2026-11-25T22:00:00Z"}}


TOKENS: dict[str, tuple[list[str], str]] = {  # token -> (its audiences, its user)
    "good": ([AUDIENCE], "system:serviceaccount:default:trainer"),
    "other-job": ([ts.token_audience("default", "other")], "system:serviceaccount:default:trainer"),
    "other-ns": ([AUDIENCE], "system:serviceaccount:team-b:trainer"),
    "user": ([AUDIENCE], "alice"),
}


def review(spec: Json) -> Json:
    """The API server's TokenReview of ``spec``: authenticated for an audience asked for."""
    auds, user = TOKENS.get(spec["token"], ([], ""))
    if set(auds) & set(spec["audiences"]):
        return {"authenticated": True, "audiences": auds, "user": {"username": user}}
    return {"error": "invalid bearer token"}


def cluster() -> Transport:
    """The fake API server holding TrainJob default/test-job, answering TokenReviews."""
    fake = Transport.of(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "test-job", "namespace": "default"},
            "spec": {"runtimeRef": {"name": "rt"}},
        }
    )
    fake.server.token_review = review
    return fake


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ss.ServerTLS:
    return ss.ServerTLS.generate(ss.default_hosts(), str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="module")
def running(tls: ss.ServerTLS) -> Iterator[tuple[ss.StatusServer, int]]:
    status_server = ss.StatusServer(cluster())
    httpd = ss.serve(status_server, "127.0.0.1:0", tls)
    yield status_server, httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(running: tuple[ss.StatusServer, int]) -> tuple[Transport, int]:
    """The status server on a fresh fake API server."""
    fake = cluster()
    running[0].send = fake
    return fake, running[1]


def post(
    port: int,
    tls: ss.ServerTLS,
    body: bytes,
    token: str | None = "good",
    path: str = URL,
    method: str = "POST",
    chunked: bool = False,
) -> tuple[int, Json]:
    ctx = ssl.create_default_context(cafile=None, cadata=tls.ca_pem)
    conn = http.client.HTTPSConnection("localhost", port, context=ctx, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if chunked:
        conn.request(method, path, body=iter([body]), headers=headers, encode_chunked=True)
    elif len(body) > ts.MAX_BODY_SIZE:  # refused on its Content-Length: the body is not sent
        conn.putrequest(method, path)
        for key, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(key, value)
        conn.endheaders()
    else:
        conn.request(method, path, body=body, headers=headers)
    resp = conn.getresponse()
    doc = json.loads(resp.read())
    conn.close()
    return resp.status, doc


def status(code: int, message: str, reason: str) -> Json:
    return {"metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}


HUGE = ('{"trainerStatus": {"metrics": [' + '{"name":"m","value":"0.5"},' * 40000 + "]}}").encode()


@pytest.mark.parametrize(
    ("token", "body", "path", "method", "want"),
    [
        pytest.param(
            "nope",
            b"{}",
            URL,
            "POST",
            status(403, "Forbidden", "Forbidden"),
            id="upstream: unauthorized 403",
        ),
        pytest.param(
            "good",
            b"invalid payload",
            URL,
            "POST",
            status(422, "Invalid payload", "Invalid"),
            id="upstream: invalid payload 422",
        ),
        pytest.param(
            "good",
            HUGE,
            URL,
            "POST",
            status(413, "Payload too large", "RequestEntityTooLarge"),
            id="upstream: oversized payload 413",
        ),
        pytest.param(
            None,
            HUGE,
            "/",
            "POST",
            status(413, "Payload too large", "RequestEntityTooLarge"),
            id="size first, even unrouted",
        ),
        pytest.param(
            None, b"{}", URL, "POST", status(403, "Forbidden", "Forbidden"), id="no token"
        ),
        pytest.param(
            "other-job",
            b"{}",
            URL,
            "POST",
            status(403, "Forbidden", "Forbidden"),
            id="another TrainJob's token",
        ),
        pytest.param(
            "other-ns",
            b"{}",
            URL,
            "POST",
            status(403, "Forbidden", "Forbidden"),
            id="a ServiceAccount of another namespace",
        ),
        pytest.param(
            "user",
            b"{}",
            URL,
            "POST",
            status(403, "Forbidden", "Forbidden"),
            id="not a ServiceAccount",
        ),
        pytest.param("good", b"{}", URL, "GET", status(404, "Not found", "NotFound"), id="GET"),
        pytest.param(
            "good", b"{}", "/healthz", "POST", status(404, "Not found", "NotFound"), id="other path"
        ),
        pytest.param("good", b"null", URL, "POST", {}, id="nothing to write: 200, no apply"),
    ],
)
def test_refusals(
    server: tuple[Transport, int],
    tls: ss.ServerTLS,
    token: str | None,
    body: bytes,
    path: str,
    method: str,
    want: Json,
) -> None:
    fake, port = server
    code, doc = post(port, tls, body, token, path, method)
    assert (code, doc) == (want.get("code", 200), want)
    assert not [r for r in fake.sent if r.path != ss.TOKEN_REVIEWS]
    stored = fake.server.find("TrainJob", "default", "test-job")
    assert stored is not None and "status" not in stored


def test_update_applies_upstreams_patch(server: tuple[Transport, int], tls: ss.ServerTLS) -> None:
    fake, port = server
    code, doc = post(port, tls, json.dumps(GOOD).encode())
    assert (code, doc) == (200, GOOD)
    review, apply = fake.sent
    assert review.body == {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": "good", "audiences": [AUDIENCE]},
    }
    assert (apply.method, apply.path, apply.content_type) == (
        "PATCH",
        "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status",
        "application/apply-patch+yaml",
    )
    assert apply.query == (("fieldManager", "trainer-status"), ("force", "true"))
    assert apply.body == ts.apply_body("default", "test-job", GOOD["trainerStatus"])
    stored = fake.server.find("TrainJob", "default", "test-job")
    assert stored is not None and stored["status"] == GOOD


def test_chunked_body(server: tuple[Transport, int], tls: ss.ServerTLS) -> None:
    _, port = server
    assert post(port, tls, json.dumps(GOOD).encode(), chunked=True) == (200, GOOD)
    over = ts.MAX_BODY_SIZE * 2 * b" "  # JSON whitespace: only its length is wrong
    assert post(port, tls, over + b"{}", chunked=True) == (
        422,
        status(422, "Invalid payload", "Invalid"),
    )


def refuse_status(fake: Transport) -> None:
    """The TrainJob CRD's schema refuses the status update."""
    fake.server.validators["TrainJob"] = lambda o: (
        [("status.trainerStatus", "bad: x")] if "trainerStatus" in (o.get("status") or {}) else []
    )


def no_trainjob(fake: Transport) -> None:
    """The TrainJob is gone."""
    fake(api.delete(api.TRAINJOB, "default", "test-job"))


def unreachable(fake: Transport) -> None:
    """The connection breaks on the status apply."""

    def reset(method: str, target: Target, body: Json | None) -> None:
        if method == "PATCH":
            raise api.ApiError(0, "ProtocolError", {"message": "reset"})

    fake.server.hooks.append(reset)


@pytest.mark.parametrize(
    ("arrange", "want"),
    [
        pytest.param(
            refuse_status,
            status(
                422,
                'TrainJob.trainer.kubeflow.org "test-job" is invalid: status.trainerStatus: bad: x',
                "Invalid",
            ),
            id="the CRD refuses it: its message",
        ),
        pytest.param(
            no_trainjob, status(404, "Train job not found", "NotFound"), id="no such TrainJob"
        ),
        pytest.param(
            unreachable, status(500, "Internal error", "InternalError"), id="API unreachable"
        ),
    ],
)
def test_api_errors(
    server: tuple[Transport, int],
    tls: ss.ServerTLS,
    arrange: Callable[[Transport], None],
    want: Json,
) -> None:
    fake, port = server
    arrange(fake)
    assert post(port, tls, json.dumps(GOOD).encode()) == (want["code"], want)


def test_tls_files_round_trip(tls: ss.ServerTLS, tmp_path: Path) -> None:
    again = ss.ServerTLS.from_dir(str(Path(tls.cert_file).parent))
    assert again == tls
    assert tls.ca_pem.startswith("-----BEGIN CERTIFICATE-----")
