"""mlPolicy.jax -> JAX_* env and port 29500 on the trainer's node container.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/jax/jax.go``: when the TrainJob has a trainer,
``JAX_NUM_PROCESSES`` (nodes), ``JAX_PROCESS_ID`` (the Job completion index) and
``JAX_COORDINATOR_ADDRESS`` (``<trainjob>-node-0-0.<trainjob>:29500``); no validation.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.trainjob import mlpolicy, wirelists
from trainweave.adapters.trainjob.policies.base import Context, open_port, rank0, trainer_node
from trainweave.errors import InputError
from trainweave.labels import Ancestor


class Jax:
    """mlPolicy.jax."""

    trainer_env_first = False

    def validate(self, ctx: Context) -> list[InputError]:
        return []

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        node = trainer_node(ctx, ancestor, pod_spec)
        if node is None:
            return None
        wirelists.upsert_env(
            node,
            [
                {"name": "JAX_NUM_PROCESSES", "value": str(ctx.num_nodes)},
                {"name": "JAX_PROCESS_ID", "valueFrom": mlpolicy.completion_index()},
                {
                    "name": "JAX_COORDINATOR_ADDRESS",
                    "value": f"{rank0(ctx)}:{mlpolicy.TORCH_PORT}",
                },
            ],
        )
        open_port(node)
        return None
