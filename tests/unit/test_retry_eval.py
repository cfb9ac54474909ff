"""Retry expressions evaluated by Argo's own evaluator (util/expr, pinned Argo module).

hack/exprcheck is a small Go program calling argoexpr.EvalBool(expr, env.GetFuncMap(scope)) as
Argo's processNodeRetries does; it is built once per Argo version (the pin, or ARGO_VERSION) into
the user cache, from a copy whose go.mod is moved to that version.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.versions import ARGO_MODULE, ARGO_VERSION, go_build_env
from trainweave.adapters.argo.retry import retry_expression
from trainweave.model import ExitCodeRule, RetryPolicy

pytestmark = pytest.mark.schema
ROOT = Path(__file__).parents[2]
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"


@pytest.fixture(scope="module")
def evaluate() -> Callable[[str, int, str, str], bool]:
    """``run(expr, retries, status, message)``: Argo's answer for a containerSet pod's last attempt.

    ``lastRetry.exitCode`` is ``-1`` as Argo reports it for a pod without a ``main`` container.
    """
    binary = CACHE / f"exprcheck-argo-{ARGO_VERSION}"
    if not binary.exists():
        # a copy of hack/exprcheck moved to the Argo pin (or ARGO_VERSION): its go.mod names one
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "exprcheck"
            shutil.copytree(ROOT / "hack" / "exprcheck", src)
            for cmd in (
                ["go", "mod", "edit", f"-require={ARGO_MODULE}@{ARGO_VERSION}"],
                ["go", "mod", "tidy"],
                ["go", "build", "-o", str(binary), "."],
            ):
                subprocess.run(cmd, cwd=src, check=True, env=go_build_env())

    def run(expr: str, retries: int, status: str, message: str) -> bool:
        scope = {
            "retries": str(retries),
            "lastRetry.exitCode": "-1",
            "lastRetry.status": status,
            "lastRetry.duration": "3",
            "lastRetry.message": message,
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
    policy = RetryPolicy(budget=0, rules=(ExitCodeRule("FailJob", "NotIn", (0,)),))
    assert evaluate(retry_expression(policy), 0, "Failed", failed(143)) is True
    assert evaluate(retry_expression(policy), 0, "Failed", failed(1)) is False


def failed(code: int, container: str = "node", reason: str = "Error", extra: str = "") -> str:
    """A failed pod node's message as Argo v4.0.7 inferFailedReason writes it."""
    return f"{container}: {reason} (exit code {code}){extra}"


POLICY = RetryPolicy(
    budget=2,
    rules=(
        ExitCodeRule("FailJob", "In", (1, 2)),
        ExitCodeRule("Ignore", "In", (137,)),
        ExitCodeRule("Count", "NotIn", (0, 3)),
    ),
)


@pytest.mark.parametrize(
    ("retries", "status", "message", "retry"),
    [
        pytest.param(0, "Failed", failed(1), False, id="failjob-code-never-retries"),
        pytest.param(0, "Failed", failed(2, "dataset-initializer"), False, id="any-container"),
        pytest.param(0, "Failed", failed(1, extra=": CUDA error"), False, id="with-term-message"),
        pytest.param(0, "Failed", failed(137, reason="OOMKilled"), True, id="ignore-code-retries"),
        pytest.param(9, "Failed", failed(137), True, id="ignore-code-beyond-budget"),
        pytest.param(0, "Failed", failed(42), True, id="count-within-budget"),
        pytest.param(1, "Failed", failed(42), True, id="count-last-unit"),
        pytest.param(2, "Failed", failed(42), False, id="count-budget-spent"),
        pytest.param(2, "Failed", failed(12), False, id="code-is-not-a-prefix-match"),
        pytest.param(0, "Failed", failed(3), True, id="unmatched-falls-to-count"),
        pytest.param(2, "Failed", failed(3), False, id="unmatched-counts"),
        pytest.param(5, "Error", "pod deleted", True, id="pod-deleted-retries"),
        pytest.param(7, "Failed", failed(143), True, id="preempted-sigterm-retries-beyond-budget"),
        pytest.param(
            2, "Failed", failed(42, extra=": (exit code 137)"), False, id="term-message-ignored"
        ),
        pytest.param(
            0, "Failed", "The node was low on resource: memory.", True, id="evicted-no-code-counts"
        ),
    ],
)
def test_argo_evaluates_our_expression_as_the_job_would(
    evaluate: Callable[[str, int, str, str], bool],
    retries: int,
    status: str,
    message: str,
    retry: bool,
) -> None:
    assert evaluate(retry_expression(POLICY), retries, status, message) is retry


@pytest.mark.parametrize(
    ("message", "retry"),
    [
        pytest.param(failed(1, "node"), False, id="named-container-matches"),
        pytest.param(failed(1, "fetch-weights"), True, id="other-container-does-not"),
        pytest.param(failed(1, "nodes"), True, id="name-is-not-a-prefix-match"),
    ],
)
def test_container_name_leads_the_message(
    evaluate: Callable[[str, int, str, str], bool], message: str, retry: bool
) -> None:
    """``onExitCodes.containerName``: only the named container's exit code matches."""
    policy = RetryPolicy(budget=2, rules=(ExitCodeRule("FailJob", "In", (1,), container="node"),))
    assert evaluate(retry_expression(policy), 0, "Failed", message) is retry
