"""The pods Argo v4.0.7 will create for a rendered Workflow, predicted before it exists. Pure.

One pod per pod template of every step the Workflow runs (the first slot of each replicatedJob:
slots differ only in their ``replica``/``index``/``rank`` parameters), built as
``workflow/controller/workflowpod.go`` ``createWorkflowPod`` builds it with the emissary
executor and a default workflow-controller configuration:

- name ``<wf>-<template>-<fnv32a(node name)>`` (``workflow/util/pod_name.go``, pod names v2;
  the prefix cut at 242 characters), node name ``<wf>.<step>.<slot>`` and ``(0)`` for the first
  attempt under a ``retryStrategy``, node id ``<wf>-<fnv32a(node name)>``
  (``Workflow.NodeID``);
- labels ``workflows.argoproj.io/workflow`` and ``workflows.argoproj.io/completed: "false"``,
  then the template's own (queue, pod group, trainweave's and JobSet's); annotations
  ``workflows.argoproj.io/node-name``, ``node-id``, ``kubectl.kubernetes.io/default-container``,
  then the template's (pod-group total count, ...); ``{{inputs.parameters.*}}`` substituted;
- ``restartPolicy: Never``; volumes ``var-run-argo`` and ``tmp-dir-argo`` (emptyDir) before the
  template's; the ``init`` init container and the ``wait`` container (``ArgoExecutor``: image,
  resources and securityContext of the controller's ``executor`` config, none by default), each
  main container's command behind ``/var/run/argo/argoexec emissary ... --`` with the
  ``var-run-argo`` mount and Argo's env; the template's nodeSelector, affinity, tolerations,
  schedulerName, priorityClassName, serviceAccountName (else the Workflow's),
  automountServiceAccountToken, securityContext, hostAliases, activeDeadlineSeconds; then the
  template's ``podSpecPatch`` as a strategic merge patch (``util.ApplyPodSpecPatch``).

What differs from the pod Argo creates, none of it judged by admission in practice: no
ownerReference to the Workflow (it has no uid yet); no Workflow deadline in ``ARGO_DEADLINE``;
a container without a command gets no entrypoint looked up from its image's registry. Kueue's
own marks (the ``kueue.x-k8s.io/admission`` scheduling gate, the ``kueue.x-k8s.io/managed``
label) are not set here: Kueue's pod webhook sets them on the pod Argo creates, and does the
same inside a ``dryRun=All`` create.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from trainweave.adapters.kueue.rolehash import ARGO_EXECUTOR_IMAGE
from trainweave.adapters.trainjob.strategic import merge_pod_spec

Json = dict[str, Any]
VAR_RUN_ARGO = "/var/run/argo"
_MAX_PREFIX = 253 - 10 - 1  # pod_name.go: maxK8sResourceNameLength - k8sNamingHashLength - 1
_SCHEDULING = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulerName",
    "priorityClassName",
    "automountServiceAccountToken",
    "securityContext",
    "hostAliases",
    "activeDeadlineSeconds",
)


@dataclass(frozen=True)
class ArgoExecutor:
    """The workflow-controller configuration's ``executor`` (image, resources, securityContext)
    and executor log options, as the ``init`` and ``wait`` containers get them."""

    image: str = ARGO_EXECUTOR_IMAGE
    resources: Json = field(default_factory=dict)
    security_context: Json = field(default_factory=dict)
    log_options: tuple[str, ...] = (
        "--loglevel",
        "info",
        "--log-format",
        "text",
        "--gloglevel",
        "0",
    )


@dataclass(frozen=True)
class StepPod:
    """One pod Argo will create: its step, its pod template (the replicatedJob) and the pod."""

    step: str
    job: str
    pod: Json


def fnv32a(text: str) -> int:
    """Go's ``hash/fnv`` New32a over ``text``'s UTF-8 bytes."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def pod_name(workflow: str, node: str, template: str) -> str:
    """``util.GeneratePodName`` (v2)."""
    if workflow == node:
        return workflow
    prefix = f"{workflow}-{template}" if template else workflow
    return f"{prefix[:_MAX_PREFIX]}-{fnv32a(node)}"


def node_id(workflow: str, node: str) -> str:
    """``Workflow.NodeID``."""
    return workflow if node == workflow else f"{workflow}-{fnv32a(node)}"


def step_pods(workflow: Json, executor: ArgoExecutor | None = None) -> list[StepPod]:
    """The first pod of each pod template of each step the Workflow's entrypoint DAG runs."""
    executor = executor or ArgoExecutor()
    spec = workflow.get("spec") or {}
    templates = {t.get("name"): t for t in spec.get("templates") or []}
    entry = templates.get(spec.get("entrypoint")) or {}
    out = []
    for task in (entry.get("dag") or {}).get("tasks") or []:
        step = str(task.get("name"))
        seen: set[str] = set()
        for slot in ((templates.get(task.get("template")) or {}).get("dag") or {}).get(
            "tasks"
        ) or []:
            name = str(slot.get("template"))
            tmpl = templates.get(name)
            if name in seen or tmpl is None:
                continue
            seen.add(name)
            params = {
                str(p.get("name")): str(p.get("value"))
                for p in (slot.get("arguments") or {}).get("parameters") or []
            }
            node = f"{workflow['metadata']['name']}.{step}.{slot.get('name')}"
            if tmpl.get("retryStrategy") is not None:
                node += "(0)"
            out.append(StepPod(step, name, pod(workflow, tmpl, node, params, executor)))
    return out


