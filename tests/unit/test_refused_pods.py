"""A pod the API server refuses to create fails its step at once, not after Argo's retries.

Argo v4.0.7 records a refused pod create (a ServiceAccount the namespace lacks, PodSecurity, an
invalid spec) as an Error attempt carrying the API server's message, then retries it with
backoff as its retryStrategy allows: minutes of retries that cannot succeed. The controller
stops the Workflow on the first such attempt and the TrainJob fails with that message.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.cluster_objects import Pod, StepState, trainjob, workflow
from trainweave import labels as L
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.decide.rollup import rollup
from trainweave.integrations.views.decide.verdict import refused
from trainweave.integrations.views.read.observed import Observed

NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
Json = dict[str, Any]
GHOST = (
    'pods "ft-init-1401844678" is forbidden: error looking up service account ns/ghost:'
    ' serviceaccount "ghost" not found'
)


def started() -> Json:
    return trainjob(annotations={L.ATTEMPTS_ANNOTATION: "1"})


def init_step(pods: list[Pod], **kwargs: Any) -> Json:
    return workflow({"init": StepState("Running", pods), "trainer": StepState("")}, **kwargs)


def stops(wf: Json) -> list[str]:
    plan = reconcile.actions(Observed(started(), (wf,)), NOW)
    return [
        body["metadata"]["annotations"][L.STOPPED_FOR]
        for body in (r.body for r in plan.requests)
        if body is not None and body.get("spec", {}).get("shutdown")
    ]


@pytest.mark.parametrize(
    ("message", "want"),
    [
        (GHOST, True),
        ('pods "p" is forbidden: violates PodSecurity "restricted:latest": privileged', True),
        ('Pod "p" is invalid: spec.containers[0].image: Required value', True),
        ('pods "p" is forbidden: exceeded quota: q, requested: cpu=1, used: cpu=4', False),
        ("init: Error (exit code 1)", False),
        ("", False),
    ],
    ids=["service-account", "pod-security", "invalid", "quota", "exit-code", "empty"],
)
def test_refused_is_the_api_server_refusing_the_pod_for_good(message: str, want: bool) -> None:
    assert refused(message) is want


def test_first_refused_attempt_stops_the_workflow() -> None:
    assert stops(init_step([Pod("init-0-0", "Error", message=GHOST)])) == ["job-failed/init"]
    assert stops(init_step([Pod("init-0-0", "Error", message="init: Error (exit code 2)")])) == []


def test_refused_pod_fails_the_trainjob_with_the_api_servers_words() -> None:
    pods = [Pod("init-0-0", "Error", message=GHOST)]
    wf = init_step(pods, phase="Failed", shutdown="Stop", stopped_for="job-failed/init")
    status = rollup(Observed(started(), (wf,)), NOW)
    failed = [c for c in status.conditions if c["type"] == "Failed"]
    assert [(c["status"], c["reason"]) for c in failed] == [("True", "FailedJobs")]
    assert failed[0]["message"] == (
        "jobset failed due to one or more job failures (first failed job: ft-init-0):"
        f" step 'init' failed: job 'init': FailedCreate: {GHOST}"
    )
