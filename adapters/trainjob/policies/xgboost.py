"""mlPolicy.xgboost -> DMLC_* env and port 29500 on the trainer's node container.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/xgboost/xgboost.go``: the tracker at
``<trainjob>-node-0-0.<trainjob>``:29500, ``DMLC_TASK_ID`` from the Job completion index,
``DMLC_NUM_WORKER`` = nodes x (GPUs per node, or 1 on CPU); the four names are reserved.
"""

from __future__ import annotations

from typing import Any, ClassVar

from trainweave.adapters.trainjob.policies.base import (
    Context,
    Policy,
    env_and_port,
    rank0,
    reserved_env_errors,
)
from trainweave.adapters.trainjob.policies.shared import (
    TRAINER_PORT,
    completion_index,
    gpus_per_node,
)
from trainweave.errors import InputError
from trainweave.labels import Ancestor

RESERVED = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


class XGBoost(Policy):
    """mlPolicy.xgboost."""

    trainer_env_first: ClassVar[bool] = True

    def validate(self, ctx: Context) -> list[InputError]:
        return reserved_env_errors(ctx.trainjob, RESERVED)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        workers = ctx.num_nodes * max(1, gpus_per_node(ctx.resources))
        env: list[dict[str, Any]] = [
            {"name": "DMLC_TRACKER_URI", "value": rank0(ctx)},
            {"name": "DMLC_TRACKER_PORT", "value": str(TRAINER_PORT)},
            {"name": "DMLC_TASK_ID", "valueFrom": completion_index()},
            {"name": "DMLC_NUM_WORKER", "value": str(workers)},
        ]
        env_and_port(ctx, ancestor, pod_spec, env)
        return None
