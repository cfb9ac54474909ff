"""Kubeflow Trainer v2.3.0's torch, MPI and PlainML plugin tables, ported to trainweave.

The rest of ``test_policies_upstream`` (same conventions: pytest ids are upstream's case names,
upstream's ``runtime.Info`` becomes a runtime document whose trainer PodSet count is
``mlPolicy.numNodes``, the trainer PodSet ``Count`` after EnforceMLPolicy is
``Context.num_nodes``). A PodSet here is one replicatedJob; its ``Count`` is what the policy's
``enforce`` returns for it, else ``Context.num_nodes`` for the trainer ancestor, else the
runtime's (as ``adapters.trainjob.trainer`` takes it). Ported from
``github.com/kubeflow/trainer/v2@v2.3.0/pkg/runtime/framework/plugins``:

- ``torch/torch_test.go``: TestTorchEnforceMLPolicy (25 cases), TestTorchValidate
  "envInjection target container does not exist", "no action when info does not have
  numProcPerNode", "no action when info has MLPolicySource but no Torch policy";
- ``mpi/mpi_test.go``: TestMPI (EnforceMLPolicy, and Build's hostfile from the endpoints the case
  gives; 6 cases), TestValidate (9 cases);
- ``plainml/plainml_test.go``: TestPlainML (5 cases).

Where a case differs:

- TestTorchEnforceMLPolicy "envInjection target container does not exist" / "... target job does
  not exist": upstream's EnforceMLPolicy returns the error after setting the node container;
  trainweave reports the same message from ``validate`` (on ``spec.runtimeRef``, as upstream's
  Validate does), which ``adapters.trainjob.trainer`` runs before any ``enforce``; ``enforce`` skips the
  missing target. Both halves are asserted.
- The torchtune cases ("multi-devices ...", "single-device ...", "multi-nodes full fine-tuning
  with torchtune", "envInjection with torchtune command"): upstream's table asserts the env and
  port only; the rewritten command (which torch.go appends to the TrainJob's, not to the Info) is
  asserted too, as torch.go and torchtune.go compute it.
- "envInjection with sidecar (regular container)" and "... multiple targets in different jobs
  ...": the runtime pod has two regular containers; ported on the policy (what
  ``adapters.trainjob.trainer`` then does with a second regular container is not the policy's concern).
- Counts the tables leave as given (the launcher's, and the node's without TrainJob
  ``numNodes``) are pinned with other values by ``test_mpi_keeps_runtime_counts``, from
  mpi.go and trainingruntime.go (not an upstream table).
- TestMPI: upstream's PodSets there have no containers, so only volumes and counts change; a
  replicatedJob here has no containers either (``containers: []``).
  "runLauncherAsNode is true" lists one node endpoint although the node count becomes 9 (its
  endpoints are inputs); the hostfile is asserted from the endpoints the case gives.
- TestValidate "reserved MPI env" cases: upstream reports one ``spec.trainer.env`` error naming
  every reserved variable; trainweave reports one per entry (``spec.trainer.env[i].name``), as
  for torch and xgboost.
- "multi-node multi-GPU training with complete info": its extra ``runtime.Info`` labels
  (``app``, ``env``) have no counterpart and are not asserted.
- TestPlainML: PlainML's trainer env and pod count are applied by ``adapters.trainjob.trainer`` (Plain's
  ``enforce`` does nothing), so its two TrainJob cases run ``to_pipeline``.

Not ported:

- "no action when info is nil" (torch, MPI TestMPI and TestValidate "no action when info is nil
  ", PlainML "no action when info is null"), "no action when mlPolicySource is nil", "no action
  when mlPolicySource torch is null" / "... mpi is null", TestTorchValidate "no action when info
  is nil", "no action when info does not have MLPolicySource", MPI TestValidate "no action when
  info does not have MLPolicySource": Go guards on a nil or policy-less runtime.Info; trainweave
  always has a runtime and ``policies.of(spec)`` never hands a runtime to a policy it does not
  name.
- TestMPI "sshAuth secret already has existed in the cluster" / "failed to get sshAuth secret
  due to API error": their EnforceMLPolicy half (launcher volumes) and hostfile are ported; the
  Build half (skip an existing Secret, report a failed GET) reads the cluster, which trainweave's
  pure policies do not: the Secret's keys are drawn at the edge (``trainweave.sshkeys``).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import RuntimeBuilder, make_runtime, make_trainjob
from tests.unit.policies_upstream import CTR, Err, check_errors, context
from trainweave.adapters.trainjob import policies, validate
from trainweave.adapters.trainjob.policies import mpi as mpi_policy
from trainweave.adapters.trainjob.policies.jax import Jax
from trainweave.adapters.trainjob.policies.mpi import MPI
from trainweave.adapters.trainjob.policies.plain import Plain
from trainweave.adapters.trainjob.policies.torch import Torch
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import TRAINJOB_ANCESTOR, Ancestor

Json = dict[str, Any]
COMPLETION_INDEX = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}
PORTS = [{"containerPort": 29500}]
TRAINER = Ancestor.TRAINER.value


# --- helpers -------------------------------------------------------------------------------


def _job(
    name: str,
    ancestor: str | None,
    containers: list[str],
    init: list[str] | None = None,
    command: list[str] | None = None,
) -> Json:
    """A replicatedJob: ``runtime.WithPodSet(name, ancestor, ...)`` with these container names."""
    pod: Json = {"containers": [{"name": c, "image": f"{c}:1"} for c in containers]}
    if init:
        pod["initContainers"] = [{"name": c, "image": f"{c}:1"} for c in init]
    if command is not None:
        pod["containers"][-1]["command"] = command
    labels = {TRAINJOB_ANCESTOR: ancestor} if ancestor else {}
    return {
        "name": name,
        "template": {"metadata": {"labels": labels}, "spec": {"template": {"spec": pod}}},
    }


def _runtime(
    ml_policy: Json, *jobs: Json, name: str = "rt", kind: str = "TrainingRuntime"
) -> RuntimeBuilder:
    return make_runtime(ml_policy=ml_policy, jobs=list(jobs), name=name, kind=kind)


class Enforced:
    """Each replicatedJob's pod spec and pod count after the policy's ``enforce``."""

    def __init__(self, tj: Json, rt: RuntimeBuilder) -> None:
        self.ctx = context(tj, rt)
        self.policy = policies.of(self.ctx.spec)
        self.pods: dict[str, Json] = {}
        self.counts: dict[str, int] = {}
        for job in rt.jobs:
            ancestor_label = job["template"]["metadata"]["labels"].get(TRAINJOB_ANCESTOR)
            ancestor = Ancestor(ancestor_label) if ancestor_label else None
            pod: Json = copy.deepcopy(job["template"]["spec"]["template"]["spec"])
            count = self.policy.enforce(self.ctx, job["name"], ancestor, pod)
            if count is None:
                count = self.ctx.num_nodes if ancestor is Ancestor.TRAINER else 1
            self.pods[job["name"]] = pod
            self.counts[job["name"]] = count

    def container(self, job: str, name: str) -> Json:
        found = validate.container(self.pods[job], name, init=True)
        assert found is not None
        return found


def _pet(nodes: int, nproc: str, master: str | None) -> list[Json]:
    """PET_* env as torch.go writes it; PET_MASTER_* for TrainJob ``master`` unless None."""
    env: list[Json] = [
        {"name": "PET_NNODES", "value": str(nodes)},
        {"name": "PET_NPROC_PER_NODE", "value": nproc},
        {"name": "PET_NODE_RANK", "valueFrom": COMPLETION_INDEX},
    ]
    if master is not None:
        env += [
            {"name": "PET_MASTER_ADDR", "value": f"{master}-node-0-0.{master}"},
            {"name": "PET_MASTER_PORT", "value": "29500"},
        ]
    return env


# --- torch_test.go: TestTorchEnforceMLPolicy (trainer node only) ----------------------------

TORCH: Json = {"torch": {}}
TUNE_IMAGE = "ghcr.io/kubeflow/trainer/torchtune-trainer"
TUNE_ARGS = ["dtype=fp16", "batch_size=32", "epochs=10", "loss=torchtune.modules.loss.CEWithChunkedOutputLoss"]  # fmt: skip


def _requests(requests: Json, image: str = "test:image", **more: Any) -> Json:
    """MakeTrainJobTrainerWrapper().Container(image, nil, nil, requests)."""
    return {"image": image, "resourcesPerNode": {"requests": requests}, **more}


def _tune(requests: Json, **more: Any) -> Json:
    """MakeTrainJobTrainerWrapper().Container(torchtune image, [tune run], TUNE_ARGS, requests)."""
    return _requests(requests, TUNE_IMAGE, command=["tune", "run"], args=TUNE_ARGS, **more)


def _rdzv(tj: str) -> str:
    return f"--rdzv_endpoint={tj}-node-0-0.{tj}:29500"


GPU16 = {"cpu": "8", "memory": "16Gi"}


@pytest.mark.parametrize(
    ("name", "runtime_ref", "pod_set_count", "trainer", "want_count", "want_env", "want_command"),
    [
        pytest.param(
            "trainJob", "rt", 1, {"numNodes": 2}, 2, _pet(2, "1", "trainJob"), None,
            id="trainJob numNodes is respected rather than mlPolicy one",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "4"}), 1, _pet(1, "4", "test-job"), None,
            id="nproc_per_node=auto with CPU limit",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({}), 1, _pet(1, "1", "test-job"), None,
            id="nproc_per_node=auto with no CPU resources",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "2"}), 1, _pet(1, "2", "test-job"), None,
            id="nproc_per_node=auto with low CPU limit",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "3"}), 1, _pet(1, "3", "test-job"), None,
            id="nproc_per_node=auto with CPU request but no limit",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "2.5"}), 1, _pet(1, "3", "test-job"), None,
            id="nproc_per_node=auto with millicore CPU limit",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "0.7"}), 1, _pet(1, "1", "test-job"), None,
            id="nproc_per_node=auto with fractional CPU limit",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"example.com/gpu": "2"}),
            1, _pet(1, "auto", "test-job"), None,
            id="nproc_per_node=auto with GPU request should remain auto",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "8"}, numProcPerNode=3),
            1, _pet(1, "3", "test-job"), None,
            id="explicitly set nproc_per_node should be preserved",
        ),
        pytest.param(
            "test-job", "rt", 1, _requests({"cpu": "2500m"}), 1, _pet(1, "3", "test-job"), None,
            id="nproc_per_node=auto with millicore CPU limit in m format",
        ),
        pytest.param(
            "cpu-job", "rt", 1, _requests({"cpu": "4"}), 1, _pet(1, "4", "cpu-job"), None,
            id="nproc_per_node=cpu with CPU limit",
        ),
        pytest.param(
            "cpu-gpu-job", "rt", 1, _requests({"cpu": "6", "example.com/gpu": "2"}),
            1, _pet(1, "auto", "cpu-gpu-job"), None,
            id="nproc_per_node=auto resolves to GPU count when GPU resources present",
        ),
        pytest.param(
            "cpu-frac-job", "rt", 1, _requests({"cpu": "3.7"}), 1, _pet(1, "4", "cpu-frac-job"),
            None,
            id="nproc_per_node=cpu with fractional CPU",
        ),
        pytest.param(
            "gpu-job", "rt", 2,
            _requests(
                {**GPU16, "example.com/gpu": "4"},
                "pytorch/pytorch:2.0.0-cuda11.7-cudnn8-runtime",
                numNodes=4,
            ),
            4, _pet(4, "auto", "gpu-job"), None,
            id="multi-node multi-GPU training with complete info",
        ),
        pytest.param(
            "torchtune-job", "torchtune-llama3.2-1b", 1,
            _tune({**GPU16, "example.com/gpu": "4"}, numNodes=1),
            1, _pet(1, "auto", None),
            ["tune", "run", _rdzv("torchtune-job"), "full_finetune_distributed", "--config",
             "llama3_2/1B_full"],
            id="multi-devices full fine-tuning with torchtune",
        ),
        pytest.param(
            "torchtune-job", "torchtune-llama3.2-1b", 1,
            _tune({**GPU16, "example.com/gpu": "1"}, numNodes=1, numProcPerNode=1),
            1, _pet(1, "1", None),
            ["tune", "run", "full_finetune_single_device", "--config",
             "llama3_2/1B_full_single_device"],
            id="single-device full fine-tuning with torchtune",
        ),
        pytest.param(
            "torchtune-job", "torchtune-llama3.3-70b", 2,
            _tune({**GPU16, "example.com/gpu": "8"}, numNodes=2, numProcPerNode=8),
            2, _pet(2, "8", None),
            ["tune", "run", _rdzv("torchtune-job"), "full_finetune_distributed", "--config",
             "llama3_3/70B_full_multinode"],
            id="multi-nodes full fine-tuning with torchtune",
        ),
    ],
)  # fmt: skip
def test_torch_enforce_ml_policy(
    name: str,
    runtime_ref: str,
    pod_set_count: int,
    trainer: Json,
    want_count: int,
    want_env: list[Json],
    want_command: list[str] | None,
) -> None:
    """``want_command`` None: the node has no command (not torchtune, so not rewritten; a
    torchtune TrainJob always gets torchtune's command)."""
    kind = CTR if runtime_ref != "rt" else "TrainingRuntime"
    rt = _runtime(
        {"numNodes": pod_set_count, **TORCH}, _job("node", TRAINER, ["node"]),
        name=runtime_ref, kind=kind,
    )  # fmt: skip
    tj = make_trainjob(name=name, runtime=runtime_ref, kind=kind, trainer=trainer)
    got = Enforced(tj, rt)
    node = got.container("node", "node")
    assert got.counts == {"node": want_count}
    assert node["env"] == want_env
    assert node["ports"] == PORTS
    assert node.get("command") == want_command


# --- torch_test.go: TestTorchEnforceMLPolicy (envInjection) ---------------------------------


def _inject(*targets: tuple[str, list[str]]) -> Json:
    """mlPolicy.torch with envInjection targets (jobName, containerNames)."""
    return {
        "torch": {
            "envInjection": {
                "targets": [{"jobName": j, "containerNames": list(cs)} for j, cs in targets]
            }
        }
    }


def test_env_injection_with_init_container() -> None:
    """envInjection with init container."""
    rt = _runtime(
        {"numNodes": 2, **_inject(("node", ["preflight-check"]))},
        _job("node", TRAINER, ["node"], init=["preflight-check"]),
    )
    got = Enforced(make_trainjob(name="test-job", trainer={"numNodes": 2}), rt)
    assert got.counts == {"node": 2}
    assert got.container("node", "preflight-check")["env"] == _pet(2, "1", "test-job")
    assert "ports" not in got.container("node", "preflight-check")
    assert got.container("node", "node")["env"] == _pet(2, "1", "test-job")
    assert got.container("node", "node")["ports"] == PORTS
    assert policies.of(got.ctx.spec).validate(got.ctx) == []


@pytest.mark.parametrize(
    ("target", "init", "want_init_env", "want"),
    [
        pytest.param(
            ("node", ["non-existent-container"]),
            ["preflight-check"],
            {"preflight-check": None},
            [
                Err(
                    "spec.runtimeRef",
                    'envInjection target podSet "node" container "non-existent-container" not'
                    " found in runtime template",
                )
            ],
            id="envInjection target container does not exist",
        ),
        pytest.param(
            ("missing-job", ["preflight-check"]),
            [],
            {},
            [
                Err(
                    "spec.runtimeRef",
                    'envInjection target podSet "missing-job" container "preflight-check" not'
                    " found in runtime template",
                )
            ],
            id="envInjection target job does not exist",
        ),
    ],
)
def test_env_injection_missing_target(
    target: tuple[str, list[str]], init: list[str], want_init_env: Json, want: list[Err]
) -> None:
    """Upstream's EnforceMLPolicy error is trainweave's validate error (same message); enforce
    skips the missing target (``want_init_env``: the node job's init containers' env, None for
    none)."""
    rt = _runtime({"numNodes": 1, **_inject(target)}, _job("node", TRAINER, ["node"], init=init))
    got = Enforced(make_trainjob(name="test-job", trainer={}), rt)
    assert got.counts == {"node": 1}
    assert got.container("node", "node")["env"] == _pet(1, "1", "test-job")
    assert got.container("node", "node")["ports"] == PORTS
    init_env = {c["name"]: c.get("env") for c in got.pods["node"].get("initContainers", [])}
    assert init_env == want_init_env
    check_errors(got.policy.validate(got.ctx), want)


def test_env_injection_with_torchtune_command() -> None:
    """envInjection with torchtune command: the target gets PET_MASTER_*, the node does not."""
    rt = _runtime(
        {"numNodes": 2, **_inject(("node", ["preflight-check"]))},
        _job("node", TRAINER, ["node"], init=["preflight-check"]),
        name="torchtune-llama3.2-1b",
        kind=CTR,
    )
    trainer = _requests(
        {"cpu": "8", "example.com/gpu": "4"},
        TUNE_IMAGE,
        command=["tune", "run"],
        args=["dtype=fp16"],
        numNodes=2,
    )
    tj = make_trainjob(name="test-job", runtime="torchtune-llama3.2-1b", kind=CTR, trainer=trainer)
    got = Enforced(tj, rt)
    assert got.counts == {"node": 2}
    assert got.container("node", "preflight-check")["env"] == _pet(2, "auto", "test-job")
    node = got.container("node", "node")
    assert node["env"] == _pet(2, "auto", None)
    assert node["ports"] == PORTS
    assert node["command"] == [
        "tune",
        "run",
        _rdzv("test-job"),
        "full_finetune_distributed",
        "--config",
        "llama3_2/1B_full_multinode",
    ]


def test_env_injection_with_multiple_containers_in_same_target() -> None:
    """envInjection with multiple containers in same target."""
    rt = _runtime(
        {"numNodes": 2, **_inject(("node", ["nccl-check", "driver-check"]))},
        _job("node", TRAINER, ["node"], init=["nccl-check", "driver-check"]),
    )
    got = Enforced(make_trainjob(name="test-job", trainer={"numNodes": 2}), rt)
    assert got.counts == {"node": 2}
    want = _pet(2, "1", "test-job")
    assert [c["env"] for c in got.pods["node"]["initContainers"]] == [want, want]
    assert [c["name"] for c in got.pods["node"]["initContainers"]] == [
        "nccl-check",
        "driver-check",
    ]
    assert got.container("node", "node")["env"] == want
    assert got.container("node", "node")["ports"] == PORTS


def test_env_injection_with_sidecar_regular_container() -> None:
    """envInjection with sidecar (regular container): the sidecar gets env, not the port."""
    rt = _runtime(
        {"numNodes": 1, **_inject(("node", ["sidecar"]))},
        _job("node", TRAINER, ["sidecar", "node"]),
    )
    got = Enforced(make_trainjob(name="test-job", trainer={}), rt)
    assert got.counts == {"node": 1}
    sidecar, node = got.pods["node"]["containers"]
    assert sidecar == {"name": "sidecar", "image": "sidecar:1", "env": _pet(1, "1", "test-job")}
    assert node["env"] == _pet(1, "1", "test-job")
    assert node["ports"] == PORTS


def test_env_injection_with_empty_targets() -> None:
    """envInjection with empty targets (no additional injection)."""
    rt = _runtime(
        {"numNodes": 1, **_inject()}, _job("node", TRAINER, ["node"], init=["preflight-check"])
    )
    got = Enforced(make_trainjob(name="test-job", trainer={}), rt)
    assert got.counts == {"node": 1}
    assert got.pods["node"]["initContainers"] == [
        {"name": "preflight-check", "image": "preflight-check:1"}
    ]
    assert got.container("node", "node")["env"] == _pet(1, "1", "test-job")
    assert got.container("node", "node")["ports"] == PORTS


def test_env_injection_multiple_targets_in_different_jobs() -> None:
    """envInjection with multiple targets in different jobs leaves unlisted init container
    unchanged."""
    rt = _runtime(
        {"numNodes": 2, **_inject(("node", ["sidecar"]), ("worker", ["worker-check"]))},
        _job("node", TRAINER, ["sidecar", "node"], init=["preflight-check"]),
        _job("worker", None, ["worker"], init=["worker-check"]),
    )
    got = Enforced(make_trainjob(name="test-job", trainer={"numNodes": 2}), rt)
    want = _pet(2, "1", "test-job")
    assert got.counts == {"node": 2, "worker": 1}
    assert got.pods["node"]["initContainers"] == [
        {"name": "preflight-check", "image": "preflight-check:1"}
    ]
    sidecar, node = got.pods["node"]["containers"]
    assert (sidecar["env"], "ports" in sidecar) == (want, False)
    assert (node["env"], node["ports"]) == (want, PORTS)
    assert got.pods["worker"]["initContainers"][0]["env"] == want
    assert got.pods["worker"]["containers"] == [{"name": "worker", "image": "worker:1"}]


# --- torch_test.go: TestTorchValidate (remaining cases) --------------------------------------


def test_torch_validate_env_injection_target_container_does_not_exist() -> None:
    """TestTorchValidate "envInjection target container does not exist"."""
    rt = _runtime(
        {"numNodes": 1, **_inject(("node", ["missing-container"]))},
        _job("node", TRAINER, ["node"]),
    )
    ctx = context(make_trainjob(name="test"), rt)
    check_errors(
        policies.of(ctx.spec).validate(ctx),
        [
            Err(
                "spec.runtimeRef",
                'envInjection target podSet "node" container "missing-container" not found in'
                " runtime template",
            )
        ],
    )


@pytest.mark.parametrize(
    ("ml_policy", "trainer", "want_policy"),
    [
        pytest.param(
            {"numNodes": 1}, None, Plain,
            id="no action when info has MLPolicySource but no Torch policy",
        ),
        pytest.param(
            {"numNodes": 1, **TORCH}, {}, Torch,
            id="no action when info does not have numProcPerNode",
        ),
    ],
)  # fmt: skip
def test_torch_validate_no_action(ml_policy: Json, trainer: Json | None, want_policy: type) -> None:
    spec: Json = {"trainer": trainer} if trainer is not None else {}
    ctx = context(make_trainjob(name="test", **spec), make_runtime(ml_policy=ml_policy))
    policy = policies.of(ctx.spec)
    assert type(policy) is want_policy
    assert policy.validate(ctx) == []


# --- mpi_test.go: TestMPI ------------------------------------------------------------------


def _mpi(nproc: int, run_launcher_as_node: bool | None = None) -> Json:
    """MPIPolicy(nproc, OpenMPI, "/root/.ssh", runLauncherAsNode)."""
    mpi: Json = {"numProcPerNode": nproc, "mpiImplementation": "OpenMPI"}
    mpi["sshAuthMountPath"] = "/root/.ssh"
    if run_launcher_as_node is not None:
        mpi["runLauncherAsNode"] = run_launcher_as_node
    return {"mpi": mpi}


SSH_VOLUME = {
    "name": "mpi-ssh-auth",
    "secret": {
        "secretName": "trainJob-mpi-ssh-auth",
        "defaultMode": 0o400,
        "items": [
            {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
            {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
            {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
        ],
    },
}
HOSTFILE_VOLUME = {
    "name": "mpi-hostfile",
    "configMap": {
        "name": "trainJob-mpi-hostfile",
        "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
    },
}
LAUNCHER_EP = "trainJob-launcher-0-0.trainJob"


@pytest.mark.parametrize(
    ("policy", "trainer", "want_counts", "want_slots", "endpoints", "want_hostfile"),
    [
        pytest.param(
            _mpi(1), {"numNodes": 2}, {"launcher": 1, "node": 2}, 1,
            ["trainJob-node-1-0.trainJob", "trainJob-node-1-1.trainJob"],
            "trainJob-node-1-0.trainJob slots=1\ntrainJob-node-1-1.trainJob slots=1\n",
            id="trainJob numNodes is respected rather than mlPolicy one",
        ),
        pytest.param(
            _mpi(1), {"numNodes": 1, "numProcPerNode": 2}, {"launcher": 1, "node": 1}, 2,
            ["trainJob-node-1-0.trainJob"], "trainJob-node-1-0.trainJob slots=2\n",
            id="trainJob numProcPerNode is respected rather than mlPolicy one",
        ),
        pytest.param(
            _mpi(1),
            {
                "numNodes": 1,
                "image": "test:trainjob",
                "command": ["trainjob"],
                "args": ["trainjob"],
                "resourcesPerNode": {"requests": {"custom.com/gpu": "5"}},
            },
            {"launcher": 1, "node": 1}, 5,
            ["trainJob-node-1-0.trainJob"], "trainJob-node-1-0.trainJob slots=5\n",
            id="numProcPerNode is set to number of GPUs in TrainJob",
        ),
    ],
)  # fmt: skip
def test_mpi_enforce_without_containers(
    policy: Json,
    trainer: Json,
    want_counts: dict[str, int],
    want_slots: int,
    endpoints: list[str],
    want_hostfile: str,
) -> None:
    """The cases whose launcher and node PodSets have no containers: volumes and counts only."""
    rt = _runtime({"numNodes": 1, **policy}, _job("launcher", None, []), _job("node", TRAINER, []))
    got = Enforced(make_trainjob(name="trainJob", trainer=trainer), rt)
    assert got.counts == want_counts
    assert got.pods == {
        "launcher": {"containers": [], "volumes": [SSH_VOLUME, HOSTFILE_VOLUME]},
        "node": {"containers": [], "volumes": [SSH_VOLUME]},
    }
    part = MPI().part(got.ctx)
    assert part is not None and part.slots == want_slots
    assert mpi_policy.hostfile(endpoints, part.slots) == want_hostfile


def test_mpi_run_launcher_as_node() -> None:
    """runLauncherAsNode is true: 10 nodes are the launcher and 9 node pods."""
    rt = _runtime(
        {"numNodes": 1, **_mpi(1, run_launcher_as_node=True)},
        _job("launcher", None, ["node"]),
        _job("node", TRAINER, ["node"]),
    )
    got = Enforced(make_trainjob(name="trainJob", trainer={"numNodes": 10}), rt)
    assert got.counts == {"launcher": 1, "node": 9}
    launcher, node = got.pods["launcher"], got.pods["node"]
    assert launcher["volumes"] == [SSH_VOLUME, HOSTFILE_VOLUME]
    assert launcher["containers"][0]["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    assert launcher["containers"][0]["env"] == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]
    assert node["volumes"] == [SSH_VOLUME]
    assert node["containers"] == [
        {
            "name": "node",
            "image": "node:1",
            "volumeMounts": [{"name": "mpi-ssh-auth", "mountPath": "/root/.ssh"}],
        }
    ]
    part = MPI().part(got.ctx)
    assert part is not None and part.launcher_as_node
    hostfile = mpi_policy.hostfile([LAUNCHER_EP, "trainJob-node-1-0.trainJob"], part.slots)
    assert hostfile == f"{LAUNCHER_EP} slots=1\ntrainJob-node-1-0.trainJob slots=1\n"


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(0, id="sshAuth secret already has existed in the cluster"),
        pytest.param(1, id="failed to get sshAuth secret due to API error"),
    ],
)
def test_mpi_launcher_only(case: int) -> None:
    """The EnforceMLPolicy half (and the hostfile) of the two Secret cases; no trainer."""
    rt = _runtime({"numNodes": 1, **_mpi(1, run_launcher_as_node=True)}, _job("launcher", None, []))
    got = Enforced(make_trainjob(name="trainJob"), rt)
    assert got.counts == {"launcher": 1}
    assert got.pods == {"launcher": {"containers": [], "volumes": [SSH_VOLUME, HOSTFILE_VOLUME]}}
    part = MPI().part(got.ctx)
    assert part is not None
    assert mpi_policy.hostfile([LAUNCHER_EP], part.slots) == f"{LAUNCHER_EP} slots=1\n"


def _parallel(job: Json, n: int) -> Json:
    job["template"]["spec"].update({"parallelism": n, "completions": n})
    return job


@pytest.mark.parametrize(
    ("ancestors", "num_nodes", "as_node", "trainer", "want"),
    [
        pytest.param(
            (None, TRAINER), 1, False, {"numNodes": 2}, {"launcher": 2, "node": 2},
            id="launcher of parallelism 2 keeps 2 pods",
        ),
        pytest.param(
            (TRAINER, None), 3, True, {"numNodes": 2}, {"launcher": 3, "node": 1},
            id="trainer-ancestor launcher keeps mlPolicy numNodes",
        ),
        pytest.param(
            (None, TRAINER), 3, True, {}, {"launcher": 2, "node": 3},
            id="node without TrainJob numNodes keeps mlPolicy numNodes",
        ),
        pytest.param(
            (TRAINER, None), 3, True, None, {"launcher": 3, "node": 2},
            id="node without ancestor nor TrainJob numNodes keeps its parallelism",
        ),
    ],
)  # fmt: skip
def test_mpi_keeps_runtime_counts(
    ancestors: tuple[str | None, str | None],
    num_nodes: int,
    as_node: bool,
    trainer: Json | None,
    want: dict[str, int],
) -> None:
    """mpi.go sets only the node's Count, and only from TrainJob numNodes; other Counts stay
    what newRuntimeInfo gives (trainingruntime.go: mlPolicy numNodes under the trainer
    ancestor, else parallelism). Not upstream table cases: the launcher half of "trainJob
    numNodes is respected rather than mlPolicy one" and "sshAuth secret already has existed in
    the cluster" (Count left as given), with Counts other than 1; the oracle's
    deepspeed-distributed cases (trainer-ancestor launcher) pin the second."""
    rt = _runtime(
        {"numNodes": num_nodes, **_mpi(1, as_node)},
        _parallel(_job("launcher", ancestors[0], ["node"]), 2),
        _parallel(_job("node", ancestors[1], ["node"]), 2),
    )
    spec: Json = {"trainer": trainer} if trainer is not None else {}
    assert Enforced(make_trainjob(name="trainJob", **spec), rt).counts == want


# --- mpi_test.go: TestValidate --------------------------------------------------------------

NUM_NODES_MSG = (
    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not have either"
    " launcher and node"
)


@pytest.mark.parametrize(
    ("policy", "jobs", "trainer", "want"),
    [
        pytest.param(
            {"numNodes": 1}, ["node"], None, [], id="info does not have MPIPolicySource",
        ),
        pytest.param(
            _mpi(1), [], {"numProcPerNode": 8}, [], id="numProcPerNode typed is int",
        ),
        pytest.param(
            _mpi(1, True), ["node"], {"numNodes": 1}, [],
            id="runtime does not have Launcher but TrainJob has only 1 numNodes",
        ),
        pytest.param(
            _mpi(1, True), ["node-no-ancestor"], {"numNodes": 2},
            [Err("spec.trainer.numNodes", NUM_NODES_MSG)],
            id="runtime does not have Launcher even though MPI with runLauncherAsNode has 2"
            " numNodes",
        ),
        pytest.param(
            _mpi(1, True), ["launcher"], {"numNodes": 2},
            [Err("spec.trainer.numNodes", NUM_NODES_MSG)],
            id="runtime does not have Node even though MPI with runLauncherAsNode has 2 numNodes",
        ),
        pytest.param(
            _mpi(1, True), [], {"numNodes": 2},
            [Err("spec.trainer.numNodes", NUM_NODES_MSG)],
            id="runtime does not have Launcher and Node even though MPI with runLauncherAsNode"
            " has 2 numNodes",
        ),
        pytest.param(
            _mpi(1), [],
            {"env": [{"name": "OMPI_MCA_orte_default_hostfile", "value": "/custom/hostfile"}]},
            [Err("spec.trainer.env[0]", "OMPI_MCA_orte_default_hostfile", exact=False)],
            id="trainer has reserved MPI env OMPI_MCA_orte_default_hostfile",
        ),
        pytest.param(
            _mpi(1), [],
            {
                "env": [
                    {"name": "OMPI_MCA_orte_default_hostfile", "value": "/custom/hostfile"},
                    {"name": "OMPI_MCA_plm_rsh_args", "value": "custom-args"},
                ]
            },
            [
                Err("spec.trainer.env[0]", "OMPI_MCA_orte_default_hostfile", exact=False),
                Err("spec.trainer.env[1]", "OMPI_MCA_plm_rsh_args", exact=False),
            ],
            id="trainer has multiple reserved MPI envs",
        ),
        pytest.param(
            _mpi(1), [], {"env": [{"name": "CUSTOM_ENV", "value": "custom-value"}]}, [],
            id="trainer has non-reserved env is valid",
        ),
    ],
)  # fmt: skip
def test_mpi_validate(policy: Json, jobs: list[str], trainer: Json | None, want: list[Err]) -> None:
    """``jobs``: the runtime's PodSets (``node`` is the trainer ancestor, ``node-no-ancestor`` is
    a ``node`` job without one, as upstream's ``WithPodSet(constants.Node, nil, ...)``)."""
    built = [
        _job("node", None, ["node"]) if j == "node-no-ancestor"
        else _job(j, TRAINER if j == "node" else None, ["node"])
        for j in jobs
    ]  # fmt: skip
    rt = _runtime({"numNodes": 1, **policy}, *built)
    spec: Json = {"trainer": trainer} if trainer is not None else {}
    ctx = context(make_trainjob(name="test", **spec), rt)
    check_errors(policies.of(ctx.spec).validate(ctx), want)


# --- plainml_test.go: TestPlainML -----------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "want"),
    [
        pytest.param(TORCH, Torch, id="no action when mlPolicySource torch is not null"),
        pytest.param(_mpi(1, False), MPI, id="no action when mlPolicySource mpi is not null"),
        pytest.param({"jax": {}}, Jax, id="no action when mlPolicySource jax is not null"),
    ],
)
def test_plainml_not_chosen_for_torch_mpi_jax(policy: Json, want: type) -> None:
    """PlainML steps aside for torch, MPI and JAX: the runtime's own policy is chosen instead."""
    spec = parse_runtime(make_runtime(ml_policy={"numNodes": 1, **policy}).build()).spec
    assert type(policies.of(spec)) is want


def _plain_pipeline(trainer: Json, runtime_env: list[Json] | None) -> tuple[int, Json]:
    """(trainer pods, node container) of ``to_pipeline`` on a policy-less runtime of 100 nodes."""
    rt = make_runtime(ml_policy={"numNodes": 100})
    if runtime_env is not None:
        rt.container("node")["env"] = runtime_env
    p = to_pipeline(
        parse_trainjob(make_trainjob(name="test", trainer=trainer)), parse_runtime(rt.build())
    )
    (step,) = p.steps
    (job,) = step.jobs
    return job.pods, job.main_container


def test_plainml_trainjob_numnodes_respected() -> None:
    """trainJob trainer numNodes are respected rather than runtimeInfo."""
    rt = make_runtime(ml_policy={"numNodes": 100})
    ctx = context(make_trainjob(name="test", trainer={"numNodes": 200}), rt)
    pod: Json = copy.deepcopy(rt.job_spec("node")["template"]["spec"])
    before = copy.deepcopy(pod)
    assert type(policies.of(ctx.spec)) is Plain
    assert Plain().enforce(ctx, "node", Ancestor.TRAINER, pod) is None
    assert pod == before
    assert ctx.num_nodes == 200
    pods, node = _plain_pipeline({"numNodes": 200}, None)
    assert pods == 200
    assert "env" not in node and "ports" not in node


def test_plainml_trainjob_env_respected() -> None:
    """trainJob trainer env are respected rather than runtimeInfo: one CONFLICT, the TrainJob's."""
    conflict = [{"name": "CONFLICT", "value": "FROM_TRAINER"}]
    pods, node = _plain_pipeline({"numNodes": 1, "env": conflict}, conflict)
    assert pods == 1
    assert node["env"] == conflict
    assert "ports" not in node
