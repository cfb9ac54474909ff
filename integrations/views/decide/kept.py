"""Kept queue position in a reconcile: lift a kept Workload's gate, or give its position up. Pure.

A kept Workload (``adapters.kueue.kept``) is created gated with the attempt segment. For each
one of the current segment that is still gated by ``trainweave.io/predecessors`` and has no
pods yet:

- every step in its ``trainweave.io/kept-after`` succeeded: the gate is lifted (a merge patch
  of ``kueue.x-k8s.io/admission-gated-by`` keeping any other gate; Kueue v0.19.2 accepts a
  removal and refuses an addition, ``pkg/util/webhook/validation_admissiongatedby.go``), so
  Kueue queues it as of its creation time while Argo creates the pods;
- older than ``trainweave.io/kept-for-seconds``: deleted (UID precondition) instead, so the
  step queues as of its pods, as without kept position; otherwise the reconcile is requeued at
  that age, so the position is given up while the gate still holds it.

A suspended TrainJob's are deleted (resumed, its steps queue as of their pods). A Workload whose
pods exist is Kueue's (it drops the gate itself when the first pod arrives). A held Workload is
in no queue, so it has no quota record (``observed.quota_records``): no waiting Event or gauge.
The kept Workloads of a Workflow that is stopped, failed or done are deleted by
``reconcile.releases`` like every step Workload of it, so nothing is admitted for a step that
will not run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from trainweave import codecs, labels
from trainweave.integrations.views.read.bodies import Meta, TrainJobBody
from trainweave.integrations.views.read.observed import Observed, group_of
from trainweave.integrations.views.read.quota import gates, held
from trainweave.integrations.views.read.times import parse_time
from trainweave.integrations.views.requests import api
from trainweave.labels import EventReason

Json = dict[str, Any]


@dataclass
class KeptActions:
    """Requests of one reconcile for the kept Workloads, the steps named in its Events, and
    when to look again (seconds, None: no need)."""

    requests: list[api.Request] = field(default_factory=list)
    lifted: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    requeue_after: float | None = None


def _cap(wl: Json) -> float | None:
    return codecs.decode_seconds(Meta.of(wl).annotation(labels.KEPT_FOR_ANNOTATION))


def actions(obs: Observed, now: datetime) -> KeptActions:
    """What to do about the gated kept Workloads of the current segment of ``obs``."""
    out = KeptActions()
    latest = obs.progress.latest
    if latest is None or latest.terminal or latest.shutdown or latest.stopped_for:
        return out  # reconcile.releases deletes them
    suspended = TrainJobBody.of(obs.trainjob).suspend
    done = obs.progress.done_steps | latest.succeeded_steps
    with_pods = {group_of(p) for p in obs.pods}
    for wl in obs.workloads:
        meta = Meta.of(wl)
        group = latest.groups.get(meta.name)
        if group is None or meta.deletion_timestamp or meta.name in with_pods:
            continue
        if not held(wl):
            continue
        ns = meta.namespace
        created = parse_time(meta.creation_timestamp)
        cap = _cap(wl)
        age = (now - created).total_seconds() if created is not None else 0.0
        if suspended:  # a suspended pipeline keeps no place; resumed, it queues as of its pods
            out.requests.append(api.delete(api.WORKLOAD, ns, meta.name, meta.uid))
            continue
        if cap is not None and age >= cap:
            out.requests.append(api.delete(api.WORKLOAD, ns, meta.name, meta.uid))
            out.expired.append(group.step)
            continue
        after = codecs.decode_names(meta.annotation(labels.KEPT_AFTER_ANNOTATION))
        if all(step in done for step in after):
            rest = [g for g in gates(wl) if g != labels.KEPT_GATE]
            value = codecs.encode_names(rest) if rest else None
            patch = {"metadata": {"annotations": {labels.KUEUE_ADMISSION_GATED_BY: value}}}
            out.requests.append(api.merge_patch(api.WORKLOAD, ns, meta.name, patch))
            out.lifted.append(group.step)
        elif cap is not None:
            left = cap - age + 0.05
            out.requeue_after = left if out.requeue_after is None else min(out.requeue_after, left)
    return out


def messages(todo: KeptActions) -> list[tuple[EventReason, str]]:
    """The Events of ``todo``: one per step whose gate was lifted or position given up."""
    out = [
        (EventReason.STEP_UNGATED, f"step {step}: predecessors succeeded, admission gate lifted")
        for step in todo.lifted
    ]
    out += [
        (
            EventReason.KEPT_POSITION_EXPIRED,
            f"step {step}: kept queue position given up after its cap; it queues as of its pods",
        )
        for step in todo.expired
    ]
    return out
