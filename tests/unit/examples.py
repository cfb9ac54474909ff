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
NAMES = ["llm-finetune", "torch-distributed", "mpi", "real"]


# Stand-ins for the key pair ``trainweave.sshkeys`` draws, so the MPI golden is stable.
TEST_KEYS = KeyPair("-----BEGIN EC PRIVATE KEY-----\ntest\n", "ecdsa-sha2-nistp521 test\n")


def render_example(name: str) -> list[dict[str, Any]]:
    """Every object ``examples/<name>`` renders to (the one render path, test SSH keys)."""
    folder = EXAMPLES / name
    job = parse_trainjob(yaml.safe_load((folder / "trainjob.yaml").read_text()))
    runtime = parse_runtime(yaml.safe_load((folder / "runtime.yaml").read_text()))
    return render.render(job, runtime, render.Options(ssh_keys=TEST_KEYS))
