"""What the controller's caches keep of each object (client-go's informer ``SetTransform``). Pure.

A watch delivers whole objects; the caches keep only the fields the reconcile reads, so memory
stays flat in the number of TrainJobs (docs/benchmarks.md). Everywhere: ``managedFields`` go.

- Pod: metadata; ``spec.schedulingGates``; ``status.phase`` and ``status.conditions`` (type,
  status; reason and time too for the disruption conditions, ``disruption.MARKS``) -- no
  containers, volumes or container statuses;
- Workflow: metadata; ``spec`` entrypoint, suspend, shutdown and each template's name, metadata
  and dag (pod templates' containers and podSpecPatch go); ``status`` phase, message, times and
  nodes reduced to name, type, phase, message, start and finish times and ``outputs.exitCode``,
  ``compressedNodes``
  decoded once here instead of on every reconcile;
- Workload: metadata, ``spec.queueName``, ``status`` (podSets' pod templates go);
- TrainJob: everything but ``managedFields`` (its spec is rendered from).
"""

from __future__ import annotations

from typing import Any

from trainweave.integrations.views.argo_nodes import decode_nodes
from trainweave.integrations.views.disruption import MARKS

Json = dict[str, Any]
_NODE_FIELDS = ("name", "type", "phase", "message", "startedAt", "finishedAt")
_WF_STATUS = ("phase", "message", "startedAt", "finishedAt", "offloadNodeStatusVersion")


def metadata(obj: Json) -> Json:
    """``metadata`` without ``managedFields``."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    return meta


def pod(obj: Json) -> Json:
    """A Pod as the caches keep it."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    out: Json = {**_head(obj), "metadata": metadata(obj), "spec": {}, "status": {}}
    if spec.get("schedulingGates"):
        out["spec"]["schedulingGates"] = [{"name": g.get("name")} for g in spec["schedulingGates"]]
    if "phase" in status:
        out["status"]["phase"] = status["phase"]
    if status.get("conditions"):
        out["status"]["conditions"] = [_condition(c) for c in status["conditions"]]
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
    out = {**_head(obj), "metadata": metadata(obj), "spec": slim_spec}
    if "status" in obj:
        out["status"] = obj["status"]
    return out


def trainjob(obj: Json) -> Json:
    """A TrainJob as the caches keep it."""
    return {**obj, "metadata": metadata(obj)}


def _head(obj: Json) -> Json:
    return {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
