"""trainweave.trainer_status: the status endpoint's contract, with upstream's own test tables.

Ported from kubeflow/trainer v2.3.0 ``pkg/statusserver/utils_test.go`` (TestTokenAudience,
TestStatusUrl), ``auth_test.go`` (TestExtractRawToken) and ``server_test.go``
(TestServerErrorResponses: the payload cases; the 403 and 413 cases go through the server in
test_status_server.py). The decode cases follow Go's ``encoding/json`` and metav1.Time; the
schema tier (test_trainer_status_oracle.py) runs the same requests through upstream's server.
"""

from __future__ import annotations

import json

import pytest

from trainweave import trainer_status as ts


@pytest.mark.parametrize(
    ("namespace", "name", "want"),
    [
        pytest.param(
            "default",
            "test-job",
            "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status",
            id="audience is scoped to the TrainJob status endpoint",
        ),
        pytest.param(
            "kubeflow-system",
            "test-job",
            "trainer.kubeflow.org/v1alpha1/namespaces/kubeflow-system/trainjobs/test-job/status",
            id="audience is scoped to the TrainJob namespace",
        ),
    ],
)
def test_token_audience(namespace: str, name: str, want: str) -> None:
    assert ts.token_audience(namespace, name) == want


@pytest.mark.parametrize(
    ("namespace", "name", "want"),
    [
        pytest.param(
            "default",
            "test-job",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status",
            id="URL points at the TrainJob status endpoint",
        ),
        pytest.param(
            "kubeflow-system",
            "test-job",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/kubeflow-system/trainjobs/test-job/status",
            id="URL is scoped to the TrainJob namespace",
        ),
    ],
)
def test_status_url(namespace: str, name: str, want: str) -> None:
    assert ts.status_url(namespace, name) == want
    assert ts.route("POST", want) == (namespace, name)


@pytest.mark.parametrize(
    ("header", "want"),
    [
        pytest.param("Bearer token", "token", id="bearer token is extracted"),
        pytest.param("bearer token", "token", id="scheme is matched case-insensitively"),
        pytest.param("Bearer \t token", "token", id="repeated whitespace is tolerated"),
        pytest.param("  Bearer token  ", "token", id="surrounding whitespace is tolerated"),
        pytest.param("", "", id="empty header yields no token"),
        pytest.param("   ", "", id="whitespace-only header yields no token"),
        pytest.param("Bearer", "", id="missing credentials yield no token"),
        pytest.param("token", "", id="missing scheme yields no token"),
        pytest.param("Basic dXNlcjpwYXNz", "", id="other authorization schemes yield no token"),
        pytest.param("Bearerx token", "", id="scheme substring is not accepted"),
        pytest.param("Bearer token another", "", id="multiple credentials yield no token"),
    ],
)
def test_extract_raw_token(header: str, want: str) -> None:
    assert ts.extract_raw_token(header) == want


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("GET", ts.status_url("default", "j"), id="GET"),
        pytest.param("POST", "/", id="root"),
        pytest.param("POST", ts.status_url("default", "j") + "/x", id="longer"),
        pytest.param(
            "POST",
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces//trainjobs/j/status",
            id="empty ns",
        ),
    ],
)
def test_other_routes_are_not_found(method: str, path: str) -> None:
    assert ts.route(method, path) is None


INVALID = [
    pytest.param("invalid payload", id="upstream: invalid payload"),
    pytest.param("", id="empty body"),
    pytest.param("[]", id="not an object"),
    pytest.param('{"trainerStatus": []}', id="trainerStatus not an object"),
    pytest.param('{"trainerStatus": {"progressPercentage": "50"}}', id="progress as a string"),
    pytest.param('{"trainerStatus": {"progressPercentage": 50.0}}', id="progress as a float"),
    pytest.param('{"trainerStatus": {"progressPercentage": 2147483648}}', id="int32 overflow"),
    pytest.param('{"trainerStatus": {"estimatedRemainingSeconds": true}}', id="bool as int"),
    pytest.param('{"trainerStatus": {"metrics": {}}}', id="metrics not an array"),
    pytest.param(
        '{"trainerStatus": {"metrics": [{"name": "loss", "value": 0.5}]}}', id="number value"
    ),
    pytest.param('{"trainerStatus": {"lastUpdatedTime": "yesterday"}}', id="time not RFC 3339"),
    pytest.param('{"trainerStatus": {"lastUpdatedTime": ""}}', id="empty time"),
    pytest.param(
        '{"trainerStatus": {"lastUpdatedTime": "2026-02-30T00:00:00Z"}}', id="no such day"
    ),
    pytest.param(
        '{"trainerStatus": {"lastUpdatedTime": "2026-01-01 00:00:00Z"}}', id="space for T"
    ),
    pytest.param('{"trainerStatus": {"progressPercentage": NaN}}', id="NaN"),
    pytest.param('{"x": 1,}', id="trailing comma"),
]


