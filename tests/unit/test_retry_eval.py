"""Retry expressions evaluated by Argo's own evaluator (util/expr, pinned Argo module).

hack/exprcheck is a small Go program calling argoexpr.EvalBool(expr, env.GetFuncMap(scope)) as
Argo's processNodeRetries does; it is built once per Argo version into the user cache.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from trainweave.adapters.retry import retry_expression

from tests.versions import ARGO_VERSION
from trainweave.model import ExitCodeRule, RetryPolicy

pytestmark = pytest.mark.schema
ROOT = Path(__file__).parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"


@pytest.fixture(scope="module")
def evaluate() -> Callable[[str, int, str, str], bool]:
    binary = CACHE / f"exprcheck-argo-{ARGO_VERSION}"
    if not binary.exists():
        subprocess.run(
            ["go", "build", "-o", str(binary), "."], cwd=ROOT / "hack" / "exprcheck", check=True
        )

    def run(expr: str, retries: int, status: str, code: str) -> bool:
        scope = {
            "retries": str(retries),
            "lastRetry.exitCode": code,
            "lastRetry.status": status,
            "lastRetry.duration": "3",
            "lastRetry.message": "",
        }
        out = subprocess.run(
            [str(binary)],
            input=json.dumps({"expr": expr, "scope": scope}) + "\n",
            capture_output=True,
            text=True,
            check=True,
        )
        answer = json.loads(out.stdout)
        assert "error" not in answer, answer
        return bool(answer["result"])

    return run


def test_preemption_beats_a_failjob_rule_and_a_zero_budget(
    evaluate: Callable[[str, int, str, str], bool],
) -> None:
    policy = RetryPolicy(0, (ExitCodeRule("FailJob", "NotIn", (0,)),))
    assert evaluate(retry_expression(policy), 0, "Failed", "143") is True
    assert evaluate(retry_expression(policy), 0, "Failed", "1") is False


POLICY = RetryPolicy(
    2,
    (
        ExitCodeRule("FailJob", "In", (1, 2)),
        ExitCodeRule("Ignore", "In", (137,)),
        ExitCodeRule("Count", "NotIn", (0, 3)),
    ),
)


@pytest.mark.parametrize(
    ("retries", "status", "code", "retry"),
    [
        pytest.param(0, "Failed", "1", False, id="failjob-code-never-retries"),
        pytest.param(0, "Failed", "137", True, id="ignore-code-retries"),
        pytest.param(9, "Failed", "137", True, id="ignore-code-beyond-budget"),
        pytest.param(0, "Failed", "42", True, id="count-within-budget"),
        pytest.param(1, "Failed", "42", True, id="count-last-unit"),
        pytest.param(2, "Failed", "42", False, id="count-budget-spent"),
        pytest.param(0, "Failed", "3", True, id="unmatched-falls-to-count"),
        pytest.param(5, "Error", "-1", True, id="pod-deleted-retries"),
        pytest.param(7, "Failed", "143", True, id="preempted-sigterm-retries-beyond-budget"),
    ],
)
def test_argo_evaluates_our_expression_as_the_job_would(
    evaluate: Callable[[str, int, str, str], bool],
    retries: int,
    status: str,
    code: str,
    retry: bool,
) -> None:
    assert evaluate(retry_expression(POLICY), retries, status, code) is retry
