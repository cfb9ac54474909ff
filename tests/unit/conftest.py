"""Shared fixtures of the unit tier."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.crds import Validator, crd_schema, validator
from tests.versions import ARGO_MODULE, ARGO_VERSION, KUEUE_MODULE, KUEUE_VERSION


@pytest.fixture(scope="session")
def workflow_validator() -> Validator:
    """A jsonschema validator for Argo's Workflow CRD (full schema, from the pinned module)."""
    schema = crd_schema(
        ARGO_MODULE, ARGO_VERSION, "manifests/base/crds/full/argoproj.io_workflows.yaml", "v1alpha1"
    )
    return validator(schema)


@pytest.fixture(scope="session")
def workload_validator() -> Validator:
    """A strict jsonschema validator for Kueue's Workload CRD, v1beta2."""
    schema = crd_schema(
        KUEUE_MODULE,
        KUEUE_VERSION,
        "config/components/crd/bases/kueue.x-k8s.io_workloads.yaml",
        "v1beta2",
    )
    return validator(_strict(schema))


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
            and node["properties"].keys() != {"apiVersion", "kind", "metadata", "spec", "status"}
        ):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


GO_MISSING = """\
`go` is not on PATH, and {count} of the selected tests need it (marked `schema`: CRD schemas, \
Argo's expression evaluator and Kubeflow Trainer's framework, all from the pinned Go modules; \
first: {first}).
Install Go >= 1.26 (https://go.dev/dl/) with access to the Go module proxy and put its bin/ on \
PATH, then run again. `pytest -m 'not schema'` runs the tests that do not need Go."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail the whole run up front, with one message, when Go is missing but needed: otherwise
    every test that builds or reads a Go module errors on its own (``FileNotFoundError: 'go'``)."""
    needs_go = [item.nodeid for item in session.items if item.get_closest_marker("schema")]
    if needs_go and shutil.which("go") is None:
        raise pytest.UsageError(GO_MISSING.format(count=len(needs_go), first=needs_go[0]))
