"""Topology-Aware Scheduling on step pods: Kueue's podset annotations carried as they are, the
pod-group index label = the pod's rank in its PodSet, the topologyRequest the Workload preview
shows, and the annotations Kueue's pod webhook refuses, refused at render time."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_runtime, make_trainjob, model_job
from trainweave import labels as L
from trainweave.adapters.argo import workflow
from trainweave.adapters.kueue import tas, workloads
from trainweave.adapters.kueue.podsets import pod_roles
from trainweave.adapters.kueue.rolehash import PodDefaults, admitted_pod_spec, role_hash
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import StepRole
from trainweave.model import Job, Pipeline, Step

Json = dict[str, Any]
BLOCK = "cloud.example.com/block"
RACK = "cloud.example.com/rack"
REQ = L.KUEUE_PODSET_REQUIRED_TOPOLOGY
PREF = L.KUEUE_PODSET_PREFERRED_TOPOLOGY
UNC = L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY
SLICE = L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY
SIZE = L.KUEUE_PODSET_SLICE_SIZE
GROUP = L.KUEUE_PODSET_GROUP_NAME
LAYERS = L.KUEUE_PODSET_SLICE_CONSTRAINTS
INDEX = {"podIndexLabel": L.KUEUE_POD_GROUP_POD_INDEX}


def _job(name: str, pods: int, gpu: str, annotations: dict[str, str] | None = None) -> Job:
    job = model_job(name, pods, {"requests": {"nvidia.com/gpu": gpu}}, image=f"{name}:1")
    return Job(
        job.name,
        job.ancestor,
        job.replicas,
        job.pods_per_replica,
        {"metadata": {"annotations": annotations or {}}, "spec": job.pod_template["spec"]},
        job.retry,
    )


def _step(*jobs: Job) -> Step:
    return Step("trainer", StepRole.TRAINER, jobs, "gpu")


def _pipeline(*steps: Step) -> Pipeline:
    return Pipeline("ft", "ml", steps, "TrainingRuntime", "rt", {})


def _tasks(wf: Json, step: str) -> list[tuple[str, int]]:
    """(task, rank) of each pod task of ``step``'s DAG."""
    (dag,) = [t for t in wf["spec"]["templates"] if t["name"] == f"step-{step}"]
    out = []
    for task in dag["dag"]["tasks"]:
        params = {p["name"]: p["value"] for p in task["arguments"]["parameters"]}
        out.append((task["name"], int(params["rank"])))
    return out


# --- the topologyRequest Kueue builds (jobframework/tas.go Build) ------------------------------


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, INDEX),
        ({REQ: BLOCK}, {"required": BLOCK, **INDEX}),
        ({PREF: RACK}, {"preferred": RACK, **INDEX}),
        ({UNC: "true"}, {"unconstrained": True, **INDEX}),
        ({UNC: "False"}, {"unconstrained": False, **INDEX}),
        (
            {REQ: BLOCK, SLICE: RACK, SIZE: "4"},
            {"required": BLOCK, "podSetSliceRequiredTopology": RACK, "podSetSliceSize": 4, **INDEX},
        ),
        ({SLICE: RACK}, INDEX),  # without a size Kueue builds no slice (webhook refuses it)
        ({REQ: BLOCK, GROUP: "mpi"}, {"required": BLOCK, "podSetGroupName": "mpi", **INDEX}),
        (
            {LAYERS: f'[{{"topology":"{BLOCK}","size":8}},{{"topology":"{RACK}","size":4}}]'},
            {
                "podsetSliceRequiredTopologyConstraints": [
                    {"topology": BLOCK, "size": 8},
                    {"topology": RACK, "size": 4},
                ],
                **INDEX,
            },
        ),
    ],
    ids=[
        "none",
        "required",
        "preferred",
        "unconstrained",
        "unconstrained-false",
        "slice",
        "slice-without-size",
        "group",
        "multi-layer",
    ],
)
def test_topology_request(annotations: dict[str, str], expected: Json) -> None:
    request = tas.topology_request(annotations)
    assert request.model_dump(by_alias=True, exclude_none=True) == expected


# --- annotations Kueue's pod webhook refuses (jobframework/tas_validation.go) ------------------


