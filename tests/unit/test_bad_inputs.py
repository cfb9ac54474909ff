"""Invalid input: exit 2, one ``error: FILE: FIELD.PATH: reason`` line per problem, no stdout."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import RuntimeBuilder, make_runtime, make_trainjob
from trainweave.cli import main

Json = dict[str, Any]
RJ = "spec.template.spec.replicatedJobs"


def _unknown_dep(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job("node")["dependsOn"] = [{"name": "tokenizer", "status": "Complete"}]


def _later_dep(rt: RuntimeBuilder, tj: Json) -> None:
    rt.with_exporter()
    rt.job("node")["dependsOn"] = [{"name": "exporter", "status": "Complete"}]
    rt.job("exporter")["dependsOn"] = []


def _cycle(rt: RuntimeBuilder, tj: Json) -> None:
    rt.with_exporter()
    rt.job("node")["dependsOn"] = [{"name": "exporter", "status": "Complete"}]


def _init_without_job(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["initializer"] = {"dataset": {"storageUri": "hf://org/data"}}


def _init_without_mount(rt: RuntimeBuilder, tj: Json) -> None:
    rt.with_initializers()
    del rt.container("model-initializer")["volumeMounts"]
    tj["spec"]["initializer"] = {"model": {"storageUri": "hf://org/model"}}


def _num_nodes(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"numNodes": 0}


def _empty_image(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"image": ""}  # upstream sets it: a container the API server refuses


def _num_nodes_enormous(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"numNodes": 1_000_000}  # rendering it took 22 GB before the limit


def _storage_uri(rt: RuntimeBuilder, tj: Json) -> None:
    rt.with_initializers()
    tj["spec"]["initializer"] = {"dataset": {"storageUri": "just-a-path"}}


def _quantity(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"resourcesPerNode": {"limits": {"nvidia.com/gpu": "8 GPUs"}}}


def _long_name(rt: RuntimeBuilder, tj: Json) -> None:
    tj["metadata"]["name"] = "a" * 58


def _job_field(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job_spec("node")["maxFailedIndexes"] = 1


def _no_queue(rt: RuntimeBuilder, tj: Json) -> None:
    del rt.job("node")["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]


def _reserved_env(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"env": [{"name": "PET_MASTER_ADDR", "value": "x"}]}


def _unknown_runtime(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["runtimeRef"]["name"] = "missing"


def _not_a_trainjob(rt: RuntimeBuilder, tj: Json) -> None:
    tj["kind"] = "PyTorchJob"
    tj["apiVersion"] = "kubeflow.org/v1"


def _misspelt_trainjob(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"numNode": 2}


def _misspelt_pod_field(rt: RuntimeBuilder, tj: Json) -> None:
    rt.container("node")["resoures"] = {}


def _waves(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job("node")["template"]["metadata"]["labels"].pop(
        "trainer.kubeflow.org/trainjob-ancestor-step"
    )
    rt.job_spec("node").update(parallelism=1, completions=4)


def _no_containers(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job_spec("node")["template"]["spec"]["containers"] = []


def _pod_failure_policy_on_failure(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job_spec("node")["podFailurePolicy"] = {
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1]}}]
    }


def _exit_code_container(rt: RuntimeBuilder, tj: Json) -> None:
    rt.job_spec("node")["template"]["spec"]["restartPolicy"] = "Never"
    rt.job_spec("node")["podFailurePolicy"] = {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [1]},
            }
        ]
    }


def _torchtune(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["trainer"] = {"command": ["tune", "run"]}


def _patch_unknown_job(rt: RuntimeBuilder, tj: Json) -> None:
    tj["spec"]["runtimePatches"] = [
        {
            "manager": "example.com/x",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "nope"}]}}},
        }
    ]


CASES: list[tuple[str, Callable[[RuntimeBuilder, Json], None], list[str]]] = [
    (
        "unknown-runtime",
        _unknown_runtime,
        ["TJ: spec.runtimeRef: no TrainingRuntime named 'missing' in RT"],
    ),
    (
        "dependsOn-unknown",
        _unknown_dep,
        [f"RT: {RJ}[0].dependsOn[0].name: names unknown replicatedJob 'tokenizer'"],
    ),
    (
        "dependsOn-later",
        _later_dep,
        [
            f"RT: {RJ}[0].dependsOn[0].name: names 'exporter', which is listed after 'node'; a replicatedJob may only depend on jobs listed before it"
        ],
    ),
    (
        "dependsOn-cycle",
        _cycle,
        [f"RT: {RJ}[0].dependsOn: forms a cycle: node -> exporter -> node"],
    ),
    (
        "initializer-without-job",
        _init_without_job,
        [
            "TJ: spec.runtimeRef: must have dataset-initializer job when trainJob is configured with spec.initializer.dataset"
        ],
    ),
    (
        "initializer-without-mount",
        _init_without_mount,
        [
            "TJ: spec.runtimeRef: must have volumeMount with name - initializer in container model-initializer of the model-initializer job (spec.initializer.model is set)"
        ],
    ),
    ("numNodes-zero", _num_nodes, ["TJ: spec.trainer.numNodes: must be at least 1, got 0"]),
    (
        "trainer-image-empty",
        _empty_image,
        ["TJ: spec.trainer.image: Required value"],
    ),
    (
        "numNodes-enormous",
        _num_nodes_enormous,
        [
            "TJ: spec.trainer.numNodes: gives 1000000 pods (1000000 in job 'node'); a TrainJob may"
            " run at most 2000, all held in one Argo Workflow object"
        ],
    ),
    (
        "storageUri",
        _storage_uri,
        [
            "TJ: spec.initializer.dataset.storageUri: 'just-a-path' must be a URI of the form scheme://path (e.g. hf://org/name)"
        ],
    ),
    (
        "quantity",
        _quantity,
        ["TJ: spec.trainer.resourcesPerNode.limits.nvidia.com/gpu: '8 GPUs' is not a quantity"],
    ),
    (
        "name-too-long",
        _long_name,
        [
            f"TJ: metadata.name: '{'a' * 58}' gives pod hostname '{'a' * 58}-node-0-0' (67 characters); a hostname may have at most 63: shorten the TrainJob name"
        ],
    ),
    (
        "untranslatable-job-field",
        _job_field,
        [
            f"RT: {RJ}[0].template.spec.maxFailedIndexes: is not supported: Argo has no cross-pod failed-index budget"
        ],
    ),
    (
        "step-without-queue",
        _no_queue,
        [
            f"RT: {RJ}[0].template.metadata.labels: step 'node' has no queue: set label kueue.x-k8s.io/queue-name there or on the TrainJob, annotation queue.trainweave.io/node on the TrainJob, or a default queue"
        ],
    ),
    (
        "reserved-env",
        _reserved_env,
        [
            "TJ: spec.trainer.env[0].name: PET_MASTER_ADDR is reserved: the runtime's mlPolicy sets it"
        ],
    ),
    (
        "not-a-trainjob",
        _not_a_trainjob,
        [
            "TJ: kind: expected trainer.kubeflow.org/v1alpha1 TrainJob, got kubeflow.org/v1 PyTorchJob"
        ],
    ),
    ("misspelt-trainjob-field", _misspelt_trainjob, ["TJ: spec.trainer.numNode: unknown field"]),
    (
        "misspelt-pod-field",
        _misspelt_pod_field,
        [
            f"RT: {RJ}[0].template.spec.template.spec.containers[0].resoures: unknown field in V1Container"
        ],
    ),
    (
        "pods-in-waves",
        _waves,
        [
            f"RT: {RJ}[0].template.spec.parallelism: must equal completions (4): a step starts all its pods as one gang, so pods cannot run in waves"
        ],
    ),
    (
        "no-containers",
        _no_containers,
        [f"RT: {RJ}[0].template.spec.template.spec.containers: must hold at least one container"],
    ),
    (
        "pod-failure-policy-on-failure",
        _pod_failure_policy_on_failure,
        [
            f"RT: {RJ}[0].template.spec.template.spec.restartPolicy: must be Never with a podFailurePolicy (JobSet defaults it to OnFailure, and the Job API then refuses the Job: upstream's JobSet would never create it)"
        ],
    ),
    (
        "exit-code-other-container",
        _exit_code_container,
        [
            f"RT: {RJ}[0].template.spec.podFailurePolicy.rules[0].onExitCodes.containerName: must name a container or init container of the pod (node)"
        ],
    ),
    (
        "torchtune-command",
        _torchtune,
        [
            "TJ: spec.runtimeRef.name: must have a supported pretrained model, invalid model configured:"
        ],
    ),
    (
        "patch-unknown-job",
        _patch_unknown_job,
        [
            "TJ: spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].name: no replicatedJob 'nope' in the runtime"
        ],
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_exit_2_with_exact_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mutate: Callable[[RuntimeBuilder, Json], None],
    expected: list[str],
) -> None:
    rt = make_runtime()
    tj = make_trainjob()
    mutate(rt, tj)
    tj_file, rt_file = tmp_path / "tj.yaml", tmp_path / "rt.yaml"
    tj_file.write_text(yaml.safe_dump(tj))
    rt_file.write_text(yaml.safe_dump(rt.build()))
    code = main(["render", str(tj_file), "--runtime", str(rt_file)])
    out, err = capsys.readouterr()
    want = [
        f"error: {line.replace('TJ', str(tj_file)).replace('RT', str(rt_file))}"
        for line in expected
    ]
    assert (code, out, err.splitlines()) == (2, "", want)


def test_file_that_is_not_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "tj.yaml"
    bad.write_text("spec: [unclosed\n")
    code = main(["render", str(bad), "--runtime", str(bad)])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {bad}: line 2: invalid YAML:")


def test_good_input_renders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tj_file, rt_file = tmp_path / "tj.yaml", tmp_path / "rt.yaml"
    tj_file.write_text(yaml.safe_dump(make_trainjob()))
    rt_file.write_text(yaml.safe_dump(make_runtime().build()))
    assert main(["render", str(tj_file), "--runtime", str(rt_file)]) == 0
    kinds = [d["kind"] for d in yaml.safe_load_all(capsys.readouterr().out)]
    assert kinds == ["Service", "ConfigMap", "Workflow"]
