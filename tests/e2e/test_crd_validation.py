"""The TrainJob CRD on the real kube-apiserver refuses each of ``tests.crd_cases`` naming its
field, and accepts the example they are made from.

Server-side dry run (``dryRun=All``, ``fieldValidation=Strict``): the OpenAPI schema and CEL
rules of Trainer v2.3.0's CRD run, nothing is stored (a wrongly typed field is refused earlier, by
Kueue's mutating TrainJob webhook decoding the object). ``tests/unit/test_crd_cases.py`` holds
trainweave to the same fields, so the unit tier's strict input models cannot drift from the
CRD unseen.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from tests import crd_cases

from .kube import Kube

pytestmark = pytest.mark.e2e
GROUP, VERSION, PLURAL = "trainer.kubeflow.org", "v1alpha1", "trainjobs"


# Kueue's mutating TrainJob webhook (mtrainjob.kb.io) decodes the object before the schema runs:
# a field of the wrong JSON type is its 400 naming the Go struct field, not the schema's 422
# and strict field validation refuses an unknown field while decoding, also a 400
_DECODE_FIELD = re.compile(r'Go struct field \w+\.([\w.]+) of type|unknown field "([\w.\[\]]+)"')


_SKIPPED = "some validation rules were not checked because the object was invalid"


def _dry_run(kube: Kube, namespace: str, doc: dict[str, Any]) -> list[str]:
    """The fields the API server names when it refuses ``doc`` ([] when it accepts)."""
    doc = {**doc, "metadata": {**doc["metadata"], "namespace": namespace}}
    try:
        kube.custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, doc, dry_run="All", field_validation="Strict"
        )
    except ApiException as err:
        status = json.loads(err.body or "{}")
        message = str(status.get("message"))
        if err.status == 400 and (found := _DECODE_FIELD.search(message)):
            return [found.group(1) or found.group(2)]
        if err.status == 400:
            return [f"(no field) {message}"]
        assert err.status == 422, (err.status, err.body)
        # "<nil>": a CEL rule on the whole object (the name rules), whose message says what;
        # and the note that rules on the rest were skipped, which names nothing
        causes = [c for c in status["details"]["causes"] if _SKIPPED not in str(c.get("message"))]
        named = sorted({str(c["field"]) for c in causes if c.get("field") not in (None, "<nil>")})
        return named or [f"(no field) {c.get('message')}" for c in causes]
    return []


def test_the_crd_refuses_each_case_naming_its_field(kube: Kube, namespace: str) -> None:
    assert _dry_run(kube, namespace, crd_cases.base()) == []
    refused = {c.name: _dry_run(kube, namespace, crd_cases.trainjob(c)) for c in crd_cases.CASES}
    named = {n: fields for n, fields in refused.items() if not fields[0].startswith("(no field)")}
    assert named == {c.name: [c.field] for c in crd_cases.CASES if not c.unnamed}
    for case in (c for c in crd_cases.CASES if c.unnamed):
        assert case.unnamed in refused[case.name][0], refused[case.name]
