"""The real kube-apiserver refuses a Pod of each of ``tests.pod_cases`` naming its field, and
accepts the Pod of the example template they are made from.

Server-side dry run (``dryRun=All``, ``fieldValidation=Strict``): defaulting, admission and
``ValidatePodCreate`` run, nothing is stored. The Pods carry no Kueue queue label, so Kueue's pod
webhook leaves them alone. ``tests/unit/test_pod_cases.py`` holds trainweave to the same fields
(``offline`` where trainweave names another, with why).
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from kubernetes.client.exceptions import ApiException

from tests import pod_cases

from .kube import Kube

pytestmark = pytest.mark.e2e


def _dry_run(kube: Kube, namespace: str, pod: dict[str, Any]) -> list[str]:
    """The fields the API server names when it refuses ``pod`` ([] when it accepts)."""
    try:
        kube.core.create_namespaced_pod(
            namespace, cast(Any, pod), dry_run="All", field_validation="Strict"
        )
    except ApiException as err:
        status = json.loads(err.body or "{}")
        assert err.status == 422, (err.status, err.body)
        causes = status["details"]["causes"]
        return sorted({str(c.get("field")) for c in causes})
    return []


def test_the_api_server_refuses_each_case_naming_its_field(kube: Kube, namespace: str) -> None:
    assert _dry_run(kube, namespace, pod_cases.pod(None)) == []
    named = {c.name: _dry_run(kube, namespace, pod_cases.pod(c)) for c in pod_cases.CASES}
    missing = {c.name: named[c.name] for c in pod_cases.CASES if c.field not in named[c.name]}
    assert missing == {}
