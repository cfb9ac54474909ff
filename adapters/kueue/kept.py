"""Kept queue position: the gated Workloads of a pipeline's later steps, created at its start. Pure.

Kueue orders a queue by Workload creation time (kueue v0.19.2 ``pkg/workload/workload.go``,
``Ordering.GetQueueOrderTimestamp``: ``CreationTimestamp`` unless evicted), and a step's
Workload is normally created when Argo creates the step's pods, so a later step queues behind
everything submitted while its predecessors ran. With kept position the render also holds, for
every step that waits for another step of the segment, the Workload Kueue would build for its
pod group (``adapters.kueue.workloads.workload``: same name, PodSets by role hash, queue), so it
exists, and keeps its creation time, from the start. Kueue adopts it when the pods come
(``pkg/controller/jobs/pod/pod_controller.go``, ``FindMatchingWorkloads``: a Workload named
after the group with ``kueue.x-k8s.io/is-group-workload: "true"`` whose PodSets match the pods'
role hashes and counts; on a mismatch Kueue deletes it and builds its own, so the step only
loses the kept position).

Until then it is held by the admission gate ``trainweave.io/predecessors``
(``kueue.x-k8s.io/admission-gated-by``, the ``AdmissionGatedBy`` feature, beta and on in
v0.19): a gated Workload is not admissible (``workload.IsAdmissible``), so it is in no queue,
holds no quota and cannot preempt. The controller lifts the gate when the predecessors named in
``trainweave.io/kept-after`` have succeeded (``integrations.views.decide.kept``); Kueue itself drops it
when the first pod of the group arrives (``jobframework.UpdateAdmissionGatedBy`` copies the
pod's, absent, annotation). After ``trainweave.io/kept-for-seconds`` the controller deletes a
still-gated Workload instead, so a stalled pipeline cannot hold the head of a queue.

The Workload has no controller ownerReference and no ``resource-in-use`` finalizer: Kueue
reconciles a pod-group Workload without pods as orphaned (``jobframework.finalizeWorkloads``
-> ``workload.FinalizeOrphanedWorkload``): it would finish one that has a controller owner
(``OwnerNotFound``; ``FinishOrphanedWorkloads`` is beta and on) and removes the finalizer. The
TrainJob is a plain owner, so the garbage collector deletes it with the TrainJob.

Not kept: steps without pods, steps every predecessor of which is skipped (a root of a resumed
segment) and steps with a priority class (Kueue resolves a priority value the render does not
know; docs/admins.md "Kept queue position").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from trainweave import codecs, labels
from trainweave.adapters import k8s_objects
from trainweave.adapters.kueue.rolehash import PodDefaults
from trainweave.adapters.kueue.workloads import workload
from trainweave.adapters.options import Owner
from trainweave.model import Pipeline, Step

Json = dict[str, Any]
COMPONENT = "kept-workload"
DEFAULT_CAP_SECONDS = 7200  # 2 h: a position older than this is given up


def kept_steps(
    pipeline: Pipeline, skip_steps: Iterable[str] = ()
) -> list[tuple[Step, tuple[str, ...]]]:
    """(step, the predecessors it waits for) of each step whose position is kept, in step
    order: a step with pods, no priority class and at least one predecessor not skipped."""
    skipped = frozenset(skip_steps)
    out = []
    for step in pipeline.steps:
        after = tuple(d for d in step.depends_on if d not in skipped)
        if step.name in skipped or not after or step.pods == 0 or _has_priority(step):
            continue
        out.append((step, after))
    return out


def _has_priority(step: Step) -> bool:
    if step.priority_class:
        return True
    return any((job.pod_template.get("spec") or {}).get("priorityClassName") for job in step.jobs)


def owner_reference(owner: Owner) -> Json:
    """A plain (not controller) ownerReference to the TrainJob: garbage collection only."""
    return {
        "apiVersion": owner.api_version,
        "kind": owner.kind,
        "name": owner.name,
        "uid": owner.uid,
    }


def kept_workloads(
    pipeline: Pipeline,
    skip_steps: Iterable[str] = (),
    owner: Owner | None = None,
    cap_seconds: int = DEFAULT_CAP_SECONDS,
    defaults: PodDefaults | None = None,
) -> list[Json]:
    """The gated Workloads of ``pipeline``'s kept steps (``kept_steps``), as wire dicts."""
    out = []
    for step, after in kept_steps(pipeline, skip_steps):
        wl = workload(pipeline, step, defaults).model_dump(by_alias=True, exclude_none=True)
        meta = wl["metadata"]
        meta["labels"] = k8s_objects.base_labels(pipeline, COMPONENT) | {
            labels.STEP: step.name,
            labels.ATTEMPT: codecs.encode_int(pipeline.attempt),
        }
        meta["annotations"] |= {
            labels.KUEUE_ADMISSION_GATED_BY: labels.KEPT_GATE,
            labels.KEPT_AFTER_ANNOTATION: codecs.encode_names(after),
            labels.KEPT_FOR_ANNOTATION: codecs.encode_seconds(cap_seconds),
        }
        meta.pop("finalizers", None)
        if owner is not None:
            meta["ownerReferences"] = [owner_reference(owner)]
        out.append(wl)
    return out


def is_kept(obj: Json) -> bool:
    """``obj`` is a kept-position Workload (``kept_workloads``) still held by our gate."""
    meta = obj.get("metadata") or {}
    gates = codecs.decode_names(
        (meta.get("annotations") or {}).get(labels.KUEUE_ADMISSION_GATED_BY)
    )
    return obj.get("kind") == "Workload" and labels.KEPT_GATE in gates
