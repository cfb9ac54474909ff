"""The MPI SSH key pair: Trainer's MPI plugin makes a fresh one per TrainJob.

I/O at the edge (runs ``ssh-keygen``). The adapters take the pair as input, so
rendering stays pure and deterministic for a given key.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class KeyPair:
    """An OpenSSH private key and its public key line."""

    private: str
    public: str


def generate() -> KeyPair:
    """A new ed25519 key pair from ``ssh-keygen``."""
    with tempfile.TemporaryDirectory() as tmp:
        key = Path(tmp) / "id"
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "trainweave", "-f", str(key)],
            check=True,
            capture_output=True,
        )
        return KeyPair(key.read_text(), (key.with_suffix(".pub")).read_text().strip())
