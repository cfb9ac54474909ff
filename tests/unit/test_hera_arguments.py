"""Hera builder arguments that used to give a wrong Workflow silently, or Hera's own exception
(issue 38): each is a StepError naming the builder and the argument."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hera.workflows import DAG, Resources, Steps, Workflow

from trainweave.workflows import GangStep, initializer, post_processor, trainer
from trainweave.workflows.checks import StepError


def node(command: Any = ("torchrun",), **kwargs: Any) -> GangStep:
    return trainer("node", "trainer:1", command, "gpu", **kwargs)


def _refusal(build: Callable[[], object]) -> list[str]:
    with pytest.raises(StepError) as raised:
        build()
    return [str(e) for e in raised.value.errors]


@pytest.mark.parametrize(
    ("build", "errors"),
    [
        pytest.param(
            lambda: node(command="torchrun /workspace/train.py"),
            [
                "trainer('node'): command: is the string 'torchrun /workspace/train.py': it must"
                " be a list of strings, one argument each (as a string it would be 28"
                " one-character arguments), e.g. ['torchrun', '/workspace/train.py']"
            ],
            id="trainer-command-string",
        ),
        pytest.param(
            lambda: post_processor("export", "e:1", ["x"], "cpu", args="--push hf://a"),
            [
                "post_processor('export'): args: is the string '--push hf://a': it must be a"
                " list of strings, one argument each (as a string it would be 13 one-character"
                " arguments), e.g. ['--push', 'hf://a']"
            ],
            id="post-processor-args-string",
        ),
        pytest.param(
            lambda: initializer("dataset-initializer", "i:1", "hf://a/b", "cpu", command="dl"),
            [
                "initializer('dataset-initializer'): command: is the string 'dl': it must be a"
                " list of strings, one argument each (as a string it would be 2 one-character"
                " arguments), e.g. ['dl']"
            ],
            id="initializer-command-string",
        ),
        pytest.param(
            lambda: node(gpus_per_node=8, resources=Resources(gpus=4)),
            [
                "trainer('node'): gpus_per_node: 8 conflicts with resources' requests"
                " nvidia.com/gpu: '4'; give the GPUs once (gpus_per_node, or resources)",
                "trainer('node'): gpus_per_node: 8 conflicts with resources' limits"
                " nvidia.com/gpu: '4'; give the GPUs once (gpus_per_node, or resources)",
            ],
            id="gpus-twice-differently",  # gave 8 silently
        ),
    ],
)
def test_refused_naming_the_argument(build: Callable[[], object], errors: list[str]) -> None:
    assert _refusal(build) == errors


def test_gpus_given_twice_alike_are_accepted() -> None:
    step = node(gpus_per_node=4, resources=Resources(gpus=4))
    assert step.container["resources"] == {
        "limits": {"nvidia.com/gpu": "4"},
        "requests": {"nvidia.com/gpu": "4"},
    }


def test_a_repeated_with_items_value_is_refused() -> None:
    """Two items of one value would be one pod group run twice at once (docs/hera.md)."""
    step = node()

    def build() -> None:
        with Workflow(name="w"), DAG(name="main"):
            step(with_items=["1e-4", "3e-4", "1e-4"])

    assert _refusal(build) == [
        "node(name='node'): with_items: '1e-4' is given more than once: each item is its own pod"
        " group of step 'node' (instance), once per Workflow"
    ]


def test_distinct_with_items_values_are_accepted() -> None:
    step = node()
    with Workflow(name="w") as wf, DAG(name="main"):
        step(with_items=["1e-4", "3e-4"])
    assert "step-node" in {t.name for t in wf.templates}


def test_a_step_inside_steps_is_refused_naming_it() -> None:
    """Hera raised its own InvalidType: a trainweave step is a DAG task."""
    step = node()

    def build() -> None:
        with Workflow(name="w", entrypoint="main"), Steps(name="main"):
            step()

    assert _refusal(build) == [
        "node(name='node'): name: is called inside Steps(): a trainweave step is a DAG task; call"
        " it inside `with DAG(name=...)` (a Steps template may call that DAG's template)"
    ]
