"""A runtime without an mlPolicy (Trainer's PlainML plugin): nothing to validate or set.

Pure. kubeflow/trainer@v2.3.0 ``plugins/plainml/plainml.go`` only sets the trainer's pod
count, which ``adapters.trainjob.trainer`` does for every policy.
"""

from __future__ import annotations

from typing import ClassVar

from trainweave.adapters.trainjob.policies.base import Policy


class Plain(Policy):
    """No mlPolicy: the base class's defaults, the trainer's env first (plainml.go)."""

    trainer_env_first: ClassVar[bool] = True
