"""The project's examples (``examples/<name>``) as the unit tests render them: one render path,
fixed SSH keys so the MPI golden is stable. Shared by the golden, schema, YAML and status tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainweave.adapters import render
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.sshkeys import KeyPair

EXAMPLES = Path(__file__).parents[2] / "examples"
# ``real/mpi``: the second example of examples/real (its workload image holds both), in files
# named ``mpi_trainjob.yaml``, ``mpi_runtime.yaml`` and ``mpi_rendered.yaml``.
NAMES = ["llm-finetune", "torch-distributed", "mpi", "real", "real/mpi"]


# Stand-ins for the key pair ``trainweave.sshkeys`` draws, so the MPI golden is stable.
TEST_KEYS = KeyPair("-----BEGIN EC PRIVATE KEY-----\ntest\n", "ecdsa-sha2-nistp521 test\n")


def example_files(name: str) -> tuple[Path, Path, Path]:
    """(trainjob, runtime, golden) of an example: ``examples/<name>/{trainjob,runtime,rendered}
    .yaml``, or ``examples/<folder>/<prefix>_*.yaml`` for a name ``<folder>/<prefix>``."""
    folder, _, prefix = name.partition("/")
    stem = f"{prefix}_" if prefix else ""
    trainjob, runtime, rendered = (
        EXAMPLES / folder / f"{stem}{kind}.yaml" for kind in ("trainjob", "runtime", "rendered")
    )
    return trainjob, runtime, rendered


def the_workflow(objs: list[dict[str, Any]]) -> dict[str, Any]:
    """The Workflow among a render's objects (``render.CREATION_ORDER`` puts it last)."""
    (workflow,) = [o for o in objs if o["kind"] == "Workflow"]
    return workflow


def render_example(name: str) -> list[dict[str, Any]]:
    """Every object ``examples/<name>`` renders to (the one render path, test SSH keys)."""
    trainjob, runtime_file, _ = example_files(name)
    job = parse_trainjob(yaml.safe_load(trainjob.read_text()))
    runtime = parse_runtime(yaml.safe_load(runtime_file.read_text()))
    return render.render(job, runtime, render.Options(ssh_keys=TEST_KEYS))
