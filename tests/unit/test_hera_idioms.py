"""trainweave.workflows takes what Hera's own templates take: Hera's env classes and
``Resources`` (GPUs included), in Hera's shapes, beside models and wire dicts."""

from __future__ import annotations

from typing import Any

import pytest
from hera.workflows import (
    ConfigMapEnv,
    Env,
    FieldEnv,
    Parameter,
    ResourceEnv,
    Resources,
    SecretEnv,
)
from hera.workflows import models as m

from trainweave.workflows import initializer, post_processor, trainer
from trainweave.workflows.steps import HeraEnv

Json = dict[str, Any]
RANK = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


@pytest.mark.parametrize(
    ("env", "wire"),
    [
        (Env(name="A", value="b"), {"name": "A", "value": "b"}),
        (Env(name="N", value=3), {"name": "N", "value": "3"}),
        (
            SecretEnv(name="T", secret_name="hf", secret_key="token"),
            {"name": "T", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
        ),
        (
            ConfigMapEnv(name="C", config_map_name="cm", config_map_key="k"),
            {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        ),
        (
            FieldEnv(name="R", field_path=RANK),
            {"name": "R", "valueFrom": {"fieldRef": {"fieldPath": RANK}}},
        ),
        (
            ResourceEnv(name="M", resource="limits.memory"),
            {"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory"}}},
        ),
        (m.EnvVar(name="A", value="b"), {"name": "A", "value": "b"}),
        ({"name": "A", "value": "b"}, {"name": "A", "value": "b"}),
    ],
    ids=["env", "env-json", "secret", "configmap", "field", "resource", "model", "dict"],
)
def test_env_takes_heras_env_classes(env: HeraEnv | m.EnvVar | Json, wire: Json) -> None:
    for step in (
        initializer("dataset-initializer", "i", "s3://d", "cpu", env=[env]),
        trainer("node", "i", ["torchrun"], "gpu", env=[env]),
        post_processor("export", "e", ["x"], "cpu", env=[env]),
    ):
        assert wire in step.container["env"]


def test_env_from_input_is_an_error() -> None:
    """The pod template has no input to read the value from."""
    env = Env(name="LR", value_from_input=Parameter(name="lr"))
    with pytest.raises(ValueError, match="value_from_input needs a template input"):
        post_processor("export", "e", ["x"], "cpu", env=[env])


def test_heras_resources_gpus_equal_gpus_per_node() -> None:
    """``Resources(gpus=8)`` (Hera's shape) gives the same pod as ``gpus_per_node=8``."""
    hera = trainer("node", "i", ["t"], "gpu", nodes=2, resources=Resources(cpu_request=32, gpus=8))
    ours = trainer(
        "node", "i", ["t"], "gpu", nodes=2, gpus_per_node=8, resources=Resources(cpu_request=32)
    )
    assert hera.container == ours.container
    assert hera.templates("wf") == ours.templates("wf")
