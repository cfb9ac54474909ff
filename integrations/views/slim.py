"""What the controller's caches keep of each object (client-go's informer ``SetTransform``). Pure.

A watch delivers whole objects; the caches keep only the fields the reconcile reads, so memory
stays flat in the number of TrainJobs (docs/benchmarks.md), and a change to the other fields
is no reconcile (``informer.same_but_version``): of a pod's seven updates on a run, three touch
only dropped fields. Everywhere: ``managedFields`` go.

- Pod: metadata but ``finalizers`` (Kueue's, taken off when its Workload finishes) and Argo's
  ``workflows.argoproj.io/completed`` label; ``spec.schedulingGates``; ``status.phase`` and the
  ``Ready`` and disruption conditions (``disruption.MARKS``: reason and time too) -- no
  containers, volumes, container statuses or other conditions (``PodScheduled``, ...);
- Workflow: metadata; ``spec`` entrypoint, suspend, shutdown and each template's name, metadata
  and dag (pod templates' containers and podSpecPatch go); ``status`` phase, message, times and
  nodes reduced to name, type, phase, message, start and finish times and ``outputs.exitCode``,
  ``compressedNodes``
  decoded once here instead of on every reconcile;
- Workload: metadata but ``finalizers``; ``spec.queueName``; ``status.admission``,
  ``schedulingStats`` and the conditions ``quota.step_quota`` reads (``QuotaReserved``,
  ``Admitted``, ``Finished``, ``Evicted``; not ``PodsReady``), podSets' pod templates gone;
- TrainJob: everything but ``managedFields`` (its spec is rendered from).
"""

from __future__ import annotations

from typing import Any

from trainweave.integrations.views.argo_nodes import decode_nodes
from trainweave.integrations.views.disruption import MARKS

Json = dict[str, Any]
_NODE_FIELDS = ("name", "type", "phase", "message", "startedAt", "finishedAt")
_WF_STATUS = ("phase", "message", "startedAt", "finishedAt", "offloadNodeStatusVersion")
_POD_CONDITIONS = ("Ready", *MARKS)
_WORKLOAD_CONDITIONS = ("QuotaReserved", "Admitted", "Finished", "Evicted")
_WORKLOAD_STATUS = ("admission", "schedulingStats")
ARGO_COMPLETED = "workflows.argoproj.io/completed"  # Argo's bookkeeping label on a done pod


def metadata(obj: Json, *drop: str) -> Json:
    """``metadata`` without ``managedFields`` (and the ``drop`` keys)."""
    meta = dict(obj.get("metadata") or {})
    for key in ("managedFields", *drop):
        meta.pop(key, None)
    return meta


def pod(obj: Json) -> Json:
    """A Pod as the caches keep it."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    meta = metadata(obj, "finalizers")
    if ARGO_COMPLETED in (meta.get("labels") or {}):
        meta["labels"] = {k: v for k, v in meta["labels"].items() if k != ARGO_COMPLETED}
    out: Json = {**_head(obj), "metadata": meta, "spec": {}, "status": {}}
    if spec.get("schedulingGates"):
        out["spec"]["schedulingGates"] = [{"name": g.get("name")} for g in spec["schedulingGates"]]
    if "phase" in status:
        out["status"]["phase"] = status["phase"]
    conds = [
        _condition(c) for c in status.get("conditions") or [] if c.get("type") in _POD_CONDITIONS
    ]
    if conds:
        out["status"]["conditions"] = conds
    return out


def _condition(cond: Json) -> Json:
    keep = ("reason", "lastTransitionTime") if cond.get("type") in MARKS else ()
    out = {"type": cond.get("type"), "status": cond.get("status")}
    return out | {k: cond[k] for k in keep if k in cond}


def workflow(obj: Json) -> Json:
    """A Workflow as the caches keep it."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    slim_spec: Json = {k: spec[k] for k in ("entrypoint", "suspend", "shutdown") if k in spec}
    slim_spec["templates"] = [
        {k: t[k] for k in ("name", "metadata", "dag") if k in t}
        for t in spec.get("templates") or []
    ]
    slim_status: Json = {k: status[k] for k in _WF_STATUS if k in status}
    nodes = decode_nodes(status)
    if nodes:
        slim_status["nodes"] = {nid: _node(n) for nid, n in nodes.items()}
    elif nodes is None and status.get("compressedNodes"):
        slim_status["compressedNodes"] = status["compressedNodes"]  # undecodable: kept as is
    return {**_head(obj), "metadata": metadata(obj), "spec": slim_spec, "status": slim_status}


def _node(node: Json) -> Json:
    out = {k: node[k] for k in _NODE_FIELDS if k in node}
    code = (node.get("outputs") or {}).get("exitCode")
    if code is not None:
        out["outputs"] = {"exitCode": code}
    return out


def workload(obj: Json) -> Json:
    """A Kueue Workload as the caches keep it."""
    spec = obj.get("spec") or {}
    slim_spec = {"queueName": spec["queueName"]} if "queueName" in spec else {}
    out = {**_head(obj), "metadata": metadata(obj, "finalizers"), "spec": slim_spec}
    if "status" in obj:
        status = obj["status"] or {}
        kept = {k: status[k] for k in _WORKLOAD_STATUS if k in status}
        conds = [c for c in status.get("conditions") or [] if c.get("type") in _WORKLOAD_CONDITIONS]
        out["status"] = kept | ({"conditions": conds} if conds else {})
    return out


def trainjob(obj: Json) -> Json:
    """A TrainJob as the caches keep it."""
    return {**obj, "metadata": metadata(obj)}


def _head(obj: Json) -> Json:
    return {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
