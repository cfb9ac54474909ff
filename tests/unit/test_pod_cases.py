"""trainweave refuses every pod template the Kubernetes API server refuses, naming its field.

The cases and their fields are ``tests.pod_cases``; ``tests/e2e/test_pod_validation.py`` pins
each field on the real kube-apiserver. Each case is rendered with the example TrainJob, as
``trainweave render`` does: the runtime is parsed, then the rendered pods are judged.
"""

from __future__ import annotations

from collections import Counter

import pytest
import yaml

from tests import pod_cases
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import Json, parse_runtime, parse_trainjob

TRAINJOB = pod_cases.BASE.with_name("trainjob.yaml")


def refusals(runtime: Json) -> list[str]:
    """The paths trainweave names for ``runtime`` with the example TrainJob ([] if accepted)."""
    trainjob = parse_trainjob(yaml.safe_load(TRAINJOB.read_text()))
    try:
        to_pipeline(trainjob, parse_runtime(runtime))
    except InputErrors as exc:
        return [e.path for e in exc.errors]
    return []


def test_the_base_is_accepted() -> None:
    assert refusals(pod_cases.runtime()) == []


def test_at_least_40_cases_in_every_family() -> None:
    families = Counter(c.family for c in pod_cases.CASES)
    assert len(pod_cases.CASES) >= 40, families
    assert len({c.name for c in pod_cases.CASES}) == len(pod_cases.CASES)


@pytest.mark.parametrize("case", pod_cases.CASES, ids=lambda c: c.name)
def test_refused_naming_the_field(case: pod_cases.PodCase) -> None:
    assert case.trainweave_field in refusals(pod_cases.edited_runtime(case))


def test_the_job_base_is_accepted() -> None:
    assert refusals(pod_cases.edited_job_runtime(None)) == []


@pytest.mark.parametrize("case", pod_cases.JOB_CASES, ids=lambda c: c.name)
def test_job_refused_naming_the_field(case: pod_cases.JobCase) -> None:
    assert case.trainweave_field in refusals(pod_cases.edited_job_runtime(case))


GPU = "nvidia.com/gpu"


@pytest.mark.parametrize(
    ("trainer", "field"),
    [
        ({"resourcesPerNode": {"requests": {GPU: "0.5"}}}, f"resourcesPerNode.requests.{GPU}"),
        (
            {"resourcesPerNode": {"requests": {"cpu": "32"}, "limits": {"cpu": "16"}}},
            "resourcesPerNode.requests",
        ),
        (
            {"resourcesPerNode": {"requests": {GPU: "8"}, "limits": {GPU: "4"}}},
            "resourcesPerNode.requests",
        ),
        ({"resourcesPerNode": {"requests": {GPU: "8"}}}, "resourcesPerNode.limits"),
        (
            {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s"}}}]},
            "env[0].valueFrom.secretKeyRef.key",
        ),
        ({"env": [{"name": "T", "valueFrom": {}}]}, "env[0].valueFrom"),
    ],
    ids=[
        "fractional-gpu",
        "cpu-request-above-limit",
        "gpu-request-not-limit",
        "gpu-without-limit",
        "secret-without-key",
        "value-from-empty",
    ],
)
def test_a_trainjob_field_that_breaks_the_rendered_pod_is_named(trainer: Json, field: str) -> None:
    """The rendered trainer pod is judged with the TrainJob's fields in; the error names the
    TrainJob field that brought the value (the runtime's trainer container has no resources)."""
    doc = yaml.safe_load(TRAINJOB.read_text())
    doc["spec"]["trainer"] = {"numNodes": 1, **trainer}
    try:
        to_pipeline(parse_trainjob(doc), parse_runtime(pod_cases.runtime()))
    except InputErrors as exc:
        paths = [e.path for e in exc.errors]
    else:
        paths = []
    assert f"spec.trainer.{field}" in paths


def test_a_runtime_patch_that_breaks_the_rendered_pod_is_named() -> None:
    pod = {
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedul"}],
        "containers": [
            {"name": "model-exporter", "env": [{"name": "T", "valueFrom": {"secretKeyRef": {}}}]}
        ],
    }
    job = {"name": "model-exporter", "template": {"spec": {"template": {"spec": pod}}}}
    doc = yaml.safe_load(TRAINJOB.read_text())
    doc["spec"]["runtimePatches"] = [
        {"manager": "acme.io/x"},
        {
            "manager": "acme.io/y",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
        },
    ]
    with pytest.raises(InputErrors) as raised:
        to_pipeline(parse_trainjob(doc), parse_runtime(pod_cases.runtime()))
    patch = "spec.runtimePatches[1].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
    assert [e.path for e in raised.value.errors] == [
        f"{patch}.template.spec.template.spec.containers[0].env[0].valueFrom.secretKeyRef.key",
        f"{patch}.template.spec.template.spec.tolerations[0].effect",
    ]
