"""Builders of cluster objects in the shapes the engines write them (tests only).

Workflow status nodes follow Argo v4 (``<wf>`` root DAG, ``<wf>.<step>`` step
DAG, ``<wf>.<step>.<pod>`` Retry, ``...(<n>)`` Pod attempts with string
``outputs.exitCode``); Workloads follow Kueue v1beta2; pods carry the labels
``adapters.argo.workflow`` renders.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from trainweave import labels as L

Json = dict[str, Any]
T0 = "2026-11-01T10:00:00Z"
UID = "tj-uid-1"


def trainjob(
    name: str = "ft",
    *,
    suspend: bool = False,
    deadline: int | None = None,
    conditions: list[Json] | None = None,
    jobs: list[Json] | None = None,
    annotations: dict[str, str] | None = None,
    created: str = T0,
    namespace: str = "ns",
    uid: str = UID,
) -> Json:
    spec: Json = {"runtimeRef": {"name": "rt", "kind": "ClusterTrainingRuntime"}}
    if suspend:
        spec["suspend"] = True
    if deadline:
        spec["activeDeadlineSeconds"] = deadline
    status: Json = {}
    if conditions:
        status["conditions"] = conditions
    if jobs:
        status["jobsStatus"] = jobs
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": created,
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": status,
    }


def cluster_runtime(name: str = "rt", spec: Json | None = None) -> Json:
    """A ClusterTrainingRuntime (``spec`` empty unless given)."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name},
        "spec": spec or {},
    }