@pytest.mark.parametrize(
    ("annotations", "messages"),
    [
        ({REQ: BLOCK, SLICE: RACK, SIZE: "2"}, []),
        ({PREF: BLOCK, GROUP: "g"}, []),
        ({UNC: "1"}, []),
        ({REQ: BLOCK, PREF: RACK}, ["must not contain more than one topology annotation"]),
        ({REQ: "block level"}, ["name must be at most 63 alphanumerics"]),
        ({REQ: "Bad_/block"}, ["prefix must be a DNS subdomain"]),
        ({UNC: "yes"}, ["'yes': must be a boolean"]),
        ({GROUP: "g"}, ["may not be set when neither"]),
        ({REQ: BLOCK, GROUP: "42"}, ["'42' must not be a number"]),
        (
            {REQ: BLOCK, GROUP: "g", SLICE: RACK, SIZE: "2"},
            [f"may not be set when '{SIZE}'", f"may not be set when '{SLICE}'"],
        ),
        ({SLICE: RACK}, [f"must be set when '{SLICE}' is specified"]),
        ({SIZE: "2"}, [f"may not be set when '{SLICE}' is not specified"]),
        ({SLICE: RACK, SIZE: "0"}, ["'0' must be greater than or equal to 1"]),
        ({SLICE: RACK, SIZE: "two"}, ["'two' must be a numeric value"]),
        ({LAYERS: "[]"}, ["between 1 and 3 entries"]),
        ({LAYERS: "{"}, ["must be a valid JSON array"]),
        (
            {LAYERS: '[{"topology":"a","size":6},{"topology":"a","size":4}]'},
            ["must be unique", "size 4 must evenly divide the parent 6"],
        ),
        (
            {LAYERS: '[{"topology":"a","size":2}]', SIZE: "2"},
            [f"may not be set when '{SLICE}' is not specified", f"may not be set with '{SIZE}'"],
        ),
    ],
    ids=[
        "slice-ok",
        "group-ok",
        "unconstrained-ok",
        "two-modes",
        "bad-level",
        "bad-prefix",
        "not-bool",
        "group-alone",
        "numeric-group",
        "group-with-slice",
        "slice-without-size",
        "size-without-slice",
        "size-zero",
        "size-nan",
        "no-layers",
        "bad-json",
        "layers",
        "layers-with-size",
    ],
)
def test_annotation_errors(annotations: dict[str, str], messages: list[str]) -> None:
    errors = tas.annotation_errors(annotations, "meta")
    assert len(errors) == len(messages), errors
    for error, message in zip(errors, messages, strict=True):
        assert message in error.message
        assert error.reason is L.Reason.UNSUPPORTED_FIELD


def test_render_refuses_what_kueue_refuses() -> None:
    step = _step(_job("node", 2, "8", {REQ: BLOCK, PREF: RACK}))
    with pytest.raises(InputErrors) as exc:
        workflow.workflow(_pipeline(step))
    assert str(exc.value) == (
        "replicatedJob 'node' template.metadata.annotations: must not contain more than one "
        f"topology annotation: ['{REQ}', '{PREF}']"
    )


# --- ranks: kueue.x-k8s.io/pod-group-pod-index (pkg/controller/tas/topology_ungater.go) --------


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        (
            (_job("node", 4, "8"),),
            [("node-0-0", 0), ("node-0-1", 1), ("node-0-2", 2), ("node-0-3", 3)],
        ),
        # launcher and nodes of one shape: one PodSet, ranks go on in job order
        (
            (_job("launcher", 1, "8"), _job("node", 2, "8")),
            [("launcher-0-0", 0), ("node-0-0", 1), ("node-0-1", 2)],
        ),
        # two shapes, two PodSets: each counts from 0 (as upstream's job-completion-index)
        (
            (_job("launcher", 1, "0"), _job("node", 2, "8")),
            [("launcher-0-0", 0), ("node-0-0", 0), ("node-0-1", 1)],
        ),
        # a PodSet group: the larger PodSet's ranks follow the smaller one's (LWS convention)
        (
            (
                _job("launcher", 1, "0", {REQ: BLOCK, GROUP: "mpi"}),
                _job("node", 2, "8", {REQ: BLOCK, GROUP: "mpi"}),
            ),
            [("launcher-0-0", 0), ("node-0-0", 1), ("node-0-1", 2)],
        ),
    ],
    ids=["one-job", "one-podset", "two-podsets", "podset-group"],
)
def test_rank_per_pod(jobs: tuple[Job, ...], expected: list[tuple[str, int]]) -> None:
    wf = workflow.workflow(_pipeline(_step(*jobs)))
    assert _tasks(wf, "trainer") == expected


def test_rank_with_replicas_is_jobset_order() -> None:
    """replica-major then index: job-index x pods per Job + completion index, as Kueue ranks an
    upstream JobSet's pods (subGroupIndexLabel job-index)."""
    job = _job("node", 2, "8")
    job = Job(job.name, job.ancestor, 2, 2, job.pod_template, job.retry)
    wf = workflow.workflow(_pipeline(_step(job)))
    assert _tasks(wf, "trainer") == [
        ("node-0-0", 0),
        ("node-0-1", 1),
        ("node-1-0", 2),
        ("node-1-1", 3),
    ]


