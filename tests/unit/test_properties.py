"""Properties over generated TrainJobs/runtimes: valid Workflows, right gang sizes, determinism."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import make_runtime, make_trainjob
from tests.crds import Validator
from trainweave.adapters.argo import workflow
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob

Json = dict[str, Any]


@st.composite
def inputs(draw: st.DrawFn) -> tuple[Json, Json]:
    """A valid (TrainJob, runtime) pair within bounds."""
    rt = make_runtime()
    if draw(st.booleans()):
        rt.with_initializers()
    if draw(st.booleans()):
        rt.with_exporter()
    gpus = draw(st.integers(0, 8))
    if gpus:
        rt.gpu(gpus)
    spec = rt.job_spec("node")
    if draw(st.booleans()):
        spec.update(completionMode="Indexed", backoffLimitPerIndex=draw(st.integers(0, 5)))
    else:
        spec["backoffLimit"] = 0
    codes = draw(st.lists(st.integers(1, 255), min_size=1, max_size=4, unique=True))
    action = draw(st.sampled_from(["FailJob", "Ignore", "Count"]))
    if draw(st.booleans()):
        spec["podFailurePolicy"] = {
            "rules": [
                {"action": action, "onExitCodes": {"operator": "In", "values": sorted(codes)}}
            ]
        }
        spec["template"]["spec"]["restartPolicy"] = "Never"
    if draw(st.booleans()):
        spec["activeDeadlineSeconds"] = draw(st.integers(1, 10**6))
    trainer: Json = {"numNodes": draw(st.integers(1, 16))}
    if draw(st.booleans()):
        trainer["numProcPerNode"] = draw(st.integers(1, 8))
    tj = make_trainjob(
        name=draw(st.from_regex(r"[a-z][a-z0-9]{0,20}", fullmatch=True)), trainer=trainer
    )
    if "dataset-initializer" in {j["name"] for j in rt.jobs}:
        tj["spec"]["initializer"] = {"dataset": {"storageUri": "hf://org/data"}}
    return tj, rt.build()


def _render(tj: Json, rt: Json) -> list[Json]:
    return workflow.render(to_pipeline(parse_trainjob(tj), parse_runtime(rt)))


@pytest.mark.schema
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inputs())
def test_any_valid_input_renders_a_schema_valid_workflow(
    workflow_validator: Validator, pair: tuple[Json, Json]
) -> None:
    tj, rt = pair
    workflow = _render(tj, rt)[0]
    errors = [
        f"{list(e.absolute_path)}: {e.message}" for e in workflow_validator.iter_errors(workflow)
    ]
    assert errors == []


@settings(max_examples=60, deadline=None)
@given(inputs())
def test_group_total_count_is_the_pods_of_the_step(pair: tuple[Json, Json]) -> None:
    tj, rt = pair
    pipeline = to_pipeline(parse_trainjob(tj), parse_runtime(rt))
    templates = {t["name"]: t for t in workflow.render(pipeline)[0]["spec"]["templates"]}
    for step in pipeline.steps:
        tasks = templates[f"step-{step.name}"]["dag"]["tasks"]
        assert len(tasks) == step.pods
        for task in tasks:
            meta = templates[task["template"]]["metadata"]
            assert meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == str(step.pods)
            assert meta["labels"]["kueue.x-k8s.io/queue-name"] == step.queue


@settings(max_examples=40, deadline=None)
@given(inputs())
def test_rendering_is_deterministic(pair: tuple[Json, Json]) -> None:
    tj, rt = pair
    assert _render(tj, rt) == _render(copy.deepcopy(tj), copy.deepcopy(rt))
