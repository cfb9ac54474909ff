"""adapters.trainjob.trainer: the translation reads one list of job inputs and leaves its inputs
alone. A policy works on the translation's copies: whatever it writes through its ``Context``
(``ctx.resources``, the TrainJob or runtime it holds) reaches neither the caller's TrainJob and
runtime nor what the next job reads."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_runtime, make_trainjob
from trainweave.adapters.trainjob import policies, trainer
from trainweave.adapters.trainjob.policies import Context
from trainweave.adapters.trainjob.policies.torch import Torch
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import Ancestor, Reason
from trainweave.model import PolicyPart

Json = dict[str, Any]
RESOURCES = {"limits": {"nvidia.com/gpu": "2", "cpu": "4"}}


class Scribbler(Torch):
    """Torch, writing into everything its Context hands it, and noting what each job saw."""

    def __init__(self) -> None:
        self.seen: list[Json] = []

    def validate(self, ctx: Context) -> list[Any]:
        ctx.resources["limits"]["cpu"] = "999"
        return super().validate(ctx)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: Json
    ) -> int | None:
        self.seen.append(ctx.resources)
        ctx.resources["limits"]["nvidia.com/gpu"] = "64"
        ctx.resources.clear()
        return super().enforce(ctx, job, ancestor, pod_spec)

    def part(self, ctx: Context) -> PolicyPart | None:
        trainer_spec = ctx.trainjob.spec.trainer
        if trainer_spec is not None and trainer_spec.resources_per_node is not None:
            trainer_spec.resources_per_node["limits"]["cpu"] = "1"
            trainer_spec.env.append({"name": "SCRIBBLED", "value": "1"})
        for rj in ctx.spec.template.spec.replicated_jobs:
            rj.template.setdefault("metadata", {})["scribbled"] = "1"
        return super().part(ctx)


def _inputs() -> tuple[Any, Any]:
    rt = make_runtime().with_initializers().with_exporter().build()
    tj = make_trainjob(trainer={"numNodes": 2, "resourcesPerNode": RESOURCES})
    return parse_trainjob(tj), parse_runtime(rt)


def test_a_policy_writing_its_context_changes_no_input() -> None:
    tj, rt = _inputs()
    before = (tj.model_dump(), rt.model_dump())
    scribbler = Scribbler()
    pipeline = trainer.to_pipeline(
        tj, rt, registry=policies.REGISTRY.with_policy("torch", scribbler)
    )
    assert (tj.model_dump(), rt.model_dump()) == before
    assert tj.spec.trainer is not None
    assert tj.spec.trainer.resources_per_node == RESOURCES
    # every job read the TrainJob's resources, whatever the jobs before it wrote
    assert scribbler.seen == [RESOURCES] * 4
    # and the translation is the one the shipped torch policy gives
    assert pipeline == trainer.to_pipeline(tj, rt)


def test_the_translation_leaves_its_inputs_alone() -> None:
    rt_doc = make_runtime().with_initializers().build()
    patch = {
        "manager": "acme.io/tool",
        "trainingRuntimeSpec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "spec": {"template": {"spec": {"nodeSelector": {"a": "b"}}}}
                            },
                        }
                    ]
                }
            }
        },
    }
    tj = parse_trainjob(
        make_trainjob(
            trainer={"numNodes": 2, "resourcesPerNode": RESOURCES}, runtimePatches=[patch]
        )
    )
    rt = parse_runtime(rt_doc)
    before = (tj.model_dump(), rt.model_dump())
    pipeline = trainer.to_pipeline(tj, rt)
    assert (tj.model_dump(), rt.model_dump()) == before
    (node,) = pipeline.step("node").jobs
    assert node.pod_template["spec"]["nodeSelector"] == {"a": "b"}


def test_job_inputs_are_the_runtime_jobs_in_order_patched() -> None:
    rt = parse_runtime(make_runtime().with_initializers().with_exporter().build())
    tj = parse_trainjob(make_trainjob())
    inputs, errors = trainer.job_inputs(tj, rt.spec)
    assert errors == []
    assert [(j.index, j.name, j.ancestor) for j in inputs] == [
        (0, "dataset-initializer", Ancestor.DATASET_INITIALIZER),
        (1, "model-initializer", Ancestor.MODEL_INITIALIZER),
        (2, "node", Ancestor.TRAINER),
        (3, "exporter", None),
    ]
    assert inputs[2].path == "spec.template.spec.replicatedJobs[2].template.spec"
    assert inputs[2].raw["template"] == rt.spec.template.spec.replicated_jobs[2].template
    assert inputs[2].raw["template"] is not rt.spec.template.spec.replicated_jobs[2].template


@pytest.mark.parametrize(
    ("key", "name"),
    [
        ("containers", "wait"),
        ("containers", "init"),
        ("containers", "supervisor"),
        ("containers", "artifact-plugin-s3"),
        ("initContainers", "init"),
        ("initContainers", "init-artifact-model"),
    ],
)
def test_a_container_named_as_argos_own_is_refused_by_name(key: str, name: str) -> None:
    """Argo puts its ``init`` and ``wait`` (or ``supervisor``) containers and artifact-plugin
    sidecars in every step pod: v4.1.4 refuses such a containerSet name at submit, on v4.0.7
    the pod would hold two containers of that name (validate.ARGO_RESERVED)."""
    rt = make_runtime().with_exporter()
    pod = rt.job_spec("exporter")["template"]["spec"]
    if key == "containers":
        pod["containers"].append({"name": name, "image": "busybox:1"})
    else:
        pod["initContainers"] = [{"name": name, "image": "busybox:1"}]
    runtime = parse_runtime(rt.build(), "rt.yaml")
    with pytest.raises(InputErrors) as exc:
        trainer.to_pipeline(parse_trainjob(make_trainjob(), "tj.yaml"), runtime)
    index = 1 if key == "containers" else 0
    assert [(e.path, e.reason) for e in exc.value.errors] == [
        (
            f"spec.template.spec.replicatedJobs[1].template.spec.template.spec.{key}[{index}].name",
            Reason.INVALID_RUNTIME,
        )
    ]
    assert (
        f"{name!r} is a name Argo Workflows gives its own containers" in exc.value.errors[0].message
    )


def test_names_argo_leaves_free_are_accepted() -> None:
    rt = make_runtime().with_exporter()
    rt.job_spec("exporter")["template"]["spec"]["containers"].append(
        {"name": "waiter", "image": "busybox:1"}
    )
    runtime = parse_runtime(rt.build(), "rt.yaml")
    assert trainer.to_pipeline(parse_trainjob(make_trainjob(), "tj.yaml"), runtime).steps