def _trainjob_render(annotations: Json, patch_annotations: Json | None) -> Json:
    runtime = make_runtime(ml_policy={"numNodes": 4, "torch": {}}).gpu(8)
    runtime.job_spec("node")["template"]["metadata"] = {"annotations": annotations}
    spec: Json = {}
    if patch_annotations is not None:
        spec["runtimePatches"] = [
            {
                "manager": "test.example.com/tas",
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": "node",
                                    "template": {
                                        "spec": {
                                            "template": {
                                                "metadata": {"annotations": patch_annotations}
                                            }
                                        }
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ]
    trainjob = parse_trainjob(make_trainjob(**spec))
    pipeline = to_pipeline(trainjob, parse_runtime(runtime.build()))
    return workflow.workflow(pipeline)


def test_every_trainer_pod_carries_runtime_and_patch_annotations_and_its_rank() -> None:
    wf = _trainjob_render({REQ: RACK, "keep": "me"}, {REQ: BLOCK, SLICE: RACK, SIZE: "2"})
    pod = next(t for t in wf["spec"]["templates"] if t["name"] == "node")
    annotations = pod["metadata"]["annotations"]
    assert {k: annotations[k] for k in (REQ, SLICE, SIZE, "keep")} == {
        REQ: BLOCK,  # the patch wins, as Trainer merges runtimePatches
        SLICE: RACK,
        SIZE: "2",
        "keep": "me",
    }
    assert pod["metadata"]["labels"][L.KUEUE_POD_GROUP_POD_INDEX] == "{{inputs.parameters.rank}}"
    assert [p["name"] for p in pod["inputs"]["parameters"]] == ["replica", "index", "rank"]
    assert [rank for _, rank in _tasks(wf, "node")] == [0, 1, 2, 3]


def test_rank_is_not_in_the_role_hash_and_retries_keep_it() -> None:
    """The rank is a label from the task's arguments: the pod spec Kueue hashes is the same for
    every rank, and an Argo retry of a task runs the same template with the same arguments
    (docs/design.md, D11)."""
    wf = _trainjob_render({REQ: BLOCK}, None)
    pod = next(t for t in wf["spec"]["templates"] if t["name"] == "node")
    assert "rank" not in str(pod.get("podSpecPatch", ""))
    assert all("inputs.parameters.rank" not in str(c) for c in pod["containerSet"]["containers"])
    assert pod["retryStrategy"]  # one template, retried with the task's own arguments


def test_a_trainjob_names_the_field_of_annotations_kueue_refuses() -> None:
    """Refused before render, under the runtime's field when the runtime's own pod has them,
    else under the runtimePatch that brought them in."""
    with pytest.raises(InputErrors) as exc:
        _trainjob_render({REQ: BLOCK, PREF: RACK}, None)
    assert [e.path for e in exc.value.errors] == [
        "spec.template.spec.replicatedJobs[0].template.spec.template.metadata.annotations"
    ]
    with pytest.raises(InputErrors) as exc:
        _trainjob_render({REQ: BLOCK}, {GROUP: "7"})
    (error,) = exc.value.errors
    assert error.path == (
        "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]"
        f".template.spec.template.metadata.annotations[{GROUP}]"
    )
    assert error.reason is L.Reason.INVALID_TRAINJOB
    assert "must not be a number" in error.message


# --- the Workload preview ------------------------------------------------------------------------


def test_workload_preview_has_the_topology_request() -> None:
    launcher = _job("launcher", 1, "0", {PREF: BLOCK, GROUP: "mpi"})
    node = _job("node", 4, "8", {PREF: BLOCK, GROUP: "mpi"})
    (wl,) = workloads.workloads(_pipeline(_step(launcher, node)))
    requests = {ps["count"]: ps["topologyRequest"] for ps in wl["spec"]["podSets"]}
    want = {"preferred": BLOCK, "podSetGroupName": "mpi", **INDEX}
    assert requests == {1: want, 4: want}


def test_podset_of_several_jobs_takes_the_first_jobs_annotations() -> None:
    a = _job("a", 1, "8", {REQ: BLOCK})
    b = _job("b", 2, "8", {REQ: BLOCK})
    (role,) = pod_roles(_step(a, b))
    assert role.annotations == {REQ: BLOCK}
    spec = admitted_pod_spec(a.pod_template["spec"], PodDefaults())
    assert role.name == role_hash(spec)
