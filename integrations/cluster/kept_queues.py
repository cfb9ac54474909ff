"""Which LocalQueues do not keep queue positions: a ClusterQueue annotated
``trainweave.io/kept-position: "false"`` opts its LocalQueues out of ``--kept-position``
(docs/admins.md "Kept queue position"). Read once per attempt segment started, before its kept
Workloads (``adapters.kueue.kept``) are created."""

from __future__ import annotations

from typing import Any

from trainweave import labels
from trainweave.adapters.kueue import kept
from trainweave.integrations.views.read.bodies import LocalQueueBody, Meta
from trainweave.integrations.views.requests import api

Json = dict[str, Any]


def opted_out(send: api.Send, namespace: str, objs: list[Json]) -> frozenset[str]:
    """The LocalQueues of the kept Workloads in ``objs`` whose ClusterQueue opts out, or which
    do not exist (Kueue cannot queue a Workload there; its pods will say why)."""
    queues = {str(o["spec"].get("queueName") or "") for o in objs if kept.is_kept(o)}
    out = set()
    for queue in sorted(queues - {""}):
        try:
            lq = send(api.get(api.LOCAL_QUEUE, namespace, queue))
            cq = send(api.get(api.CLUSTER_QUEUE, "", LocalQueueBody.of(lq).cluster_queue))
        except api.ApiError as err:
            if not err.not_found:
                raise
            out.add(queue)
            continue
        if Meta.of(cq).annotation(labels.KEPT_POSITION_ANNOTATION).lower() == "false":
            out.add(queue)
    return frozenset(out)
