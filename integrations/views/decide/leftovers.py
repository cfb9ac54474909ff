"""What a TrainJob no longer there left, and a new TrainJob of its name waiting for it. Pure.

A TrainJob deleted in the background goes first; the GC deletes its Workflows, then their pods,
after it. Their pods carry the pod group names (``names.group_name``) a new TrainJob of the
same name renders, and Kueue counts every pod of a group: a pod beyond the group's
``pod-group-total-count`` is deleted, and until Kueue sees it gone it makes no Workload for the
group (v0.19.2 ``pod_controller.go`` ``ConstructComposableWorkload``, ``jobframework``
``ensureOneWorkload``: "waiting to observe previous operations on pods"). So a TrainJob
re-created at once starts once they are gone (``waiting``), and the quota their Workloads hold
is freed meanwhile (``orphan_releases``, as when no TrainJob of the name exists).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainweave.integrations.views.read.bodies import Meta
from trainweave.integrations.views.read.observed import Observed, group_of
from trainweave.integrations.views.requests import api
from trainweave.integrations.views.requests.event import event
from trainweave.labels import EventReason, EventType

Json = dict[str, Any]


def leftovers(obs: Observed) -> list[str]:
    """``Kind name`` of what an earlier TrainJob of the same name left in the namespace: its
    Workflows, and, while this TrainJob has no Workflow yet, the pods labelled with the name."""
    uid = Meta.of(obs.trainjob).uid
    workflows = [Meta.of(w) for w in obs.workflows]
    out = [f"Workflow {m.name}" for m in workflows if not m.controlled_by(uid)]
    if not obs.owned_views:
        out += [f"Pod {Meta.of(p).name}" for p in obs.pods]
    return sorted(out)


def waiting(obs: Observed, now: datetime) -> list[api.Request]:
    """Before a TrainJob's first Workflow: nothing when no earlier TrainJob of its name left
    anything; else the releases of what their pods hold and an Event saying what it waits for."""
    left = leftovers(obs)
    if not left:
        return []
    meta = Meta.of(obs.trainjob)
    pods = [] if obs.owned_views else list(obs.pods)
    msg = (
        f"{', '.join(left)} of an earlier TrainJob named {meta.name} still exist: Kueue would"
        " count its pods in this TrainJob's pod groups; the steps start once they are gone"
    )
    return [
        *orphan_releases(meta.namespace, pods, list(obs.workloads)),
        event(obs.trainjob, EventType.NORMAL, EventReason.EARLIER_RUN_REMAINS, msg, now),
    ]


def orphan_releases(namespace: str, pods: list[Json], workloads: list[Json]) -> list[api.Request]:
    """TrainJob gone: delete the Workloads that hold its deleting pods (Kueue finalizer)."""
    groups = {group_of(p) for p in pods if Meta.of(p).deletion_timestamp}
    return [
        api.delete(api.WORKLOAD, namespace, m.name, m.uid)
        for wl in workloads
        if (m := Meta.of(wl)).name in groups and not m.deletion_timestamp
    ]
