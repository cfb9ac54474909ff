"""Golden manifests: each example renders to its committed ``rendered.yaml`` (compared as dicts).

Regenerate with ``TRAINWEAVE_REGENERATE=1 pytest tests/unit/test_examples.py``.
"""

from __future__ import annotations

import os

import pytest
import yaml

from tests.unit.examples import NAMES, example_files, render_example, the_workflow


@pytest.mark.parametrize("name", NAMES)
def test_example_matches_golden(name: str) -> None:
    golden = example_files(name)[2]
    rendered = render_example(name)
    if os.environ.get("TRAINWEAVE_REGENERATE"):
        golden.write_text(yaml.safe_dump_all(rendered, sort_keys=False))
    assert rendered == list(yaml.safe_load_all(golden.read_text()))


@pytest.mark.parametrize("name", NAMES)
def test_the_controller_can_create_every_kind_rendered(name: str) -> None:
    """The executor creates what the render gives: each kind needs its API resource."""
    from trainweave.integrations.views.requests import api

    assert {obj["kind"] for obj in render_example(name)} <= set(api.BY_KIND)


@pytest.mark.parametrize("name", NAMES)
def test_every_step_pod_carries_its_group(name: str) -> None:
    workflow = the_workflow(render_example(name))
    templates = {t["name"]: t for t in workflow["spec"]["templates"]}
    steps = [t for t in workflow["spec"]["templates"] if t["name"].startswith("step-")]
    for step in steps:
        pod_templates = {task["template"] for task in step["dag"]["tasks"]}
        groups = {
            templates[t]["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]
            for t in pod_templates
        }
        counts = {
            templates[t]["metadata"]["annotations"]["kueue.x-k8s.io/pod-group-total-count"]
            for t in pod_templates
        }
        assert len(groups) == 1 and all(len(g) <= 63 for g in groups)
        assert counts == {str(len(step["dag"]["tasks"]))}
    assert "kueue.x-k8s.io/queue-name" not in workflow["metadata"].get("labels", {})
    assert "podMetadata" not in workflow["spec"]
