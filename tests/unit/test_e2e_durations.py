"""The e2e tier's durations summary (tests/e2e/durations.py): slowest tests, per-file totals."""

from __future__ import annotations

from typing import Literal

import pytest

from tests.e2e import durations


def _report(
    nodeid: str, when: Literal["setup", "call", "teardown"], seconds: float
) -> pytest.TestReport:
    return pytest.TestReport(nodeid, ("f", 1, "t"), {}, "passed", None, when, [], seconds)


def test_a_test_is_its_setup_call_and_teardown_and_a_file_is_its_tests() -> None:
    reports = [
        _report("tests/e2e/test_a.py::test_one", "setup", 1.0),
        _report("tests/e2e/test_a.py::test_one", "call", 10.0),
        _report("tests/e2e/test_a.py::test_one", "teardown", 0.5),
        _report("tests/e2e/test_a.py::test_two", "call", 2.0),
        _report("tests/e2e/test_b.py::test_three[x]", "call", 30.0),
        object(),  # what else pytest keeps in its stats (warnings) is not a test
    ]
    tests = durations.per_test(reports)
    assert tests == {
        "tests/e2e/test_a.py::test_one": 11.5,
        "tests/e2e/test_a.py::test_two": 2.0,
        "tests/e2e/test_b.py::test_three[x]": 30.0,
    }
    assert durations.per_file(tests) == {"tests/e2e/test_a.py": 13.5, "tests/e2e/test_b.py": 30.0}
    out = durations.lines(tests, wall=20.0, workers=3)
    assert out[1:4] == [
        "     30.0s  tests/e2e/test_b.py::test_three[x]",
        "     11.5s  tests/e2e/test_a.py::test_one",
        "      2.0s  tests/e2e/test_a.py::test_two",
    ]
    assert "     30.0s    1  tests/e2e/test_b.py" in out
    assert "     13.5s    2  tests/e2e/test_a.py" in out
    assert out[-1] == "e2e durations: 3 tests, 44s of test time, 20s wall-clock on 3 worker(s)"


def test_only_the_slowest_are_listed() -> None:
    tests = {f"tests/e2e/test_x.py::t{i}": float(i) for i in range(40)}
    out = durations.lines(tests, wall=1.0, workers=1)
    listed = out[1 : out.index("per file (tests, seconds):")]
    assert len(listed) == durations.SLOWEST
    assert listed[0].endswith("::t39") and listed[-1].endswith(f"::t{40 - durations.SLOWEST}")
