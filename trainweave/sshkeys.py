"""The MPI SSH key pair: a fresh one per TrainJob, as Trainer's MPI plugin makes it.

The edge that draws randomness (kubeflow/trainer@v2.3.0 ``plugins/mpi/mpi.go``
``buildSSHAuthSecret``): an ECDSA P-521 key, the private key PEM-encoded as SEC 1
``EC PRIVATE KEY``, the public key as an ``authorized_keys`` line. The adapters take the
pair as input, so rendering stays pure and deterministic for a given key.
"""

from __future__ import annotations

from dataclasses import dataclass

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


@dataclass(frozen=True)
class KeyPair:
    """A PEM private key and its ``authorized_keys`` public key line."""

    private: str
    public: str


def generate() -> KeyPair:
    """A new ECDSA P-521 key pair."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return KeyPair(private.decode(), public.decode() + "\n")
