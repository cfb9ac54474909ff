"""One module per Trainer mlPolicy, chosen through one registry.

Pure. ``REGISTRY`` maps each ``spec.mlPolicy`` field trainweave translates (torch, mpi, jax,
xgboost) to its module's ``Policy``; ``REGISTRY.of(spec)`` gives the runtime's, or ``Plain``
for none. ``flux`` is refused by name (it runs Flux's own broker in every pod, which
trainweave does not translate). Nothing outside this package knows a policy by name: the
translation (``adapters.trainjob.trainer``) calls ``Policy``'s methods and the registry's checks
(``conflict_errors``: one mlPolicy at most), the Hera builders (``workflows``) the policy
``of_builder`` gives, and the render calls the Pipeline's ``PolicyPart``;
tests/unit/test_invariants.py keeps it so. docs/extending.md lists the files a new policy touches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from trainweave.adapters.trainjob.policies.base import Context, Policy
from trainweave.adapters.trainjob.policies.jax import Jax
from trainweave.adapters.trainjob.policies.mpi import MPI
from trainweave.adapters.trainjob.policies.plain import Plain
from trainweave.adapters.trainjob.policies.torch import Torch
from trainweave.adapters.trainjob.policies.xgboost import XGBoost
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec
from trainweave.labels import Reason

__all__ = ["REGISTRY", "Context", "Policy", "Registry", "of", "of_builder", "unsupported_errors"]


@dataclass(frozen=True)
class Registry:
    """``spec.mlPolicy`` field (snake_case, as ``inputs.MLPolicy`` names it) -> its Policy, in
    the order ``of`` tries them; fields refused by name, with why."""

    policies: Mapping[str, Policy]
    unsupported: Mapping[str, str] = field(default_factory=dict)

    def of(self, spec: RuntimeSpec) -> Policy:
        """The policy of the runtime's mlPolicy (the first set, in registry order), else Plain."""
        ml = spec.ml_policy
        for key, impl in self.policies.items():
            if ml is not None and getattr(ml, key) is not None:
                return impl
        return Plain()

    def unsupported_errors(self, spec: RuntimeSpec) -> list[InputError]:
        """``spec.mlPolicy.<key>``: a policy trainweave does not translate."""
        ml = spec.ml_policy
        return [
            InputError(
                f"spec.mlPolicy.{key}", f"is not supported: {why}", reason=Reason.UNSUPPORTED_FIELD
            )
            for key, why in self.unsupported.items()
            if ml is not None and getattr(ml, key) is not None
        ]

    def configured(self, spec: RuntimeSpec) -> list[str]:
        """The ``spec.mlPolicy`` fields set, translated or refused, in registry order."""
        ml = spec.ml_policy
        keys = [*self.policies, *(k for k in self.unsupported if k not in self.policies)]
        return [key for key in keys if ml is not None and getattr(ml, key) is not None]

    def conflict_errors(self, spec: RuntimeSpec) -> list[InputError]:
        """``spec.mlPolicy``: more than one policy set (the CRD's CEL rule,
        kubeflow/trainer@v2.3.0 ``manifests/base/crds``)."""
        chosen = self.configured(spec)
        if len(chosen) <= 1:
            return []
        return [
            InputError(
                "spec.mlPolicy",
                f"Only one of the policy can be configured, got {', '.join(chosen)}",
                reason=Reason.INVALID_RUNTIME,
            )
        ]

    def with_policy(self, key: str, policy: Policy) -> Registry:
        """A copy with ``policy`` for ``spec.mlPolicy.<key>`` (no longer refused)."""
        return Registry(
            MappingProxyType({**self.policies, key: policy}),
            MappingProxyType({k: v for k, v in self.unsupported.items() if k != key}),
        )


REGISTRY = Registry(
    MappingProxyType({"torch": Torch(), "mpi": MPI(), "jax": Jax(), "xgboost": XGBoost()}),
    MappingProxyType(
        {"flux": "Flux's broker bootstrap is not translated; torch, mpi, jax and xgboost are"}
    ),
)


def of(spec: RuntimeSpec) -> Policy:
    """``REGISTRY.of``."""
    return REGISTRY.of(spec)


def unsupported_errors(spec: RuntimeSpec) -> list[InputError]:
    """``REGISTRY.unsupported_errors``."""
    return REGISTRY.unsupported_errors(spec)


def of_builder(*, torch: bool) -> Policy:
    """The policy of a Hera step (``workflows.steps.trainer``'s ``torch`` argument)."""
    return Torch() if torch else Plain()
