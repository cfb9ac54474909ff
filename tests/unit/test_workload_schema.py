"""Workload previews validate against Kueue's Workload CRD schema (pinned module version).

Unknown fields are rejected too (``additionalProperties: false`` wherever the CRD
lists properties and does not preserve unknown fields), like ``kubectl --validate=strict``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crds import Validator, schema_errors
from trainweave.adapters.kueue import workloads
from trainweave.adapters.kueue.rolehash import PodDefaults
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import StepRole
from trainweave.model import Job, Pipeline, RetryPolicy, Step

pytestmark = pytest.mark.schema
EXAMPLES = Path(__file__).parents[2] / "examples"
Json = dict[str, Any]


def _example_pipelines() -> list[tuple[str, Pipeline]]:
    out = []
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "trainjob.yaml").exists()):
        job = parse_trainjob(yaml.safe_load((folder / "trainjob.yaml").read_text()))
        runtime = parse_runtime(yaml.safe_load((folder / "runtime.yaml").read_text()))
        out.append((folder.name, to_pipeline(job, runtime)))
    return out


def _rich_pipeline() -> Pipeline:
    pod: Json = {
        "containers": [
            {
                "name": "node",
                "image": "trainer:1",
                "resources": {"limits": {"nvidia.com/gpu": "8", "cpu": "32", "memory": "256Gi"}},
                "ports": [{"containerPort": 29400}],
            }
        ],
        "nodeSelector": {"pool": "h100"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "affinity": {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"},
                    }
                ]
            }
        },
    }
    jobs = (
        Job(
            name="launcher",
            ancestor=None,
            replicas=1,
            pods_per_replica=1,
            pod_template={
                "metadata": {},
                "spec": {**pod, "containers": [{"name": "l", "image": "l"}]},
            },
            retry=RetryPolicy(budget=0),
        ),
        Job(
            name="node",
            ancestor=None,
            replicas=1,
            pods_per_replica=4,
            pod_template={"metadata": {}, "spec": pod},
            retry=RetryPolicy(budget=0),
        ),
    )
    step = Step("trainer", StepRole.TRAINER, jobs, "gpu", priority_class="high")
    return Pipeline("tj", "ml", (step,), "TrainingRuntime", "rt", {})


CASES = [(name, p, PodDefaults()) for name, p in _example_pipelines()] + [
    ("rich-with-priority", _rich_pipeline(), PodDefaults(priorities={"high": 100})),
    (
        "executor-resources",
        _rich_pipeline(),
        PodDefaults(executor_resources={"requests": {"cpu": "10m"}}, priorities={"high": 1}),
    ),
]


@pytest.mark.parametrize(
    ("pipeline", "defaults"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_workload_previews_are_schema_valid(
    workload_validator: Validator, pipeline: Pipeline, defaults: PodDefaults
) -> None:
    previews = workloads.workloads(pipeline, defaults)
    assert previews
    for preview in previews:
        assert schema_errors(workload_validator, preview) == []


def test_schema_catches_an_unknown_field(workload_validator: Validator) -> None:
    preview = copy.deepcopy(workloads.workloads(_rich_pipeline())[0])
    preview["spec"]["podSets"][0]["replicas"] = 2
    assert any("replicas" in e for e in schema_errors(workload_validator, preview))


def test_schema_catches_a_bad_count(workload_validator: Validator) -> None:
    preview = copy.deepcopy(workloads.workloads(_rich_pipeline())[0])
    preview["spec"]["podSets"][0]["count"] = "two"
    assert schema_errors(workload_validator, preview)
