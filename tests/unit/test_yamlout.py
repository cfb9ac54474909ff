"""The fast YAML emitter reads back (with PyYAML) as exactly what was written."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.unit.examples import NAMES, render_example
from trainweave import yamlout

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(
        [
            "yes",
            "No",
            "on",
            "null",
            "~",
            "1e3",
            "0x1F",
            "010",
            "-",
            "a: b",
            "#x",
            "*a",
            "{{x}}",
            "2026-01-01",
            "1_000",
            ".5",
            "a\nb",
            " lead",
            "trail ",
        ]
    )
)
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=8) | st.sampled_from(["on", "1", "null"]), inner, max_size=4
        )
    ),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(documents)
@example({"": None, "A\n": None})  # found by a CI run: ``$`` matched before a final newline
def test_round_trip(document: Any) -> None:
    assert yaml.safe_load(yamlout.dump(document)) == document


@pytest.mark.parametrize("name", NAMES)
def test_examples_round_trip(name: str) -> None:
    manifests = render_example(name)
    assert list(yaml.safe_load_all(yamlout.dump_all(manifests))) == manifests
