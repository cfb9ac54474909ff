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
- Workload: metadata but ``finalizers``; ``spec.queueName`` and ``spec.active``;
  ``status.admission``, ``schedulingStats``, the conditions ``quota.step_quota`` reads
  (``QuotaReserved``, ``Admitted``, ``Finished``, ``Evicted``; not ``PodsReady``) and each
  admission check's name, state, message, retry count and podSetUpdates' annotations
  (``checks``), podSets' pod templates gone;
- TrainJob: everything but ``managedFields`` (its spec is rendered from).

The caches are also where the shapes the API server admits but the controller does not read are
left behind: a Workflow's ``spec`` and ``status`` are whatever its CRD lets anyone who may patch
it write (Argo's minimal CRD: any object; the full one has no status subresource), so a kept
field of the wrong type goes, a template or DAG task without a string name goes, a node that is no
mapping goes, and ``compressedNodes`` that does not decode is unknown (``argo_nodes``). Each
transform is total: any object in, a well-typed one out, never an exception
(``tests/unit/test_hostile_objects.py``).
"""

from __future__ import annotations

from typing import Any

from trainweave.integrations.views.read.argo_nodes import decode_nodes
from trainweave.integrations.views.read.disruption import MARKS
from trainweave.states import KueueCondition

Json = dict[str, Any]
_NODE_FIELDS = ("name", "type", "phase", "message", "startedAt", "finishedAt")
_WF_STATUS = ("phase", "message", "startedAt", "finishedAt", "offloadNodeStatusVersion")
_POD_CONDITIONS = ("Ready", *MARKS)
_WORKLOAD_CONDITIONS = tuple(KueueCondition)
_WORKLOAD_STATUS = ("admission", "schedulingStats")
_CHECK_FIELDS = ("name", "state", "message")
ARGO_COMPLETED = "workflows.argoproj.io/completed"  # Argo's bookkeeping label on a done pod


def _obj(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[Json]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _strs(value: Any) -> dict[str, str]:
    """A ``map[string]string``: the string entries of a mapping."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _kept(src: Json, keys: tuple[str, ...], kind: type = str) -> Json:
    """The ``keys`` of ``src`` whose values are of ``kind``."""
    return {k: src[k] for k in keys if isinstance(src.get(k), kind)}


def metadata(obj: Json, *drop: str) -> Json:
    """``metadata`` without ``managedFields`` (and the ``drop`` keys)."""
    meta = dict(_obj(obj.get("metadata")))
    for key in ("managedFields", *drop):
        meta.pop(key, None)
    for key in ("labels", "annotations"):
        if key in meta:
            meta[key] = _strs(meta[key])
    return meta


def pod(obj: Json) -> Json:
    """A Pod as the caches keep it."""
    spec = _obj(obj.get("spec"))
    status = _obj(obj.get("status"))
    meta = metadata(obj, "finalizers")
    if ARGO_COMPLETED in (meta.get("labels") or {}):
        meta["labels"] = {k: v for k, v in meta["labels"].items() if k != ARGO_COMPLETED}
    out: Json = {**_head(obj), "metadata": meta, "spec": {}, "status": _kept(status, ("phase",))}
    gates = [{"name": g["name"]} for g in _dicts(spec.get("schedulingGates")) if _str(g, "name")]
    if gates:
        out["spec"]["schedulingGates"] = gates
    conds = [_condition(c) for c in _dicts(status.get("conditions")) if _type(c) in _POD_CONDITIONS]
    if conds:
        out["status"]["conditions"] = conds
    return out


def _str(obj: Json, key: str) -> bool:
    return isinstance(obj.get(key), str)


def _type(cond: Json) -> str:
    """A condition's ``type`` ("" when it is no string)."""
    ctype = cond.get("type")
    return ctype if isinstance(ctype, str) else ""


def _condition(cond: Json) -> Json:
    keep = ("reason", "lastTransitionTime") if _type(cond) in MARKS else ()
    status = cond.get("status")
    out = {"type": _type(cond), "status": status if isinstance(status, str) else None}
    return out | _kept(cond, keep)


def workflow(obj: Json) -> Json:
    """A Workflow as the caches keep it."""
    spec = _obj(obj.get("spec"))
    status = _obj(obj.get("status"))
    slim_spec: Json = _kept(spec, ("entrypoint", "shutdown")) | _kept(spec, ("suspend",), bool)
    slim_spec["templates"] = [
        _template(t) for t in _dicts(spec.get("templates")) if _str(t, "name")
    ]
    slim_status: Json = _kept(status, _WF_STATUS)
    nodes = decode_nodes(status)
    if nodes:
        slim_status["nodes"] = {nid: _node(n) for nid, n in nodes.items()}
    elif nodes is None and _str(status, "compressedNodes") and status["compressedNodes"]:
        slim_status["compressedNodes"] = status["compressedNodes"]  # undecodable: kept as is
    return {**_head(obj), "metadata": metadata(obj), "spec": slim_spec, "status": slim_status}


def _template(tpl: Json) -> Json:
    """A template's name, labels and annotations, and its DAG's tasks (name, template and
    string parameters)."""
    out: Json = {"name": tpl["name"]}
    meta = _obj(tpl.get("metadata"))
    kept = {k: _strs(meta[k]) for k in ("labels", "annotations") if k in meta}
    if kept:
        out["metadata"] = kept
    if isinstance(tpl.get("dag"), dict):
        tasks = _dicts(tpl["dag"].get("tasks"))
        out["dag"] = {"tasks": [_task(t) for t in tasks if _str(t, "name")]}
    return out


def _task(task: Json) -> Json:
    out: Json = _kept(task, ("name", "template"))
    params = [
        _kept(p, ("name", "value"))
        for p in _dicts(_obj(task.get("arguments")).get("parameters"))
        if _str(p, "name")
    ]
    if params:
        out["arguments"] = {"parameters": params}
    return out


def _node(node: Json) -> Json:
    out = _kept(node, _NODE_FIELDS)
    code = _obj(node.get("outputs")).get("exitCode")
    if isinstance(code, str | int) and not isinstance(code, bool):
        out["outputs"] = {"exitCode": code}
    return out


def workload(obj: Json) -> Json:
    """A Kueue Workload as the caches keep it."""
    spec = _obj(obj.get("spec"))
    out = {
        **_head(obj),
        "metadata": metadata(obj, "finalizers"),
        "spec": _kept(spec, ("queueName",)) | _kept(spec, ("active",), bool),
    }
    if "status" in obj:
        status = _obj(obj["status"])
        kept = _kept(status, _WORKLOAD_STATUS, dict)
        conds = [c for c in _dicts(status.get("conditions")) if _type(c) in _WORKLOAD_CONDITIONS]
        found = [_check(c) for c in _dicts(status.get("admissionChecks")) if _str(c, "name")]
        out["status"] = (
            kept
            | ({"conditions": conds} if conds else {})
            | ({"admissionChecks": found} if found else {})
        )
    return out


def _check(check: Json) -> Json:
    """An admission check's state: name, state, message, retry count, and the annotations of
    its podSetUpdates (the ProvisioningRequest its pods consume)."""
    out = _kept(check, _CHECK_FIELDS)
    count = check.get("retryCount")
    if isinstance(count, int) and not isinstance(count, bool):
        out["retryCount"] = count
    updates = [
        {"name": u["name"], "annotations": _strs(u.get("annotations"))}
        for u in _dicts(check.get("podSetUpdates"))
        if _str(u, "name") and _strs(u.get("annotations"))
    ]
    if updates:
        out["podSetUpdates"] = updates
    return out


def trainjob(obj: Json) -> Json:
    """A TrainJob as the caches keep it."""
    return {**obj, "metadata": metadata(obj)}


def _head(obj: Json) -> Json:
    return _kept(obj, ("apiVersion", "kind"))
