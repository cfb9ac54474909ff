"""Rendered Workflows validate against Argo's Workflow CRD schema (pinned module version)."""

from __future__ import annotations

import copy

import pytest

from tests.crds import Validator
from tests.unit.examples import NAMES, render_example, the_workflow

pytestmark = pytest.mark.schema


def _errors(validator: Validator, doc: object) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("name", NAMES)
def test_example_workflow_is_schema_valid(workflow_validator: Validator, name: str) -> None:
    assert _errors(workflow_validator, the_workflow(render_example(name))) == []


def test_schema_catches_a_bad_retry_policy(workflow_validator: Validator) -> None:
    workflow = copy.deepcopy(the_workflow(render_example("torch-distributed")))
    node = next(t for t in workflow["spec"]["templates"] if t["name"] == "node")
    node["retryStrategy"]["retryPolicy"] = "Sometimes"
    assert any("Sometimes" in e for e in _errors(workflow_validator, workflow))
