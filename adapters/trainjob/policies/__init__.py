"""One module per Trainer mlPolicy, chosen through one registry.

Pure. ``of(spec)`` gives the policy a runtime's ``mlPolicy`` names (torch, mpi, jax,
xgboost), or ``Plain`` for none; ``flux`` is rejected by name (it runs Flux's own broker in
every pod, which trainweave does not translate).
"""

from __future__ import annotations

from trainweave.adapters.trainjob.policies.base import Context, Policy
from trainweave.adapters.trainjob.policies.jax import Jax
from trainweave.adapters.trainjob.policies.mpi import MPI
from trainweave.adapters.trainjob.policies.plain import Plain
from trainweave.adapters.trainjob.policies.torch import Torch
from trainweave.adapters.trainjob.policies.xgboost import XGBoost
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec
from trainweave.labels import Reason

REGISTRY: dict[str, Policy] = {"torch": Torch(), "mpi": MPI(), "jax": Jax(), "xgboost": XGBoost()}
UNSUPPORTED = {"flux": "Flux's broker bootstrap is not translated; torch, mpi, jax and xgboost are"}

__all__ = ["Context", "Policy", "of", "unsupported_errors"]


def of(spec: RuntimeSpec) -> Policy:
    """The policy of the runtime's mlPolicy (the first set, in REGISTRY order), else Plain."""
    policy = spec.ml_policy
    for key, impl in REGISTRY.items():
        if policy is not None and getattr(policy, key) is not None:
            return impl
    return Plain()


def unsupported_errors(spec: RuntimeSpec) -> list[InputError]:
    """``spec.mlPolicy.<key>``: a policy trainweave does not translate."""
    policy = spec.ml_policy
    return [
        InputError(
            f"spec.mlPolicy.{key}", f"is not supported: {why}", reason=Reason.UNSUPPORTED_FIELD
        )
        for key, why in UNSUPPORTED.items()
        if policy is not None and getattr(policy, key) is not None
    ]
