"""A runtime without an mlPolicy (Trainer's PlainML plugin): nothing to validate or set.

Pure. kubeflow/trainer@v2.3.0 ``plugins/plainml/plainml.go`` only sets the trainer's pod
count, which ``adapters.trainjob.trainer`` does for every policy.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.trainjob.policies.base import Context
from trainweave.errors import InputError
from trainweave.labels import Ancestor


class Plain:
    """No mlPolicy."""

    trainer_env_first = True

    def validate(self, ctx: Context) -> list[InputError]:
        return []

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        return None
