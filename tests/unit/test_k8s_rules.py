"""The committed pod-rule table (trainweave/k8s_rules.py) is what the pinned Kubernetes module's
OpenAPI says: required fields and enums of every core/v1 type a pod template reaches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainweave import k8s_rules, k8s_schema

ROOT = Path(__file__).parents[2]


@pytest.mark.schema
def test_the_committed_table_is_the_pinned_modules() -> None:
    out = subprocess.run(
        [sys.executable, "hack/k8s_rules.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_every_field_of_the_table_is_a_field_of_the_client_models() -> None:
    tables = k8s_schema.build_table()
    named = {
        (model, key)
        for model, keys in [*k8s_rules.REQUIRED.items(), *k8s_rules.ENUMS.items()]
        for key in keys
    }
    assert {(m, k) for m, k in named if k not in tables.get(m, {})} == set()
