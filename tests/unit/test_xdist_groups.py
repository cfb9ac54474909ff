"""hack/e2e.sh runs the e2e tier on pytest-xdist with ``--dist loadgroup``: the tests of one
``xdist_group`` (the real node's) must run on one worker. pytest 9.2 broke that for
pytest-xdist 3.8.0 (its nodeid comes from a structured id; xdist renames ``_nodeid``), which is
why pyproject.toml pins pytest below 9.2: this test fails when the pair stops grouping."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

MODULE = """
import os
import pytest

pytestmark = [pytest.mark.xdist_group("real-node")]


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.environ["WORKERS_SEEN"], "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_group_runs_on_one_worker(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(MODULE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    seen = tmp_path / "seen"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "3", "--dist", "loadgroup",
         "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env={"WORKERS_SEEN": str(seen),
        "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:]
    workers = seen.read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, workers
