"""trainweave refuses every TrainJob the TrainJob CRD refuses, naming the API server's field.

The cases and their fields are ``tests.crd_cases``; ``tests/e2e/test_crd_validation.py`` pins
each field on the real kube-apiserver with Trainer v2.3.0's CRD installed.
"""

from __future__ import annotations

import pytest

from tests import crd_cases
from trainweave.errors import InputErrors
from trainweave.inputs import parse_trainjob


def test_the_example_is_accepted() -> None:
    parse_trainjob(crd_cases.base())


@pytest.mark.parametrize("case", crd_cases.CASES, ids=lambda c: c.name)
def test_refused_naming_the_field(case: crd_cases.CrdCase) -> None:
    with pytest.raises(InputErrors) as raised:
        parse_trainjob(crd_cases.trainjob(case))
    paths = [e.path for e in raised.value.errors]
    assert any(
        p == case.field or p.startswith((case.field + ".", case.field + "[")) for p in paths
    ), paths
