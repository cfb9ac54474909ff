"""integrations.cluster.status_server over real HTTPS, the API server faked by a recording send.

Upstream's TestServerErrorResponses (kubeflow/trainer v2.3.0 ``pkg/statusserver/server_test.go``:
unauthorized 403, invalid payload 422, oversized payload 413) plus the TokenReview (audience,
namespace), the route, the chunked limit, the API server's refusals and the status apply.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trainweave import trainer_status as ts
from trainweave.integrations.cluster import status_server as ss
from trainweave.integrations.views import api

Json = dict[str, Any]
URL = ts.status_url("default", "test-job")
AUDIENCE = ts.token_audience("default", "test-job")
GOOD = {"trainerStatus": {"progressPercentage": 30, "lastUpdatedTime": "2026-11-25T22:00:00Z"}}


class FakeAPI:
    """TokenReviews: ``tokens`` maps a token to (audiences, username); applies are recorded."""

    def __init__(self) -> None:
        self.tokens: dict[str, tuple[list[str], str]] = {
            "good": ([AUDIENCE], "system:serviceaccount:default:trainer"),
            "other-job": (
                [ts.token_audience("default", "other")],
                "system:serviceaccount:default:trainer",
            ),
            "other-ns": ([AUDIENCE], "system:serviceaccount:team-b:trainer"),
            "user": ([AUDIENCE], "alice"),
        }
        self.requests: list[api.Request] = []
        self.apply_error: api.ApiError | None = None

    def __call__(self, req: api.Request) -> Json:
        self.requests.append(req)
        assert req.body is not None
        if req.path == ss.TOKEN_REVIEWS:
            spec = req.body["spec"]
            auds, user = self.tokens.get(spec["token"], ([], ""))
            ok = bool(set(auds) & set(spec["audiences"]))
            status = {"authenticated": True, "audiences": auds, "user": {"username": user}}
            return {"status": status if ok else {"error": "invalid bearer token"}}
        if self.apply_error is not None:
            raise self.apply_error
        return {"kind": "TrainJob", "status": req.body["status"]}


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> ss.ServerTLS:
    return ss.ServerTLS.generate(ss.default_hosts(), str(tmp_path_factory.mktemp("tls")))


@pytest.fixture(scope="module")
def running(tls: ss.ServerTLS) -> Iterator[tuple[FakeAPI, int]]:
    fake = FakeAPI()
    httpd = ss.serve(ss.StatusServer(fake), "127.0.0.1:0", tls)
    yield fake, httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(running: tuple[FakeAPI, int]) -> tuple[FakeAPI, int]:
    running[0].requests.clear()
    running[0].apply_error = None
    return running


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
    server: tuple[FakeAPI, int],
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
    assert not [r for r in fake.requests if r.path != ss.TOKEN_REVIEWS]


def test_update_applies_upstreams_patch(server: tuple[FakeAPI, int], tls: ss.ServerTLS) -> None:
    fake, port = server
    code, doc = post(port, tls, json.dumps(GOOD).encode())
    assert (code, doc) == (200, GOOD)
    review, apply = fake.requests
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


def test_chunked_body(server: tuple[FakeAPI, int], tls: ss.ServerTLS) -> None:
    _, port = server
    assert post(port, tls, json.dumps(GOOD).encode(), chunked=True) == (200, GOOD)
    over = ts.MAX_BODY_SIZE * 2 * b" "  # JSON whitespace: only its length is wrong
    assert post(port, tls, over + b"{}", chunked=True) == (
        422,
        status(422, "Invalid payload", "Invalid"),
    )


@pytest.mark.parametrize(
    ("error", "want"),
    [
        pytest.param(
            api.ApiError(422, "Unprocessable Entity", {"reason": "Invalid", "message": "bad: x"}),
            status(422, "bad: x", "Invalid"),
            id="the CRD refuses it: its message",
        ),
        pytest.param(
            api.ApiError(404, "Not Found", {"reason": "NotFound"}),
            status(404, "Train job not found", "NotFound"),
            id="no such TrainJob",
        ),
        pytest.param(
            api.ApiError(0, "ProtocolError", {"message": "reset"}),
            status(500, "Internal error", "InternalError"),
            id="API unreachable",
        ),
    ],
)
def test_api_errors(
    server: tuple[FakeAPI, int], tls: ss.ServerTLS, error: api.ApiError, want: Json
) -> None:
    fake, port = server
    fake.apply_error = error
    assert post(port, tls, json.dumps(GOOD).encode()) == (want["code"], want)


def test_tls_files_round_trip(tls: ss.ServerTLS, tmp_path: Path) -> None:
    again = ss.ServerTLS.from_dir(str(Path(tls.cert_file).parent))
    assert again == tls
    assert tls.ca_pem.startswith("-----BEGIN CERTIFICATE-----")
