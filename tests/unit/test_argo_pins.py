"""Argo's submit-time validation, asked of the Argo in use (the pin, or ``ARGO_VERSION``): the
rules docs/engines.md's table says trainweave depends on, pinned with the source line of each.

``argo lint --offline`` runs the pinned module's ``workflow/validate`` (the CLI hack/build.sh
builds), the check the workflow-controller applies when it first operates a Workflow.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.versions import ARGO_VERSION
from trainweave.adapters.trainjob.validate import ARGO_RESERVED, argo_reserved

pytestmark = pytest.mark.schema
ROOT = Path(__file__).parents[2]
Json = dict[str, Any]


@pytest.fixture(scope="module")
def argo() -> Path:
    env = {**os.environ, "ARGO_VERSION": ARGO_VERSION}
    folder = subprocess.run(
        ["bash", str(ROOT / "hack/build.sh"), "--print-dir"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    binary = Path(folder) / "bin" / "argo"
    if not binary.exists():  # under a build lock: waits for a build already running
        subprocess.run(["bash", str(ROOT / "hack/build.sh"), "argo-cli"], env=env, check=True)
    return binary


def lint(argo: Path, tmp_path: Path, wf: Json) -> tuple[int, str]:
    path = tmp_path / "wf.yaml"
    path.write_text(yaml.safe_dump(wf))
    done = subprocess.run(
        [str(argo), "lint", "--offline", "--output", "simple", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def container_set(names: list[str], outputs: bool = False) -> Json:
    tpl: Json = {
        "name": "step",
        "containerSet": {
            "containers": [{"name": n, "image": "busybox:1", "command": ["true"]} for n in names]
        },
    }
    if outputs:
        tpl["outputs"] = {"parameters": [{"name": "p", "valueFrom": {"path": "/tmp/p"}}]}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {"generateName": "pin-"},
        "spec": {"entrypoint": "step", "templates": [tpl]},
    }


def v41() -> bool:
    return tuple(int(x) for x in ARGO_VERSION.lstrip("v").split(".")[:2]) >= (4, 1)


def test_a_container_set_with_a_plain_name_lints(argo: Path, tmp_path: Path) -> None:
    code, out = lint(argo, tmp_path, container_set(["node"]))
    assert code == 0, out


@pytest.mark.parametrize("name", ["wait", "supervisor", "artifact-plugin-x"])
def test_argo_41_refuses_its_own_container_names_and_trainweave_refuses_them_on_both(
    argo: Path, tmp_path: Path, name: str
) -> None:
    """v4.1.4 ``workflow/validate/validate.go:904-908`` (``common.IsArgoSidecar``): refused at
    submit; v4.0.7 lints it (its pod would then hold two ``wait`` containers). trainweave
    refuses the name offline on both (``validate.ARGO_RESERVED``)."""
    code, out = lint(argo, tmp_path, container_set(["node", name]))
    if v41():
        assert code != 0 and f'"{name}" is a reserved Argo container name' in out, out
    else:
        assert code == 0, out
    assert argo_reserved(name) is not None
    assert {"init", "wait", "supervisor"} == set(ARGO_RESERVED)


def test_container_set_outputs_need_a_main_container(argo: Path, tmp_path: Path) -> None:
    """v4.0.7 ``validate.go:821-826``, v4.1.4 ``validate.go:898-903``: outputs of a
    containerSet come only from ``main``; a trainweave step keeps its container's name, so
    steps have no outputs (workflows/checks.py ``OUTPUTS``)."""
    code, out = lint(argo, tmp_path, container_set(["node"], outputs=True))
    assert code != 0 and 'must have a container named "main" for input or output' in out, out
    code, out = lint(argo, tmp_path, container_set(["main"], outputs=True))
    assert code == 0, out
