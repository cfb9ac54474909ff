"""``jobsStatus``: one entry per replicatedJob, its Jobs counted as JobSet counts them. Pure.

A Job here is the pods of one replica of a replicatedJob (label ``jobset.sigs.k8s.io/job-index``)
in the current attempt, the last try of each pod.
"""

from __future__ import annotations

from typing import Any

from trainweave import labels
from trainweave.integrations.views.read import argo_nodes
from trainweave.integrations.views.read.argo_nodes import workflow_of
from trainweave.integrations.views.read.argo_view import FAILED
from trainweave.integrations.views.read.bodies import Meta, PodBody, TrainJobBody
from trainweave.integrations.views.read.observed import Observed, Progress
from trainweave.states import ArgoPhase, PodPhase

Json = dict[str, Any]


def replicated_jobs(obs: Observed) -> list[str]:
    """replicatedJob names in pipeline order, from the pod templates and pods."""
    names: list[str] = []
    for v in obs.owned_views:
        for rjob in v.templates.replicated_jobs:
            if rjob not in names:
                names.append(rjob)
    for pod in obs.pods:
        rjob = Meta.of(pod).label(labels.REPLICATED_JOB)
        if rjob and rjob not in names:
            names.append(rjob)
    return names


def attempt_pods(obs: Observed, prog: Progress) -> list[Json]:
    """Pods of the current attempt (``prog``), the last try of each pod slot only."""
    wf_names = {v.name for v in prog.views}
    latest: dict[tuple[str, str], Json] = {}
    pods = sorted(obs.pods, key=lambda p: Meta.of(p).creation_timestamp)
    for pod in pods:
        meta = Meta.of(pod)
        wf = workflow_of(pod)
        if wf not in wf_names:
            continue
        ref = argo_nodes.pod_node(argo_nodes.node_of_pod(pod) or meta.name)
        node = f"{ref.step}.{ref.slot}" if ref is not None and ref.workflow == wf else meta.name
        latest[(meta.label(labels.REPLICATED_JOB), node)] = pod
    return list(latest.values())


def job_sizes(obs: Observed) -> dict[tuple[str, str], int]:
    """Pods per Job, ``(replicatedJob, replica) -> n``: the most any Workflow's step DAGs have
    (``argo_view.Templates.job_sizes``)."""
    sizes: dict[tuple[str, str], int] = {}
    for v in obs.owned_views:
        for key, n in v.templates.job_sizes.items():
            sizes[key] = max(sizes.get(key, 0), n)
    return sizes


def jobs_status(obs: Observed) -> list[Json]:
    """One ``{name, ready, succeeded, failed, active, suspended}`` per replicatedJob, in Jobs.

    A Job (one replica's pods, last try each) counts, as JobSet v0.12
    ``calculateReplicatedJobStatuses`` counts child Jobs, as:
    - succeeded: all its pods succeeded;
    - failed: a pod failed and its step failed for good (a pod Argo will retry is a Job backing off);
    - suspended: the TrainJob is suspended, or all its live pods wait at Kueue's admission gate;
    - active: a pod Pending/Running and not being deleted; ready: ready + succeeded pods reach
      its size.
    A step not reached yet has no Jobs, as JobSet creates a dependent replicatedJob's Jobs late.
    """
    suspended_tj = TrainJobBody.of(obs.trainjob).suspend
    zero = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    counts: dict[str, dict[str, int]] = {name: dict(zero) for name in replicated_jobs(obs)}
    sizes = job_sizes(obs)
    prog = obs.progress
    failed_steps = _failed_steps(prog)
    jobs: dict[tuple[str, str], list[Json]] = {}
    for pod in attempt_pods(obs, prog):
        meta = Meta.of(pod)
        key = (meta.label(labels.REPLICATED_JOB), meta.label(labels.JOBSET_JOB_INDEX, "0"))
        if key[0] in counts:
            jobs.setdefault(key, []).append(pod)
    for (rjob, replica), pods in jobs.items():
        c = counts[rjob]
        size = max(sizes.get((rjob, replica), 0), len(pods))
        phases = [PodBody.of(p).phase for p in pods]
        succeeded = phases.count(PodPhase.SUCCEEDED)
        if succeeded >= size:
            c["succeeded"] += 1
            continue
        step = Meta.of(pods[0]).label(labels.STEP)
        if PodPhase.FAILED in phases and (workflow_of(pods[0]), step) in failed_steps:
            c["failed"] += 1
            continue
        live = [
            p
            for p, phase in zip(pods, phases, strict=True)
            if phase in (PodPhase.PENDING, PodPhase.RUNNING) and not PodBody.of(p).deleting
        ]
        if suspended_tj or (live and all(PodBody.of(p).gated for p in live)):
            c["suspended"] += 1
            continue
        if live:
            c["active"] += 1
        if succeeded + sum(1 for p in live if PodBody.of(p).ready) >= size:
            c["ready"] += 1
    return [{"name": name, **c} for name, c in counts.items()]


def _failed_steps(prog: Progress) -> set[tuple[str, str]]:
    """(workflow, step) pairs whose step ended Failed/Error, or ran in a Workflow that ended so."""
    out: set[tuple[str, str]] = set()
    for v in prog.views:
        for name, step in v.steps.items():
            if step.phase in FAILED or (v.terminal and step.phase != ArgoPhase.SUCCEEDED):
                out.add((v.name, name))
    return out
