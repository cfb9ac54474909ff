"""mlPolicy.jax -> JAX_* env and port 29500 on the trainer's node container.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/jax/jax.go``: when the TrainJob has a trainer,
``JAX_NUM_PROCESSES`` (nodes), ``JAX_PROCESS_ID`` (the Job completion index) and
``JAX_COORDINATOR_ADDRESS`` (``<trainjob>-node-0-0.<trainjob>:29500``); no validation.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.trainjob.policies.base import (
    Context,
    Policy,
    env_and_port,
    rank0,
)
from trainweave.adapters.trainjob.policies.shared import TRAINER_PORT, completion_index
from trainweave.labels import Ancestor


class Jax(Policy):
    """mlPolicy.jax."""

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        env: list[dict[str, Any]] = [
            {"name": "JAX_NUM_PROCESSES", "value": str(ctx.num_nodes)},
            {"name": "JAX_PROCESS_ID", "valueFrom": completion_index()},
            {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{rank0(ctx)}:{TRAINER_PORT}"},
        ]
        env_and_port(ctx, ancestor, pod_spec, env)
        return None
