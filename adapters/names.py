"""Deterministic names for everything trainweave creates.

Pure. Kubernetes label values and DNS labels are at most 63 characters; names
that would be longer are cut and suffixed with a hash of the full name, so they
stay unique per TrainJob, step and attempt.
"""

from __future__ import annotations

import hashlib
import re

from trainweave.k8s_names import DNS1123_SUBDOMAIN
from trainweave.model import Pipeline, Step

MAX_LABEL = 63


def dns_label(*parts: str, limit: int = MAX_LABEL) -> str:
    """``parts`` joined by ``-``; if longer than ``limit``, cut and hash-suffixed."""
    full = "-".join(p for p in parts if p)
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:8]
    return f"{full[: limit - 9].rstrip('-')}-{digest}"


def queue_error(queue: str) -> str:
    """Why ``queue`` cannot be a pod's ``kueue.x-k8s.io/queue-name``, or "" when it can.

    Kueue v0.19.2's pod webhook refuses a value that is not a DNS-1123 subdomain
    (``pkg/controller/jobframework/validation.go`` ``ValidateQueueName``); as a label value it
    has at most 63 characters (k8s.io/apimachinery ``IsValidLabelValue``); an empty one leaves
    the pod outside Kueue.
    """
    if not queue:
        return "is empty: the step's pods must name the LocalQueue that admits them"
    if len(queue) > MAX_LABEL or not DNS1123_SUBDOMAIN.match(queue):
        return (
            f"{queue!r} is not a Kueue queue name: a lowercase RFC 1123 subdomain (a-z, 0-9, '-',"
            f" '.', starting and ending with a letter or digit) of at most {MAX_LABEL} characters"
        )
    return ""


def workflow_name(trainjob: str, attempt: int) -> str:
    """The Workflow of a whole-pipeline attempt: ``<tj>``, then ``<tj>-r1``, ``<tj>-r2``..."""
    return trainjob if attempt == 0 else f"{trainjob}-r{attempt}"


def segment_name(workflow: str, segment: int) -> str:
    """A resumed segment of one attempt: ``<wf>``, then ``<wf>-s1``, ``<wf>-s2``..."""
    return workflow if segment == 0 else f"{workflow}-s{segment}"


def group_name(trainjob: str, step: str, attempt: int, segment: int = 0) -> str:
    """The Kueue pod group (and so the Workload name) of one step in one attempt segment:
    ``<tj>-<step>-a<attempt>``, then ``-a<attempt>s<segment>`` for a resumed segment. Kueue
    counts every pod that carries a group name (``pod_controller.go`` ``Finished``, and
    ``ConstructComposableWorkload`` deletes the newest gated pods beyond the total count), so
    a step re-run by a later segment must not share the name of the pods a stopped one left."""
    return dns_label(trainjob, step, f"a{attempt}" + (f"s{segment}" if segment else ""))


def step_group(pipeline: Pipeline, step: Step) -> str:
    """``group_name`` of ``step`` in ``pipeline``'s attempt segment."""
    return group_name(pipeline.name, step.name, pipeline.attempt, pipeline.segment)


def slot(job: str, replica: int | str, index: int | str) -> str:
    """A pod's slot in its step: ``<replicatedJob>-<jobIndex>-<podIndex>``, the name of its task
    in the step's DAG and so the tail of its Argo node name (``job_of_slot`` reads it back)."""
    return f"{job}-{replica}-{index}"


_SLOT = re.compile(r"^(?P<job>.+)-(?P<replica>[0-9]+)-(?P<index>[0-9]+)$")


def job_of_slot(name: str) -> tuple[str, str] | None:
    """``(replicatedJob, jobIndex)`` of a pod slot (``slot``): the Job it is a pod of, which
    JobSet names ``<jobset>-<replicatedJob>-<jobIndex>``; None when ``name`` is not a slot."""
    match = _SLOT.match(name)
    return (match["job"], match["replica"]) if match else None


def pod_hostname(trainjob: str, job: str, replica: int | str, index: int | str) -> str:
    """JobSet's pod hostname ``<jobset>-<replicatedJob>-<jobIndex>-<podIndex>``."""
    return f"{trainjob}-{slot(job, replica, index)}"


def snapshot_name(trainjob: str) -> str:
    """Runtime snapshot ConfigMap, as Trainer v2.3 names it (KEP-2599)."""
    return f"{trainjob}-runtime-snapshot"


def pvc_name(trainjob: str, template: str) -> str:
    """JobSet's PVC name for a volumeClaimPolicies template: ``<template>-<jobset>``."""
    return f"{template}-{trainjob}"
