"""The dynamic oracle: trainweave's status endpoint and Kubeflow Trainer v2.3.0's, same requests.

Every request goes to upstream's own server (``tests.oracle.status_oracle``: its HTTP code, its
answer, the status apply it sends) and through ``trainweave.trainer_status`` (decode, answer,
apply patch), which ``integrations.cluster.status_server`` serves. They must be equal.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle import status_oracle
from tests.unit.cluster_objects import trainjob
from tests.unit.fakeapi import Transport
from tests.unit.test_trainer_status import DECODED, INVALID
from trainweave import trainer_status as ts
from trainweave.integrations.cluster import status_server as ss

pytestmark = pytest.mark.schema  # hack/status_oracle and the Trainer module: needs Go

Json = dict[str, Any]
MORE = [
    '{"trainerStatus": {"progressPercentage": 100, "estimatedRemainingSeconds": 2147483647,'
    ' "metrics": [{"name": "loss", "value": "0.125"}, {"name": "eval_accuracy", "value": "0.9"}],'
    ' "lastUpdatedTime": "2026-11-25T22:11:12.999999999Z"}}',
    '{"trainerStatus": {"progressPercentage": -1, "lastUpdatedTime": "2026-11-25T22:00:00-23:59"}}',
    '{"trainerStatus": {"lastUpdatedTime": "0001-01-01T00:00:00Z"}}',
    '{"trainerStatus": {"lastUpdatedTime": "0000-12-31T23:00:00-01:00"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2024-02-29T23:59:59,5+00:00"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00+24:00"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:60Z"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00+25:00"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00+23:60"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00+23:61"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00.Z"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T24:00:00Z"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25T22:00:00.1234567891-00:00"}}',
    '{"trainerStatus": {"lastUpdatedTime": "2026-11-25t22:00:00z"}}',
    '{"trainerStatus": {"lastUpdatedTime": 1700000000}}',
    '{"trainerStatus": {"metrics": [{"name": "m", "value": "v", "Name": "n"}]}}',
    '{"trainerStatus": {"metrics": [[]]}}',
    '{"trainerStatus": {"progressPercentage": -0}}',
    '{"trainerStatus": {"progressPercentage": 1e2}}',
    '{"trainerStatus": {"progressPercentage": null, "estimatedRemainingSeconds": 5}}',
    '{"trainerStatus": {"estimatedRemainingSeconds": -2147483649}}',
    '{"trainerStatus": {}}',
    "   \n{}",
    '"a string"',
    "true",
    "1",
    '{"trainerStatus": {"progressPercentage": 5}} {"trainerStatus": []}',
    '{"trainerStatus": {"metrics": [{"name": "\\u00e9t\\u00e9", "value": "\\ud83d\\ude00"}]}}',
    '{"trainerStatus": {"metrics": [{"name": "m", "value": "' + "v" * 70 + '"}]}}',
]
HUGE = '{"trainerStatus": {"metrics": [' + '{"name":"m","value":"0.5"},' * 40000 + "]}}"
BODIES = [str(p.values[0]) for p in INVALID + DECODED] + MORE + [HUGE]


def ours(body: str, authorized: bool) -> Json:
    """What trainweave's server (``StatusServer.answer``) answers and applies; the API server is
    the unit tier's fake, holding the TrainJob, its TokenReview saying ``authorized``."""
    fake = Transport.of(trainjob("test-job", namespace="default"))
    user = {"username": "system:serviceaccount:default:trainer"}
    fake.server.token_review = lambda spec: {
        "authenticated": authorized,
        "audiences": spec["audiences"],
        "user": user,
    }

    data = body.encode()
    path = ts.status_url("default", "test-job")
    code, doc = ss.StatusServer(fake).answer("POST", path, "Bearer t", len(data), lambda: data)
    applied = [r.body for r in fake.sent if r.method == "PATCH" and r.body is not None]
    return {"code": code, "response": doc, "apply": applied[0] if applied else None}


REQUESTS = [(b, True) for b in BODIES] + [(BODIES[0], False), (HUGE, False)]


@pytest.fixture(scope="module")
def answers() -> list[Json]:
    return status_oracle.upstream(REQUESTS)


def test_same_answers_and_patches(answers: list[Json]) -> None:
    requests = REQUESTS
    assert len(answers) == len(requests) >= 45
    differences = [
        (body, want, ours(body, authorized))
        for (body, authorized), want in zip(requests, answers, strict=True)
        if ours(body, authorized) != want
    ]
    assert differences == []
