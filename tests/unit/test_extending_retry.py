"""docs/extending.md's "Change the retry mapping", followed by a test.

The page's chain, one Job spec per podFailurePolicy form: the Job fields read into a
``RetryPolicy`` (``jobspec.retry_policy``), Argo's half (``retry.retry_strategy``: the expression
alone, or none when the controller judges), the ``trainweave.io/backoff-limits`` wire form the
controller reads back (``codecs.policy_wire`` / ``codecs.policy_of_wire``), and the
controller's half (``retry.judge``, applied by ``verdict.verdict``), which must judge every
attempt as the policy it was written from. A mapping changed by the recipe keeps this table
passing or names the step it broke. This file imports only modules the page lists (checked
from its own imports); the files the page says are not touched reach the annotation only
through the codecs.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from tests.unit import extending
from trainweave import codecs
from trainweave.adapters.argo import retry
from trainweave.adapters.trainjob import jobspec
from trainweave.integrations.views.decide import verdict
from trainweave.model import RetryPolicy

Json = dict[str, Any]
CONTAINERS = ["node", "sidecar"]


def _exit(operator: str, *values: int, container: str | None = None) -> Json:
    on: Json = {"operator": operator, "values": list(values)}
    if container is not None:
        on["containerName"] = container
    return {"onExitCodes": on}


DISRUPTION: Json = {"onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
SPECS: dict[str, tuple[Json, int, list[str]]] = {
    "default-budget": ({}, 1, ["node"]),
    "backoff-limit": ({"backoffLimit": 3}, 1, ["node"]),
    "shared-by-pods": ({"backoffLimit": 2}, 4, ["node"]),
    "per-index": ({"backoffLimitPerIndex": 1, "completionMode": "Indexed"}, 4, ["node"]),
    "fail-on-code": (
        {"podFailurePolicy": {"rules": [{"action": "FailJob", **_exit("In", 42)}]}},
        1,
        ["node"],
    ),
    "ignore-not-in": (
        {"podFailurePolicy": {"rules": [{"action": "Ignore", **_exit("NotIn", 1, 2)}]}},
        1,
        ["node"],
    ),
    "container-named": (
        {
            "podFailurePolicy": {
                "rules": [
                    {"action": "FailJob", **_exit("In", 3, container="sidecar")},
                    {"action": "Count", **_exit("In", 3)},
                ]
            }
        },
        1,
        CONTAINERS,
    ),
    "disruption-rule": (
        {"backoffLimit": 1, "podFailurePolicy": {"rules": [{"action": "Count", **DISRUPTION}]}},
        2,
        ["node"],
    ),
}
# (phase, exits, disruption): failed attempts as the controller sees them
ATTEMPTS: list[tuple[str, list[tuple[str, int]], retry.Disrupted]] = [
    ("Failed", [("node", 1)], retry.Disrupted.NO),
    ("Failed", [("node", 2)], retry.Disrupted.NO),
    ("Failed", [("node", 42)], retry.Disrupted.NO),
    ("Failed", [("node", 3), ("sidecar", 143)], retry.Disrupted.NO),
    ("Failed", [("node", 143), ("sidecar", 3)], retry.Disrupted.NO),
    ("Failed", [("node", 143)], retry.Disrupted.NO),
    ("Error", [], retry.Disrupted.NO),
    ("Failed", [("node", 1)], retry.Disrupted.DISRUPTED),
    ("Failed", [("node", 42)], retry.Disrupted.STOPPED),
]


def _policy(spec: Json, pods: int, containers: list[str]) -> RetryPolicy:
    policy, errors = jobspec.retry_policy(spec, pods, containers, [], "spec.template.spec")
    assert errors == []
    return policy


@pytest.mark.parametrize(("spec", "pods", "containers"), SPECS.values(), ids=SPECS.keys())
def test_argo_and_the_controller_keep_the_same_policy(
    spec: Json, pods: int, containers: list[str]
) -> None:
    policy = _policy(spec, pods, containers)
    # Argo's half: its own expression, unless the controller judges (then none)
    alone = retry.retry_strategy(policy)
    judged = retry.retry_strategy(policy, controller=True)
    assert judged.expression is None
    assert alone.expression == (None if policy.judged else retry.retry_expression(policy))
    # the annotation, through JSON as the Workflow carries it, reads back as the policy
    # (but the deadline, which Argo keeps)
    wire = json.loads(json.dumps(codecs.policy_wire(policy)))
    back = codecs.policy_of_wire(wire)
    assert back == replace(policy, deadline_seconds=None)
    # the controller's half judges every attempt as the policy it was written from
    for phase, exits, why in ATTEMPTS:
        assert retry.judge(back, phase, exits, why) == retry.judge(policy, phase, exits, why)
    # nothing failed: no verdict
    assert verdict.verdict("node", "node", back, None, {}) is None


@pytest.mark.parametrize(
    ("spec", "attempt", "action"),
    [
        (SPECS["fail-on-code"], ATTEMPTS[2], "FailJob"),
        (SPECS["fail-on-code"], ATTEMPTS[0], "Count"),
        (SPECS["ignore-not-in"], ATTEMPTS[2], "Ignore"),
        (SPECS["ignore-not-in"], ATTEMPTS[1], "Count"),
        (SPECS["container-named"], ATTEMPTS[3], "Count"),  # 143 beside a failure is Argo's
        (SPECS["container-named"], ATTEMPTS[4], "FailJob"),
        (SPECS["disruption-rule"], ATTEMPTS[7], "Count"),
        (SPECS["backoff-limit"], ATTEMPTS[7], "Ignore"),  # a disruption no rule names
        (SPECS["fail-on-code"], ATTEMPTS[8], "Ignore"),  # Kueue stopped it
    ],
    ids=[
        "FailJob-match",
        "FailJob-no-match",
        "Ignore-NotIn",
        "Count-NotIn",
        "container-143-is-argos",
        "container-named",
        "disruption-rule",
        "disruption-no-rule",
        "stopped",
    ],
)
def test_the_controllers_judgement(
    spec: tuple[Json, int, list[str]],
    attempt: tuple[str, list[tuple[str, int]], retry.Disrupted],
    action: str,
) -> None:
    policy = codecs.policy_of_wire(codecs.policy_wire(_policy(*spec)))
    assert retry.judge(policy, *attempt).action == action


def test_the_files_not_touched_reach_the_annotation_through_the_codecs() -> None:
    """The page's "Not touched" files write and read ``trainweave.io/backoff-limits`` only with
    ``codecs.encode_backoff_limits`` / ``codecs.decode_backoff_limits``, so a changed policy
    field changes ``trainweave/codecs.py`` alone."""
    section = extending.section("Change the retry mapping")
    untouched = re.search(r"^Not touched: (.*?)(?:\n\n|\Z)", section, re.S | re.M)
    assert untouched is not None
    for path, call in [
        ("adapters/argo/workflow.py", "codecs.encode_backoff_limits("),
        ("integrations/views/read/argo_view.py", "codecs.decode_backoff_limits("),
    ]:
        assert path in untouched.group(1)
        text = (extending.ROOT / path).read_text()
        assert call in text, path
        assert "json.loads" not in text or "BACKOFF_LIMITS" not in text.split("json.loads")[1][:200]


def test_this_test_touches_only_the_places_the_page_lists() -> None:
    assert extending.unlisted(__file__, "Change the retry mapping") == [], (
        "imported by the retry recipe's test but not on docs/extending.md's checklist"
    )
