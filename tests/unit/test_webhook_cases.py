"""Kubeflow Trainer v2.3.0's admission refusals, upstream's own code against trainweave.

Every case of ``tests.oracle.webhook_cases`` goes through ``hack/oracle`` (the runtime CRD's CEL
rules, the runtime webhook's ValidateCreate, the TrainJob webhook's ValidateObjects with every
plugin's Validate) and through trainweave's ``to_pipeline``: upstream refuses naming the case's
field, by the judge the case says, and trainweave refuses naming every field upstream names.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.oracle import harness, webhook_cases
from tests.oracle.webhook_cases import WebhookCase
from tests.unit.test_webhook_refusals import refusals

pytestmark = pytest.mark.schema  # hack/oracle and the Trainer module: needs Go
Json = dict[str, Any]
# which part of the oracle's answer each judge's refusals land in
SECTION = {"crd": "crdErrors", "runtime-webhook": "runtimeFieldErrors"}


@pytest.fixture(scope="module")
def answers() -> dict[str, Json]:
    cases = [harness.Case(f"base/{b}", *make()) for b, make in webhook_cases.BASES.items()]
    cases += [harness.Case(c.name, *c.inputs()) for c in webhook_cases.CASES]
    return harness.upstream(cases)


def upstream_fields(answer: Json) -> dict[str, list[str]]:
    """The fields upstream names, by the section of the oracle's answer."""
    return {
        section: [e["field"] for e in answer[section]]
        for section in ("crdErrors", "runtimeFieldErrors", "errors")
    }


@pytest.mark.parametrize("base", sorted(webhook_cases.BASES))
def test_upstream_accepts_and_builds_the_bases(base: str, answers: dict[str, Json]) -> None:
    answer = answers[f"base/{base}"]
    assert not answer.get("trainJobError")
    assert upstream_fields(answer) == {"crdErrors": [], "runtimeFieldErrors": [], "errors": []}
    assert answer["runtimeErrors"] == [] and not answer.get("buildError")
    assert [o["kind"] for o in answer["objects"]].count("JobSet") == 1


@pytest.mark.parametrize(
    "case", [c for c in webhook_cases.CASES if c.reached], ids=lambda c: c.name
)
def test_both_refuse_naming_the_same_field(case: WebhookCase, answers: dict[str, Json]) -> None:
    answer = answers[case.name]
    fields = upstream_fields(answer)
    if case.unnamed:
        assert answer.get("trainJobError") == case.unnamed
    else:
        assert case.field in fields[SECTION.get(case.judge, "errors")], fields
    ours = [e.path for e in refusals(*case.inputs())]
    if case.unnamed:
        assert any(webhook_cases.names_field(p, case.field) for p in ours), ours
    for field in [f for named in fields.values() for f in named]:
        assert any(webhook_cases.names_field(p, field) for p in ours), (field, ours)


@pytest.mark.parametrize(
    "case", [c for c in webhook_cases.CASES if not c.reached], ids=lambda c: c.name
)
def test_upstream_never_reaches_these_branches(case: WebhookCase, answers: dict[str, Json]) -> None:
    """``webhook_cases.UNREACHED``: upstream admits and builds these, into a JobSet with a job
    without containers or a container without an image, which the API server refuses when the
    Job is created. trainweave refuses them at once, naming the patch."""
    answer = answers[case.name]
    assert upstream_fields(answer) == {"crdErrors": [], "runtimeFieldErrors": [], "errors": []}
    assert not answer.get("trainJobError")
    (jobset,) = [o for o in answer["objects"] if o["kind"] == "JobSet"]
    pods = [
        rj["template"]["spec"]["template"].get("spec") or {}
        for rj in jobset["spec"]["replicatedJobs"]
    ]
    broken = [
        pod for pod in pods
        if not pod.get("containers")
        or any(not c.get("image") for c in pod.get("initContainers", []) + pod["containers"])
    ]  # fmt: skip
    assert len(broken) == 1
    ours = [e.path for e in refusals(*case.inputs())]
    assert any(webhook_cases.names_field(p, case.field) for p in ours), ours
