"""Without Go, a run that selects tests needing it stops before any test, with one message
(``pytest_collection_finish`` in tests/unit/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_a_run_needing_go_stops_with_one_message_when_go_is_missing() -> None:
    path = os.pathsep.join(
        d for d in os.environ.get("PATH", "").split(os.pathsep) if not (Path(d) / "go").exists()
    )
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    out = subprocess.run(
        [*argv, "tests/unit/test_workflow_schema.py"],
        cwd=ROOT,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == pytest.ExitCode.USAGE_ERROR, out.stdout + out.stderr
    assert out.stderr.count("ERROR:") == 1
    assert "`go` is not on PATH" in out.stderr
    assert "https://go.dev/dl/" in out.stderr
    assert "no tests ran" in out.stdout
