"""RetryPolicy -> Argo retry expression: rule order, actions, disruptions, budget."""

from __future__ import annotations

import pytest

from trainweave.adapters.argo.retry import REQUEUE_ALLOWANCE, retry_expression, retry_strategy
from trainweave.model import ExitCodeRule, RetryPolicy

ERR = (
    "lastRetry.status == 'Error' || lastRetry.message matches '^[^:]+: [^(]*[(]exit code (143)[)]'"
)


def code(codes: str) -> str:
    return f"lastRetry.message matches '^[^:]+: [^(]*[(]exit code ({codes})[)]'"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        pytest.param(RetryPolicy(budget=6), f"({ERR}) || (asInt(retries) < 6)", id="budget-only"),
        pytest.param(
            RetryPolicy(budget=2, rules=(ExitCodeRule("FailJob", "In", (1, 2)),)),
            f"({ERR}) || (({code('1|2')}) ? false : (asInt(retries) < 2))",
            id="failjob-codes",
        ),
        pytest.param(
            RetryPolicy(budget=3, rules=(ExitCodeRule("Ignore", "In", (137,)),)),
            f"({ERR}) || (({code('137')}) ? true : (asInt(retries) < 3))",
            id="ignore-codes",
        ),
        pytest.param(
            RetryPolicy(budget=1, rules=(ExitCodeRule("Count", "NotIn", (0, 42)),)),
            f"({ERR}) || (({code('[0-9]+')} && not ({code('0|42')})) ? asInt(retries) < 1 : (asInt(retries) < 1))",
            id="count-notin",
        ),
        pytest.param(
            RetryPolicy(
                budget=0,
                rules=(
                    ExitCodeRule("FailJob", disruption=True),
                    ExitCodeRule("Ignore", "In", (3,)),
                ),
            ),
            f"({ERR}) ? false : (({code('3')}) ? true : (asInt(retries) < 0))",
            id="disruption-rule-replaces-default",
        ),
    ],
)
def test_retry_expression(policy: RetryPolicy, expected: str) -> None:
    assert retry_expression(policy) == expected


def test_strategy_limit_backoff_and_deadline() -> None:
    strategy = retry_strategy(RetryPolicy(budget=4, rules=(), deadline_seconds=600)).model_dump(
        by_alias=True, exclude_none=True
    )
    assert strategy["limit"] == 4 + REQUEUE_ALLOWANCE
    assert strategy["retryPolicy"] == "Always"
    assert strategy["backoff"] == {
        "duration": "10s",
        "factor": 2,
        "cap": "6m",
        "maxDuration": "600s",
    }
    under_controller = retry_strategy(RetryPolicy(budget=4, rules=()), controller=True)
    assert under_controller.model_dump(by_alias=True, exclude_none=True)["backoff"] == {
        "duration": "10s"
    }


def test_daemon_pods_have_no_retry_strategy() -> None:
    """Argo v4.0.7 loses ``daemoned`` on a daemon's Retry node, so the step's DAG would never end
    (found on the engines by the deepspeed/mlx catalog e2e tests): daemons are not retried."""
    import yaml

    from tests.unit.examples import EXAMPLES

    docs = yaml.safe_load_all((EXAMPLES / "mpi" / "rendered.yaml").read_text())
    wf = next(d for d in docs if d["kind"] == "Workflow")
    daemons = [t for t in wf["spec"]["templates"] if t.get("daemon")]
    assert [t["name"] for t in daemons] == ["node"]
    assert all("retryStrategy" not in t for t in daemons)
