"""mlPolicy.jax -> JAX_* env and port 29500 on the trainer's node container.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/jax/jax.go``: when the TrainJob has a trainer,
``JAX_NUM_PROCESSES`` (nodes), ``JAX_PROCESS_ID`` (the Job completion index) and
``JAX_COORDINATOR_ADDRESS`` (``<trainjob>-node-0-0.<trainjob>:29500``); no validation.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters import mlpolicy, names, validate
from trainweave.adapters.policies.base import Context

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
        node = validate.container(pod_spec, "node")
        if ancestor is not Ancestor.TRAINER or node is None or ctx.trainjob.spec.trainer is None:
            return None
        coordinator = f"{names.pod_hostname(ctx.name, 'node', 0, 0)}.{ctx.name}"
        mlpolicy.upsert_env(
            node,
            [
                {"name": "JAX_NUM_PROCESSES", "value": str(ctx.num_nodes)},
                {"name": "JAX_PROCESS_ID", "valueFrom": mlpolicy.completion_index()},
                {
                    "name": "JAX_COORDINATOR_ADDRESS",
                    "value": f"{coordinator}:{mlpolicy.TORCH_PORT}",
                },
            ],
        )
        mlpolicy.upsert_by_name(
            node.setdefault("ports", []), [{"containerPort": mlpolicy.TORCH_PORT}]
        )
        return None
