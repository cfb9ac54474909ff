"""Where an e2e run's time goes, printed at its end (tests/e2e/conftest.py's terminal summary).

Each test's time is its setup + call + teardown (pytest's reports, from every xdist worker);
the summary gives the slowest tests and the total per file, and the phase's wall-clock time.
docs/local-control-plane.md cites this output, never hand-kept figures.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

import pytest

SLOWEST = 15
STARTED = time.monotonic()


def per_test(reports: Iterable[object]) -> dict[str, float]:
    """nodeid -> seconds, setup + call + teardown, over every report pytest kept."""
    out: dict[str, float] = defaultdict(float)
    for r in reports:
        if isinstance(r, pytest.TestReport):
            out[r.nodeid] += r.duration
    return dict(out)


def per_file(tests: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for nodeid, seconds in tests.items():
        out[nodeid.split("::")[0]] += seconds
    return dict(out)


def lines(tests: dict[str, float], wall: float, workers: int) -> list[str]:
    """The summary: the SLOWEST tests, then per file (tests, seconds), then the totals."""
    out = [f"{SLOWEST} slowest tests (setup + call + teardown):"]
    for nodeid, s in sorted(tests.items(), key=lambda kv: -kv[1])[:SLOWEST]:
        out.append(f"  {s:7.1f}s  {nodeid}")
    files = per_file(tests)
    counts: dict[str, int] = defaultdict(int)
    for nodeid in tests:
        counts[nodeid.split("::")[0]] += 1
    out.append("per file (tests, seconds):")
    for path, s in sorted(files.items(), key=lambda kv: -kv[1]):
        out.append(f"  {s:7.1f}s  {counts[path]:3d}  {path}")
    out.append(
        f"e2e durations: {len(tests)} tests, {sum(tests.values()):.0f}s of test time, "
        f"{wall:.0f}s wall-clock on {workers} worker(s)"
    )
    return out


def summary(reporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Print ``lines`` for the run (the xdist controller sees every worker's reports)."""
    reports = [r for rs in reporter.stats.values() for r in rs]
    # this conftest is loaded by every run over tests/: print only for the e2e tier
    tests = {k: v for k, v in per_test(reports).items() if k.startswith("tests/e2e/")}
    if not tests:
        return
    workers = int(getattr(config.option, "numprocesses", 0) or 0) or 1
    reporter.section("e2e durations")
    for line in lines(tests, time.monotonic() - STARTED, workers):
        reporter.write_line(line)