def _substitute(tmpl: Json, params: dict[str, str]) -> Json:
    """``tmpl`` with ``{{inputs.parameters.<name>}}`` replaced by the task's arguments."""
    text = json.dumps(tmpl)
    for name, value in params.items():
        text = text.replace("{{inputs.parameters." + name + "}}", json.dumps(value)[1:-1])
    out: Json = json.loads(text)
    return out


def _argo_env(name: str, node: str, template: Json | None) -> list[Json]:
    env = [{"name": "ARGO_CONTAINER_NAME", "value": name}]
    if template is not None:
        env.append({"name": "ARGO_TEMPLATE", "value": json.dumps(template, sort_keys=True)})
    return [
        *env,
        {"name": "ARGO_NODE_ID", "value": node},
        {"name": "ARGO_INCLUDE_SCRIPT_OUTPUT", "value": "false"},
        {"name": "ARGO_DEADLINE", "value": "0001-01-01T00:00:00Z"},
    ]


def _exec_container(name: str, executor: ArgoExecutor, workflow: str) -> Json:
    """``newExecContainer``: the executor image, its config, the pod's own identity env."""
    c: Json = {
        "name": name,
        "image": executor.image,
        "command": ["argoexec", name, *executor.log_options],
        "env": [
            {"name": "ARGO_POD_NAME", "valueFrom": {"fieldRef": _field("metadata.name")}},
            {"name": "ARGO_POD_UID", "valueFrom": {"fieldRef": _field("metadata.uid")}},
            {"name": "GODEBUG", "value": "x509ignoreCN=0"},
            {"name": "ARGO_WORKFLOW_NAME", "value": workflow},
            {"name": "ARGO_CONTAINER_RUNTIME_EXECUTOR", "value": "emissary"},
        ],
    }
    if executor.resources:
        c["resources"] = copy.deepcopy(executor.resources)
    if executor.security_context:
        c["securityContext"] = copy.deepcopy(executor.security_context)
    return c


def _field(path: str) -> Json:
    return {"apiVersion": "v1", "fieldPath": path}


def pod(
    workflow: Json, tmpl: Json, node: str, params: dict[str, str], executor: ArgoExecutor
) -> Json:
    """The pod Argo creates for pod template ``tmpl`` at node ``node`` (see the module doc)."""
    wf_meta = workflow["metadata"]
    wf_name, ns = str(wf_meta["name"]), wf_meta.get("namespace")
    t = _substitute(tmpl, params)
    nid = node_id(wf_name, node)
    simplified = {k: v for k, v in t.items() if k != "inputs"}
    mains = (
        [dict(t["container"], name="main")]
        if "container" in t
        else [dict(c) for c in (t.get("containerSet") or {}).get("containers") or []]
    )
    var_run = {"name": "var-run-argo", "mountPath": VAR_RUN_ARGO}
    init = _exec_container("init", executor, wf_name)
    init["env"] += _argo_env("init", nid, simplified)
    wait = _exec_container("wait", executor, wf_name)
    wait["env"] += _argo_env("wait", nid, None)
    wait["volumeMounts"] = [{"name": "tmp-dir-argo", "mountPath": "/tmp", "subPath": "0"}, var_run]
    containers = [wait]
    for c in mains:
        wrapper = [f"{VAR_RUN_ARGO}/argoexec", "emissary", *executor.log_options, "--"]
        c["command"] = [*wrapper, *(c.get("command") or [])]
        c["env"] = list(c.get("env") or []) + _argo_env(str(c["name"]), nid, None)
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), var_run]
        containers.append(c)
    inits = [init] + [dict(c) for c in t.get("initContainers") or []]
    for c in inits:
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), var_run]
    default = "main" if any(c["name"] == "main" for c in containers) else containers[-1]["name"]
    metadata = t.get("metadata") or {}
    spec: Json = {
        "restartPolicy": "Never",
        "volumes": [
            {"name": "var-run-argo", "emptyDir": {}},
            {"name": "tmp-dir-argo", "emptyDir": {}},
            *(t.get("volumes") or []),
        ],
        "initContainers": inits,
        "containers": containers,
    }
    for key in _SCHEDULING:
        if key in t:
            spec[key] = t[key]
    sa = t.get("serviceAccountName") or (workflow.get("spec") or {}).get("serviceAccountName")
    if sa:
        spec["serviceAccountName"] = sa
    if t.get("podSpecPatch"):
        spec = merge_pod_spec(spec, json.loads(t["podSpecPatch"]))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(wf_name, node, str(t.get("name") or "")),
            "namespace": ns,
            "labels": {
                "workflows.argoproj.io/workflow": wf_name,
                "workflows.argoproj.io/completed": "false",
                **(metadata.get("labels") or {}),
            },
            "annotations": {
                "workflows.argoproj.io/node-name": node,
                "workflows.argoproj.io/node-id": nid,
                "kubectl.kubernetes.io/default-container": default,
                **(metadata.get("annotations") or {}),
            },
        },
        "spec": spec,
    }
