"""The policy interface around the upstream tables: the frozen context, the Pipeline's typed
part, where SSH keys are decided, and runLauncherAsNode read in one place."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_runtime, make_trainjob
from tests.unit.examples import TEST_KEYS, example_files
from trainweave.adapters import render
from trainweave.adapters.trainjob import policies, trainer
from trainweave.adapters.trainjob.policies import mpi
from trainweave.adapters.trainjob.policies.base import Context
from trainweave.inputs import Runtime, TrainJob, parse_runtime, parse_trainjob
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]


def _mpi_example() -> tuple[TrainJob, Runtime]:
    tj, rt, _ = example_files("mpi")
    return (
        parse_trainjob(yaml.safe_load(Path(tj).read_text())),
        parse_runtime(yaml.safe_load(Path(rt).read_text())),
    )


class Draws:
    """A key source that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> KeyPair:
        self.calls += 1
        return TEST_KEYS


@pytest.mark.parametrize(
    ("ml_policy", "given", "want_calls"),
    [
        pytest.param({"numNodes": 1, "mpi": {}}, None, 1, id="mpi draws a pair"),
        pytest.param({"numNodes": 1, "mpi": {}}, TEST_KEYS, 0, id="mpi with a pair given"),
        pytest.param({"numNodes": 1, "torch": {}}, None, 0, id="torch draws none"),
        pytest.param({}, None, 0, id="no mlPolicy draws none"),
    ],
)
def test_with_ssh_keys_draws_only_for_a_policy_that_builds_a_secret(
    ml_policy: Json, given: KeyPair | None, want_calls: int
) -> None:
    rt = parse_runtime(make_runtime(ml_policy=ml_policy).build())
    draws = Draws()
    options = render.with_ssh_keys(render.Options(ssh_keys=given), rt, draws)
    assert draws.calls == want_calls
    assert (options.ssh_keys is not None) == (want_calls == 1 or given is not None)


def test_the_mpi_part_builds_the_hostfile_and_needs_keys_for_its_secret() -> None:
    tj, rt = _mpi_example()
    pipeline = trainer.to_pipeline(tj, rt)
    assert pipeline.policy == mpi.MpiPart(slots=4, launcher_as_node=True)
    (hostfile,) = pipeline.policy.objects(pipeline)
    assert hostfile["metadata"]["name"] == mpi.hostfile_name(tj.metadata.name)
    with pytest.raises(ValueError, match=r"needs Options\.ssh_keys"):
        render.objects_of(pipeline)
    (secret,) = pipeline.policy.secrets(pipeline, TEST_KEYS)
    assert (secret["kind"], secret["type"], secret["immutable"]) == (
        "Secret",
        "kubernetes.io/ssh-auth",
        True,
    )


def test_a_runtime_without_a_policy_carries_no_part() -> None:
    rt = parse_runtime(make_runtime(ml_policy={"numNodes": 1, "torch": {}}).build())
    pipeline = trainer.to_pipeline(parse_trainjob(make_trainjob()), rt)
    assert pipeline.policy is None
    assert [o["kind"] for o in render.objects_of(pipeline)] == ["Service", "ConfigMap", "Workflow"]


def test_the_context_is_frozen() -> None:
    tj, rt = _mpi_example()
    ctx = Context(tj, rt.spec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.spec = rt.spec  # type: ignore[misc]
    assert ctx.num_nodes == 3 and ctx.name == "deepspeed-t5"  # the TrainJob's numNodes


@pytest.mark.parametrize("as_node", [True, False])
def test_run_launcher_as_node_is_read_in_one_place(as_node: bool) -> None:
    """The node job takes the TrainJob's trainer fields exactly when the launcher runs as a node
    (``mpi.launcher_as_node``), and the Pipeline's part says the same."""
    policy: Json = {"numNodes": 1, "mpi": {"runLauncherAsNode": as_node}}
    rt = parse_runtime(make_runtime(ml_policy=policy).build())
    ctx = Context(parse_trainjob(make_trainjob()), rt.spec)
    impl = policies.REGISTRY.of(rt.spec)
    assert mpi.launcher_as_node(rt.spec) is as_node
    assert impl.takes_trainer(ctx, "node") is as_node
    assert impl.takes_trainer(ctx, "launcher") is False
    part = impl.part(ctx)
    assert isinstance(part, mpi.MpiPart) and part.launcher_as_node is as_node
