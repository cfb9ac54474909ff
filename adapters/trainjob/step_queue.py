"""The queue and priority class of a step (a pod group Kueue admits).

Pure. Queue, first found: the TrainJob annotation ``queue.trainweave.io/<replicatedJob>``; the
``kueue.x-k8s.io/queue-name`` label on its replicatedJob template (``template.metadata.labels``,
runtimePatches included); the same label on the TrainJob (what the Kubeflow SDK's ``Labels``
option and Kueue's TrainJob integration use); ``default_queue``; else an error. Every job of
one step must agree. ``kueue.x-k8s.io/priority-class`` likewise: the job template's label,
else the TrainJob's.
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters import names
from trainweave.errors import InputError
from trainweave.inputs import TrainJob
from trainweave.labels import KUEUE_PRIORITY_CLASS, KUEUE_QUEUE_NAME, Reason

Json = dict[str, Any]
QUEUE_ANNOTATION_PREFIX = "queue.trainweave.io/"
_RJ = "spec.template.spec.replicatedJobs"


def label(raw: Json, key: str) -> str | None:
    """A label of a replicatedJob's template (``template.metadata.labels``)."""
    labels = ((raw.get("template") or {}).get("metadata") or {}).get("labels") or {}
    value = labels.get(key)
    return str(value) if value is not None else None


def priority_class(trainjob: TrainJob, raw: Json) -> str | None:
    """The step's WorkloadPriorityClass: its first job's label, else the TrainJob's."""
    return label(raw, KUEUE_PRIORITY_CLASS) or trainjob.metadata.labels.get(KUEUE_PRIORITY_CLASS)


def queue(
    trainjob: TrainJob, raw_jobs: list[Json], idxs: tuple[int, ...], default_queue: str | None
) -> tuple[str, list[InputError]]:
    """The LocalQueue of the step of jobs ``idxs`` (indexes into ``raw_jobs``), or errors."""
    tj_queue = trainjob.metadata.labels.get(KUEUE_QUEUE_NAME)
    default = tj_queue or default_queue
    found: dict[str, str] = {}
    for i in idxs:
        name = raw_jobs[i]["name"]
        key = QUEUE_ANNOTATION_PREFIX + name
        named = trainjob.metadata.annotations.get(key) or label(raw_jobs[i], KUEUE_QUEUE_NAME)
        if named and (problem := names.queue_error(named)):  # the label's path, else ours
            path = f"{_RJ}[{i}].template.metadata.labels.{KUEUE_QUEUE_NAME}"
            if trainjob.metadata.annotations.get(key):
                return "", [InputError(f"metadata.annotations.{key}", problem)]
            return "", [InputError(path, problem, reason=Reason.INVALID_RUNTIME)]
        if named:
            found[name] = named
    if len(set(found.values())) > 1:
        return "", [
            InputError(
                f"{_RJ}[{idxs[0]}].template.metadata.labels",
                f"jobs of one step name different queues: {found}",
                reason=Reason.INVALID_RUNTIME,
            )
        ]
    if found:
        return next(iter(found.values())), []
    if default and (problem := names.queue_error(default)):
        where = f"metadata.labels.{KUEUE_QUEUE_NAME}" if tj_queue else "default queue"
        return "", [InputError(where, problem)]
    if default:
        return default, []
    name = raw_jobs[idxs[0]]["name"]
    return "", [
        InputError(
            f"{_RJ}[{idxs[0]}].template.metadata.labels",
            f"step {name!r} has no queue: set label {KUEUE_QUEUE_NAME} there or on the"
            f" TrainJob, annotation {QUEUE_ANNOTATION_PREFIX}{name} on the TrainJob, or a"
            " default queue",
            reason=Reason.INVALID_RUNTIME,
        )
    ]
