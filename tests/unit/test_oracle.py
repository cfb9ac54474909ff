"""The static oracle: trainweave and Kubeflow Trainer v2.3.0's own framework, same inputs.

Every case of ``tests.oracle.harness.all_cases`` (the pinned catalog x the Kubeflow SDK's
TrainJobs, the project's examples, hand-made merge cases) goes through ``hack/oracle`` and
``to_pipeline``. The differences found must be exactly those docs/fidelity.md lists (each
with its reason): a new or a vanished difference fails.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

import pytest

from tests.oracle import harness
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob

pytestmark = pytest.mark.schema  # hack/oracle and the Trainer module: needs Go
FIDELITY = Path(__file__).parents[2] / "docs" / "fidelity.md"


@pytest.fixture(scope="session")
def cases() -> list[harness.Case]:
    return harness.all_cases()


@pytest.fixture(scope="session")
def answers(cases: list[harness.Case]) -> dict[str, Any]:
    return harness.upstream(cases)


def listed() -> list[str]:
    """The patterns of docs/fidelity.md's difference table (first column, in backticks): the
    section "Differences that stay" only (other tables of the page have backticked cells too)."""
    section = FIDELITY.read_text().split("\n## Differences that stay\n", 1)[1].split("\n## ")[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_the_cases_cover_the_catalog_and_the_sdk_shapes(cases: list[harness.Case]) -> None:
    runtimes = {c.runtime["metadata"]["name"] for c in cases}
    assert {rt["metadata"]["name"] for rt in harness.catalog()} <= runtimes
    shapes = {c.name.split("/", 1)[1] for c in cases}
    assert {"custom-fn-2nodes-fractional-cpu", "container-1node-init", "no-trainer"} <= shapes
    assert {"container-patch-labels", "torchtune-lora", "torchtune-qlora-2nodes"} <= shapes


def test_upstream_accepts_and_builds_most_cases(
    cases: list[harness.Case], answers: dict[str, Any]
) -> None:
    """The oracle is live: it builds a JobSet for accepted cases and rejects the bad ones."""
    built = [c for c in cases if any(o["kind"] == "JobSet" for o in answers[c.name]["objects"])]
    rejected = [c for c in cases if answers[c.name]["errors"]]
    assert len(built) >= 40 and len(rejected) >= 5
    snapshot = answers["torch-distributed/no-trainer"]["created"]
    assert [cm["metadata"]["name"] for cm in snapshot] == [
        cases[[c.name for c in cases].index("torch-distributed/no-trainer")].trainjob["metadata"][
            "name"
        ]
        + "-runtime-snapshot"
    ]


def test_differences_are_exactly_the_listed_ones(
    cases: list[harness.Case], answers: dict[str, Any]
) -> None:
    found = [d for c in cases for d in harness.differences(c, answers[c.name])]
    patterns = listed()
    unexplained = [d for d in found if not any(fnmatch.fnmatchcase(d, p) for p in patterns)]
    stale = [p for p in patterns if not any(fnmatch.fnmatchcase(d, p) for d in found)]
    assert (unexplained, stale) == ([], [])


@pytest.mark.parametrize(
    ("case", "job", "path"),
    [
        ("custom-fn-2nodes-fractional-cpu", "node", "containers[node].env"),
        ("torchtune-full", "node", "containers[node].command"),
        ("torchtune-lora", "node", "containers[node].command"),
        ("custom-fn-gpu", "node", "containers[node].resources"),
    ],
)
def test_pinned_fields_agree_on_every_runtime(
    cases: list[harness.Case], answers: dict[str, Any], case: str, job: str, path: str
) -> None:
    """The fields the SDK's users depend on, compared value by value (not just as a set)."""
    matching = [c for c in cases if c.name.endswith("/" + case)]
    assert matching
    for c in matching:
        ours, theirs = harness.detail(c, answers[c.name], job, path)
        assert ours == theirs, c.name


def test_upstream_orders_xgboost_env_at_random(cases: list[harness.Case]) -> None:
    """Found by the oracle: Trainer v2.3.0 runs its EnforceMLPolicy plugins in Go map order, and
    for xgboost both PlainML (the TrainJob's env) and XGBoost (DMLC_*) add env to the node
    container, so the order differs from one controller process to the next. trainweave takes
    PlainML-first; the comparison of xgboost env ignores order."""
    (case,) = [c for c in cases if c.name == "xgboost-distributed/custom-fn-2nodes-fractional-cpu"]
    copies = [harness.Case(f"{case.name}#{i}", case.trainjob, case.runtime) for i in range(30)]
    firsts = set()
    for answer in harness.upstream(copies).values():
        (jobset,) = [o for o in answer["objects"] if o["kind"] == "JobSet"]
        pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        firsts.add(pod["containers"][0]["env"][0]["name"])
    assert firsts == {"SEED", "DMLC_TRACKER_URI"}
    ours, _ = harness.trainweave_jobs(case)
    assert ours["node"]["containers[node].env"][0]["name"] == "SEED"


@pytest.mark.parametrize(
    "name",
    [
        "initializer/no-model-job",
        "initializer/no-container-of-the-name",
        "initializer/no-initializer-mount",
    ],
)
def test_initializer_rejections_say_what_upstream_says(
    name: str, cases: list[harness.Case], answers: dict[str, Any]
) -> None:
    """Trainer's webhook wants the job, its container and the ``initializer`` mount a TrainJob's
    ``spec.initializer`` uses; trainweave names the same field with upstream's words (up to the
    ``when ...`` clause, which names the field the trainweave way)."""
    case = next(c for c in cases if c.name == name)
    (upstream,) = answers[name]["errors"]
    with pytest.raises(InputErrors) as raised:
        to_pipeline(parse_trainjob(case.trainjob), parse_runtime(case.runtime))
    # (a job labelled dataset-initializer without that container: the runtime webhook refuses
    # it too, on the containers, as upstream does: answers[name]["runtimeFieldErrors"])
    (ours,) = [e for e in raised.value.errors if e.path == "spec.runtimeRef"]
    assert upstream["field"] == "spec.runtimeRef"
    assert upstream["detail"].split(" when ")[0] in ours.message
