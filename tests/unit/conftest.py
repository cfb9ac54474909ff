"""Shared fixtures of the unit tier."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from tests.crds import crd_schema
from tests.versions import ARGO_MODULE, ARGO_VERSION


@pytest.fixture(scope="session")
def workflow_validator() -> Any:
    """A jsonschema validator for Argo's Workflow CRD (full schema, from the pinned module)."""
    schema = crd_schema(
        ARGO_MODULE, ARGO_VERSION, "manifests/base/crds/full/argoproj.io_workflows.yaml", "v1alpha1"
    )
    return jsonschema.Draft202012Validator(schema)