def snapshot_map(text: str, owner_uid: str = UID, tj: str = "ft", namespace: str = "ns") -> Json:
    """The runtime snapshot ConfigMap ``<tj>-runtime-snapshot`` holding ``text``, controlled by
    the TrainJob of ``owner_uid``."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{tj}-runtime-snapshot",
            "namespace": namespace,
            "ownerReferences": owner(owner_uid),
        },
        "data": {"runtime": text},
    }


def owner(uid: str = UID) -> list[Json]:
    return [
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "name": "ft",
            "uid": uid,
            "controller": True,
        }
    ]


@dataclass
class Pod:
    """One pod attempt of a step: phase and exit code (``main``'s), or its containerSet
    containers' exit codes (Argo's Container child nodes)."""

    slot: str
    phase: str
    code: int | None = None
    attempt: int = 0
    message: str = ""
    containers: tuple[tuple[str, int], ...] = ()


@dataclass
class StepState:
    phase: str
    pods: list[Pod] = field(default_factory=list)
    rjob: str = ""
    role: str = "initializer"
    queue: str = "cpu"


def group(tj: str, step: str, attempt: int) -> str:
    return f"{tj}-{step}-a{attempt}"


def workflow(
    steps: dict[str, StepState],
    *,
    tj: str = "ft",
    attempt: int = 0,
    segment: int = 0,
    phase: str = "Running",
    message: str = "",
    max_restarts: int = 0,
    suspend: bool = False,
    shutdown: str = "",
    stopped_for: str = "",
    compressed: bool = False,
    owner_uid: str = UID,
    namespace: str = "ns",
) -> Json:
    name = tj if attempt == 0 else f"{tj}-r{attempt}"
    if segment:
        name += f"-s{segment}"
    nodes: dict[str, Json] = {
        name: {"id": name, "name": name, "type": "DAG", "phase": phase, "displayName": name}
    }
    templates: list[Json] = [
        {"name": "main", "dag": {"tasks": [{"name": s, "template": f"step-{s}"} for s in steps]}}
    ]
    for sname, st in steps.items():
        rjob = st.rjob or sname
        if st.phase:
            sid = f"{name}-{zlib.crc32(sname.encode())}"
            nodes[sid] = {
                "id": sid,
                "name": f"{name}.{sname}",
                "type": "DAG",
                "phase": st.phase,
                "displayName": sname,
                "boundaryID": name,
            }
        for i, pod in enumerate(st.pods):
            pid = f"{name}-{sname}-{pod.slot}-{pod.attempt}-{i}"
            node: Json = {
                "id": pid,
                "name": f"{name}.{sname}.{pod.slot}({pod.attempt})",
                "type": "Pod",
                "phase": pod.phase,
                "displayName": f"{pod.slot}({pod.attempt})",
            }
            if pod.code is not None:
                node["outputs"] = {"exitCode": str(pod.code)}
            if pod.message:
                node["message"] = pod.message
            nodes[pid] = node
            for ctr, code in pod.containers:
                nodes[f"{pid}-{ctr}"] = {
                    "id": f"{pid}-{ctr}",
                    "name": f"{node['name']}.{ctr}",
                    "type": "Container",
                    "phase": "Succeeded" if code == 0 else "Failed",
                    **({"message": f"{ctr}: Error (exit code {code}): "} if code else {}),
                }
        slots = sorted({pod.slot for pod in st.pods})
        templates.append(  # the step's DAG: one task per pod slot, as adapters.argo.workflow renders it
            {
                "name": f"step-{sname}",
                "dag": {"tasks": [{"name": x, "template": rjob} for x in slots]},
            }
        )
        templates.append(
            {
                "name": rjob,
                "metadata": {
                    "labels": {
                        L.TRAINJOB: tj,
                        L.STEP: sname,
                        L.REPLICATED_JOB: rjob,
                        L.ROLE: st.role,
                        L.KUEUE_QUEUE_NAME: st.queue,
                        L.KUEUE_POD_GROUP_NAME: group(tj, sname, attempt),
                    }
                },
                "containerSet": {"containers": [{"name": rjob, "image": "x"}]},
            }
        )
    status: Json = {"phase": phase}
    if message:
        status["message"] = message
    if compressed:
        raw = gzip.compress(json.dumps(nodes).encode())
        status["compressedNodes"] = base64.b64encode(raw).decode()
    else:
        status["nodes"] = nodes
    spec: Json = {"entrypoint": "main", "templates": templates}
    if suspend:
        spec["suspend"] = True
    if shutdown:
        spec["shutdown"] = shutdown
    ann = {L.MAX_RESTARTS_ANNOTATION: str(max_restarts)}
    if stopped_for:
        ann[L.STOPPED_FOR] = stopped_for
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"wf-{name}",
            "annotations": ann,
            "labels": {L.TRAINJOB: tj, L.ATTEMPT: str(attempt), L.SEGMENT: str(segment)},
            "ownerReferences": owner(owner_uid),
            "creationTimestamp": T0,
        },
        "spec": spec,
        "status": status,
    }


def pod(
    wf: str,
    step: str,
    slot: str,
    phase: str,
    *,
    attempt: int = 0,
    rjob: str = "",
    tj: str = "ft",
    wf_attempt: int = 0,
    ready: bool = False,
    gated: bool = False,
    created: str = T0,
    deleting: bool = False,
    annotations: dict[str, str] | None = None,
) -> Json:
    meta: Json = {
        "name": f"{wf}-{step}-{slot}-{attempt}",
        "namespace": "ns",
        "creationTimestamp": created,
        "labels": {
            L.TRAINJOB: tj,
            L.STEP: step,
            L.REPLICATED_JOB: rjob or step,
            L.JOBSET_JOB_INDEX: slot.split("-")[-2] if slot.count("-") >= 2 else "0",
            "workflows.argoproj.io/workflow": wf,
            L.KUEUE_POD_GROUP_NAME: group(tj, step, wf_attempt),
        },
        "annotations": {
            "workflows.argoproj.io/node-name": f"{wf}.{step}.{slot}({attempt})",
            **(annotations or {}),
        },
    }
    if deleting:
        meta["deletionTimestamp"] = T0
    spec: Json = {"containers": [{"name": "main"}]}
    if gated:
        spec["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
    status: Json = {"phase": phase}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def workload(
    name: str,
    *,
    queue: str = "cpu",
    created: str = T0,
    reserved: str | None = None,
    finished: str | None = None,
    pending_reason: str = "",
    usage: dict[str, str] | None = None,
    flavors: dict[str, str] | None = None,
    cq: str = "cq",
    namespace: str = "ns",
    evicted: str | None = None,
) -> Json:
    conds: list[Json] = []
    status: Json = {}
    if reserved:
        conds.append(
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "lastTransitionTime": reserved,
            }
        )
        conds.append(
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "lastTransitionTime": reserved,
            }
        )
        status["admission"] = {
            "clusterQueue": cq,
            "podSetAssignments": [
                {
                    "name": "abcd1234",
                    "flavors": flavors or {"cpu": "default"},
                    "resourceUsage": usage or {"cpu": "2"},
                    "count": 1,
                }
            ],
        }
    elif pending_reason:
        conds.append(
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": pending_reason,
                "message": "couldn't assign flavors",
                "lastTransitionTime": created,
            }
        )
    if evicted:  # Kueue: QuotaReserved=False and Evicted=True, admission removed
        conds.append(
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "lastTransitionTime": evicted,
            }
        )
    if finished:
        conds.append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "lastTransitionTime": finished,
            }
        )
    status["conditions"] = conds
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"wl-{name}",
            "creationTimestamp": created,
        },
        "spec": {"queueName": queue},
        "status": status,
    }


def cluster_queue(
    name: str,
    nominal: dict[str, dict[str, str]],
    *,
    reserved: dict[str, dict[str, str]] | None = None,
    cohort: str = "",
    admitted: int = 0,
    pending: int = 0,
) -> Json:
    """A Kueue v1beta2 ClusterQueue: ``nominal`` and ``reserved`` are {flavor: {resource: qty}}
    (one resource group), as ``spec.resourceGroups`` and ``status.flavorsReservation``."""
    covered = sorted({r for res in nominal.values() for r in res})
    spec: Json = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": covered,
                "flavors": [
                    {
                        "name": flavor,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in res.items()],
                    }
                    for flavor, res in nominal.items()
                ],
            }
        ],
    }
    if cohort:
        spec["cohortName"] = cohort
    status: Json = {
        "admittedWorkloads": admitted,
        "pendingWorkloads": pending,
        "reservingWorkloads": admitted,
        "flavorsReservation": [
            {
                "name": flavor,
                "resources": [{"name": r, "total": q, "borrowed": "0"} for r, q in res.items()],
            }
            for flavor, res in (reserved or {}).items()
        ],
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name, "uid": f"cq-{name}"},
        "spec": spec,
        "status": status,
    }


def local_queue(name: str, cq: str, *, namespace: str = "ns") -> Json:
    """A Kueue v1beta2 LocalQueue pointing at ClusterQueue ``cq``."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace, "uid": f"lq-{namespace}-{name}"},
        "spec": {"clusterQueue": cq},
    }
