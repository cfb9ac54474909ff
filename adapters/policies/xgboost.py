"""mlPolicy.xgboost -> DMLC_* env and port 29500 on the trainer's node container.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/xgboost/xgboost.go``: the tracker at
``<trainjob>-node-0-0.<trainjob>``:29500, ``DMLC_TASK_ID`` from the Job completion index,
``DMLC_NUM_WORKER`` = nodes x (GPUs per node, or 1 on CPU); the four names are reserved.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters import mlpolicy, names, validate
from trainweave.adapters.policies.base import Context, reserved_env_errors

from trainweave.errors import InputError
from trainweave.labels import Ancestor

RESERVED = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")


class XGBoost:
    """mlPolicy.xgboost."""

    trainer_env_first = True

    def validate(self, ctx: Context) -> list[InputError]:
        return reserved_env_errors(ctx.trainjob, RESERVED)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        node = validate.container(pod_spec, "node")
        if ancestor is not Ancestor.TRAINER or node is None or ctx.trainjob.spec.trainer is None:
            return None
        workers = ctx.num_nodes * max(1, mlpolicy.gpus_per_node(ctx.resources))
        mlpolicy.upsert_env(
            node,
            [
                {
                    "name": "DMLC_TRACKER_URI",
                    "value": f"{names.pod_hostname(ctx.name, 'node', 0, 0)}.{ctx.name}",
                },
                {"name": "DMLC_TRACKER_PORT", "value": str(mlpolicy.TORCH_PORT)},
                {"name": "DMLC_TASK_ID", "valueFrom": mlpolicy.completion_index()},
                {"name": "DMLC_NUM_WORKER", "value": str(workers)},
            ],
        )
        mlpolicy.upsert_by_name(
            node.setdefault("ports", []), [{"containerPort": mlpolicy.TORCH_PORT}]
        )
        return None