@pytest.mark.parametrize("body", INVALID)
def test_invalid_payload_is_422(body: str) -> None:
    with pytest.raises(ts.Refusal) as err:
        ts.decode(body.encode())
    assert err.value == ts.INVALID_PAYLOAD
    assert ts.failure(err.value) == {
        "metadata": {},
        "status": "Failure",
        "message": "Invalid payload",
        "reason": "Invalid",
        "code": 422,
    }


T = "2026-11-25T22:00:00Z"
DECODED = [
    pytest.param("null", None, id="null: nothing to write"),
    pytest.param("{}", None, id="no trainerStatus"),
    pytest.param('{"trainerStatus": null}', None, id="trainerStatus null"),
    pytest.param(
        '{"trainerStatus": {"progressPercentage": 40, "estimatedRemainingSeconds": 0,'
        f' "metrics": [{{"name": "loss", "value": "0.25"}}], "lastUpdatedTime": "{T}"}}}}',
        {
            "progressPercentage": 40,
            "estimatedRemainingSeconds": 0,
            "metrics": [{"name": "loss", "value": "0.25"}],
            "lastUpdatedTime": T,
        },
        id="every field",
    ),
    pytest.param(
        '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T23:30:00.123456+01:30"}}',
        {"lastUpdatedTime": T},
        id="SDK time: offset and microseconds -> UTC seconds",
    ),
    pytest.param(
        '{"TRAINERSTATUS": {"ProgressPercentage": 7, "lastUpdatedTime": null}, "extra": [1]}',
        {"progressPercentage": 7, "lastUpdatedTime": None},
        id="keys case-insensitive, unknown keys ignored",
    ),
    pytest.param(
        '{"trainerStatus": {"progressPercentage": 7}, "trainerStatus": {"metrics": []}}',
        {"progressPercentage": 7, "metrics": []},
        id="a repeated key decodes into the same struct",
    ),
    pytest.param(
        f'{{"trainerStatus": {{"lastUpdatedTime": "{T}"}}}} and then anything',
        {"lastUpdatedTime": T},
        id="one value is read",
    ),
    pytest.param(
        '{"trainerStatus": {"metrics": [null, {"name": "acc"}], "progressPercentage": 101}}',
        {
            "metrics": [{"name": "", "value": ""}, {"name": "acc", "value": ""}],
            "progressPercentage": 101,
        },
        id="range and empty names are the API server's to refuse",
    ),
]


@pytest.mark.parametrize(("body", "want"), DECODED)
def test_decode(body: str, want: dict[str, object] | None) -> None:
    assert ts.decode(body.encode()) == want


def test_apply_body_is_upstreams_apply_configuration() -> None:
    decoded = ts.decode(
        b'{"trainerStatus": {"progressPercentage": 0, "metrics": [], "lastUpdatedTime": null}}'
    )
    assert decoded is not None
    assert ts.apply_body("ns", "job", decoded) == {
        "kind": "TrainJob",
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "metadata": {"name": "job", "namespace": "ns"},
        "status": {"trainerStatus": {"progressPercentage": 0, "lastUpdatedTime": None}},
    }
    assert ts.echo(decoded) == {"trainerStatus": {"progressPercentage": 0, "lastUpdatedTime": None}}


def test_body_limit_is_64k() -> None:
    """server_test.go: a ~1 MB metrics payload exceeds the 64 kB limit."""
    body = '{"trainerStatus": {"metrics": [' + '{"name":"m","value":"0.5"},' * 40000 + "]}}"
    assert len(body) > ts.MAX_BODY_SIZE == 65536
    assert ts.failure(ts.TOO_LARGE)["code"] == 413


@pytest.mark.parametrize(
    ("code", "body", "want"),
    [
        pytest.param(
            422,
            {"reason": "Invalid", "message": 'TrainJob.trainer.kubeflow.org "j" is invalid: x'},
            ts.Refusal(422, 'TrainJob.trainer.kubeflow.org "j" is invalid: x', "Invalid"),
            id="invalid: the API server's message",
        ),
        pytest.param(404, {"reason": "NotFound"}, ts.TRAINJOB_NOT_FOUND, id="not found"),
        pytest.param(500, {"reason": "InternalError"}, ts.INTERNAL, id="other"),
    ],
)
def test_api_refusal(code: int, body: dict[str, object], want: ts.Refusal) -> None:
    assert ts.api_refusal(code, body) == want
    assert json.loads(json.dumps(ts.failure(want)))["code"] == want.code
