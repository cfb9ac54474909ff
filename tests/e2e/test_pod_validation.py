"""The real kube-apiserver refuses a Pod of each of ``tests.pod_cases`` naming its field, and
accepts the Pod of the example template they are made from.

Server-side dry run (``dryRun=All``, ``fieldValidation=Strict``): defaulting, admission and
``ValidatePodCreate`` run, nothing is stored. The Pods carry no Kueue queue label, so Kueue's pod
webhook leaves them alone. ``tests/unit/test_pod_cases.py`` holds trainweave to the same fields
(``offline`` where trainweave names another, with why).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests import pod_cases

from .kube import Kube

pytestmark = pytest.mark.e2e


def _dry_run(
    kube: Kube, namespace: str, pod: dict[str, Any], decode: str = "", path: str = "pods"
) -> list[str]:
    """The fields the API server names when it refuses ``pod`` ([] when it accepts).

    ``decode``: the case is refused as the body is decoded (400, no field): its message holds
    ``decode``, and the field is taken as named. ``path``: the resource (``pods``; ``jobs`` of
    batch/v1).

    Sent as a raw request: the client's ``create_namespaced_pod`` validates the body with its
    own models first and would refuse the cases before the API server sees them.
    """
    api = kube.api
    method, url, headers, body, _ = api.param_serialize(
        "POST",
        "/api/v1/namespaces/{namespace}/pods"
        if path == "pods"
        else "/apis/batch/v1/namespaces/{namespace}/" + path,
        path_params={"namespace": namespace},
        query_params=[("dryRun", "All"), ("fieldValidation", "Strict")],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=pod,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=body)
    if response.status == 201:
        return []
    status = json.loads(response.response.data or b"{}")  # the urllib3 response's body
    if decode:
        assert response.status == 400 and decode in status.get("message", ""), status
        return ["(decoded)"]
    assert response.status == 422, (response.status, status)
    return sorted({str(c.get("field")) for c in status["details"]["causes"]})


def test_the_api_server_refuses_each_case_naming_its_field(kube: Kube, namespace: str) -> None:
    assert _dry_run(kube, namespace, pod_cases.pod(None)) == []
    named = {c.name: _dry_run(kube, namespace, pod_cases.pod(c), c.decode) for c in pod_cases.CASES}
    missing = {
        c.name: named[c.name]
        for c in pod_cases.CASES
        if c.field not in named[c.name] and not (c.decode and named[c.name] == ["(decoded)"])
    }
    assert missing == {}
    # where trainweave names another field (pod_cases' ``offline``), the API server does not name it
    differ = {c.name: named[c.name] for c in pod_cases.CASES if c.offline in named[c.name]}
    assert differ == {}


def test_the_api_server_refuses_each_job_case_naming_its_field(kube: Kube, namespace: str) -> None:
    """``tests.pod_cases.JOB_CASES``: a batch/v1 Job of the model-exporter template."""
    assert _dry_run(kube, namespace, pod_cases.job(None), path="jobs") == []
    named = {
        c.name: _dry_run(kube, namespace, pod_cases.job(c), path="jobs")
        for c in pod_cases.JOB_CASES
    }
    missing = {c.name: named[c.name] for c in pod_cases.JOB_CASES if c.field not in named[c.name]}
    assert missing == {}
