"""The pods Argo v4.0.7 will create for a rendered Workflow, predicted before it exists. Pure.

One pod per pod template of every step the Workflow runs (the first slot of each replicatedJob:
slots differ only in their ``replica``/``index``/``rank`` parameters), built as
``workflow/controller/workflowpod.go`` ``createWorkflowPod`` builds it with the emissary
executor:

- name ``<wf>-<template>-<fnv32a(node name)>`` (``workflow/util/pod_name.go``, pod names v2;
  the prefix cut at 242 characters), node name ``<wf>.<step>.<slot>`` and ``(0)`` for the first
  attempt under a ``retryStrategy``, node id ``<wf>-<fnv32a(node name)>``
  (``Workflow.NodeID``);
- labels ``workflows.argoproj.io/workflow`` and ``workflows.argoproj.io/completed: "false"``,
  then the template's own (queue, pod group, trainweave's and JobSet's); annotations
  ``workflows.argoproj.io/node-name``, ``node-id``, ``kubectl.kubernetes.io/default-container``,
  then the template's (pod-group total count, ...); ``{{inputs.parameters.*}}`` substituted;
- ``restartPolicy: Never``; volumes ``var-run-argo`` and ``tmp-dir-argo`` (emptyDir) before the
  template's; the ``init`` init container and the ``wait`` container, each main container's
  command behind ``/var/run/argo/argoexec emissary ... --`` with the ``var-run-argo`` mount and
  Argo's env; the template's nodeSelector, affinity, tolerations, schedulerName,
  priorityClassName, serviceAccountName, automountServiceAccountToken, securityContext,
  hostAliases, activeDeadlineSeconds, each else the Workflow's (``addSchedulingConstraints``,
  ``setupServiceAccount``); then the Workflow's and the template's ``podSpecPatch`` as strategic
  merge patches (``util.ApplyPodSpecPatch``).

The workflow-controller's configuration (``ArgoExecutor``; ``controller_config`` reads it from
Argo's ConfigMap, Argo's defaults without it) goes in as v4.1.4 puts it (v4.0.7 the same):
``executor``'s image, imagePullPolicy, resources, securityContext, args and env on ``init`` and
``wait`` (``newExecContainer``, ``workflow/controller/workflowpod.go:1280-1323``;
``createEnvVars`` :1212-1250); ``mainContainer`` merged under each main container
(``defaults.main_container``, :415-443); ``kubeConfig``'s Secret volume, mount and
``--kubeconfig`` argument (:1261-1278, :1299-1312); ``instanceID``'s label (:518-520) and env;
``workflowDefaults``' pod-level spec fields merged under the Workflow's
(``defaults.workflow_spec``, ``workflow/util/merge.go:192-231``).

What differs from the pod Argo creates, none of it judged by admission in practice: no
ownerReference to the Workflow (it has no uid yet, nor has ``ARGO_WORKFLOW_UID``); no Workflow
deadline in ``ARGO_DEADLINE``; a container without a command gets no entrypoint looked up from
its image's registry; the workflow-controller's own flags (``--executor-image``,
``--executor-image-pull-policy``, ``--log-format``) are not known here. Kueue's
own marks (the ``kueue.x-k8s.io/admission`` scheduling gate, the ``kueue.x-k8s.io/managed``
label) are not set here: Kueue's pod webhook sets them on the pod Argo creates, and does the
same inside a ``dryRun=All`` create.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from trainweave.adapters.argo import defaults
from trainweave.adapters.kueue.rolehash import ARGO_EXECUTOR_IMAGE
from trainweave.adapters.trainjob.strategic import merge_pod_spec

Json = dict[str, Any]
VAR_RUN_ARGO = "/var/run/argo"
_MAX_PREFIX = 253 - 10 - 1  # pod_name.go: maxK8sResourceNameLength - k8sNamingHashLength - 1
# argo-workflows v4.1.4 workflow/common/common.go:79 and :233-234
INSTANCE_ID_LABEL = "workflows.argoproj.io/controller-instanceid"
KUBECONFIG_VOLUME, KUBECONFIG_PATH = "kubeconfig", "/kube/config"


@dataclass(frozen=True)
class ArgoExecutor:
    """The workflow-controller configuration every step pod is built with (the module doc;
    ``controller_config.argo_executor`` maps Argo's ConfigMap onto it); Argo's defaults when
    left empty.

    ``image`` .. ``env``: the ``executor`` container settings ``init`` and ``wait`` get (``env``
    after Argo's own); ``log_options``: the emissary's flags; ``main_container``: the
    ``mainContainer`` defaults (None: not configured, as Argo's ``nil``); ``kube_config``: the
    ``kubeConfig`` (secretName, secretKey, volumeName, mountPath); ``instance_id``: the
    ``instanceID``; ``workflow_defaults``: the pod-level fields of ``workflowDefaults.spec``
    (``defaults.WORKFLOW_POD_FIELDS``)."""

    image: str = ARGO_EXECUTOR_IMAGE
    image_pull_policy: str = ""
    resources: Json = field(default_factory=dict)
    security_context: Json = field(default_factory=dict)
    args: tuple[str, ...] = ()
    env: tuple[Json, ...] = ()
    log_options: tuple[str, ...] = (
        "--loglevel",
        "info",
        "--log-format",
        "text",
        "--gloglevel",
        "0",
    )
    main_container: Json | None = None
    kube_config: Json | None = None
    instance_id: str = ""
    workflow_defaults: Json = field(default_factory=dict)


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
    retry = spec_for_pods(spec, executor).get("retryStrategy")
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
            if tmpl.get("retryStrategy") is not None or retry is not None:
                node += "(0)"  # operator.go:2488 retryStrategy: the template's, else the Workflow's
            out.append(StepPod(step, name, pod(workflow, tmpl, node, params, executor)))
    return out


def spec_for_pods(spec: Json, executor: ArgoExecutor) -> Json:
    """The Workflow spec's fields pods are built from (``defaults.WORKFLOW_POD_FIELDS``), with
    ``workflowDefaults``' under them (``MergeTo``: the Workflow wins)."""
    return defaults.workflow_spec(executor.workflow_defaults, spec)


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


def _exec_env(executor: ArgoExecutor, workflow: str) -> list[Json]:
    """``createEnvVars`` (workflowpod.go:1212-1250): the pod's and Workflow's identity (the
    Workflow's uid unknown yet: empty, which ``omitempty`` drops), the instance id, then
    ``executor.env``."""
    env: list[Json] = [
        {"name": "ARGO_POD_NAME", "valueFrom": {"fieldRef": _field("metadata.name")}},
        {"name": "ARGO_POD_UID", "valueFrom": {"fieldRef": _field("metadata.uid")}},
        {"name": "ARGO_WORKFLOW_NAME", "value": workflow},
        {"name": "ARGO_WORKFLOW_UID"},
    ]
    if executor.instance_id:
        env.append({"name": "ARGO_INSTANCE_ID", "value": executor.instance_id})
    return [*env, *copy.deepcopy(list(executor.env))]


def _exec_container(name: str, executor: ArgoExecutor, workflow: str) -> Json:
    """``newExecContainer`` (workflowpod.go:1280-1323): the executor image, pull policy, env,
    resources, securityContext and args of the ``executor`` config; ``kubeConfig``'s mount and
    argument."""
    c: Json = {
        "name": name,
        "image": executor.image,
        "command": ["argoexec", name, *executor.log_options],
        "env": _exec_env(executor, workflow),
    }
    if executor.image_pull_policy:
        c["imagePullPolicy"] = executor.image_pull_policy
    if executor.resources:
        c["resources"] = copy.deepcopy(executor.resources)
    if executor.security_context:
        c["securityContext"] = copy.deepcopy(executor.security_context)
    args = list(executor.args)
    if (kc := executor.kube_config) is not None:
        path = str(kc.get("mountPath") or KUBECONFIG_PATH)
        mount: Json = {"name": _kubeconfig_volume(kc), "mountPath": path, "readOnly": True}
        if kc.get("secretKey"):
            mount["subPath"] = kc["secretKey"]
        c["volumeMounts"] = [mount]
        args.append(f"--kubeconfig={path}")
    if args:
        c["args"] = args
    return c


def _kubeconfig_volume(kube_config: Json) -> str:
    """``kubeConfigVolumeName`` (workflowpod.go:1254-1259)."""
    return str(kube_config.get("volumeName") or KUBECONFIG_VOLUME)


def _volumes(executor: ArgoExecutor, t: Json) -> list[Json]:
    """``createVolumes`` (workflowpod.go:1261-1278): ``kubeConfig``'s Secret, Argo's two
    emptyDirs, the template's."""
    kc = executor.kube_config
    secret = (
        [{"name": _kubeconfig_volume(kc), "secret": {"secretName": kc.get("secretName", "")}}]
        if kc is not None
        else []
    )
    return [
        *secret,
        {"name": "var-run-argo", "emptyDir": {}},
        {"name": "tmp-dir-argo", "emptyDir": {}},
        *(t.get("volumes") or []),
    ]


# (pod field, template field, Workflow spec field, set when not None (a Go pointer) rather than
# when non-empty): addSchedulingConstraints, setupServiceAccount and build's pod resources
_EITHER = (
    ("nodeSelector", "nodeSelector", "nodeSelector", False),
    ("affinity", "affinity", "affinity", True),
    ("tolerations", "tolerations", "tolerations", False),
    ("schedulerName", "schedulerName", "schedulerName", False),
    ("priorityClassName", "priorityClassName", "podPriorityClassName", False),
    ("securityContext", "securityContext", "securityContext", True),
    ("serviceAccountName", "serviceAccountName", "serviceAccountName", False),
    ("resources", "podResources", "podResources", True),
)


def _set(value: Any, pointer: bool) -> bool:
    return value is not None if pointer else bool(value)


def _scheduling(spec: Json, t: Json, wf: Json) -> None:
    """``addSchedulingConstraints`` and ``setupServiceAccount`` (workflowpod.go:1348-1406,
    :1824-1840), ``addDNSConfig`` (:1337-1346), ``imagePullSecrets`` and ``hostNetwork``
    (:497, :512-514), ``podResources`` (:581-588): the template's, else the Workflow's;
    hostAliases the Workflow's then the template's; automountServiceAccountToken only when
    false."""
    for key, tmpl_key, wf_key, pointer in _EITHER:
        if _set(t.get(tmpl_key), pointer):
            spec[key] = t[tmpl_key]
        elif _set(wf.get(wf_key), pointer):
            spec[key] = wf[wf_key]
    if aliases := [*(wf.get("hostAliases") or []), *(t.get("hostAliases") or [])]:
        spec["hostAliases"] = aliases
    automount = t.get("automountServiceAccountToken")
    if automount is None:
        automount = wf.get("automountServiceAccountToken")
    if automount is False:
        spec["automountServiceAccountToken"] = False
    for key in ("imagePullSecrets", "dnsPolicy", "dnsConfig"):
        if wf.get(key):
            spec[key] = wf[key]
    if wf.get("hostNetwork"):
        spec["hostNetwork"] = True
    if "activeDeadlineSeconds" in t:
        spec["activeDeadlineSeconds"] = t["activeDeadlineSeconds"]


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
    wf = spec_for_pods(workflow.get("spec") or {}, executor)
    inits, containers = _containers(t, wf_name, nid, executor)
    default = "main" if any(c["name"] == "main" for c in containers) else containers[-1]["name"]
    spec: Json = {
        "restartPolicy": "Never",
        "volumes": _volumes(executor, t),
        "initContainers": inits,
        "containers": containers,
    }
    _scheduling(spec, t, wf)
    for patch in (wf.get("podSpecPatch"), t.get("podSpecPatch")):  # processPodSpecPatch :299
        if patch:
            spec = merge_pod_spec(spec, json.loads(patch))
    metadata = {
        "name": pod_name(wf_name, node, str(t.get("name") or "")),
        "namespace": ns,
        **_labels_annotations(t, wf, executor, wf_name, node, default),
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _mains(t: Json, executor: ArgoExecutor) -> list[Json]:
    """The main containers, named (``main`` unless a containerSet's), the ``mainContainer``
    defaults under each (workflowpod.go:415-443)."""
    mains = (
        [dict(t["container"], name="main")]
        if "container" in t
        else [dict(c) for c in (t.get("containerSet") or {}).get("containers") or []]
    )
    if executor.main_container is None:
        return mains
    return [defaults.main_container(executor.main_container, c) for c in mains]


def _containers(
    t: Json, wf_name: str, nid: str, executor: ArgoExecutor
) -> tuple[list[Json], list[Json]]:
    """The init containers (``init``, the template's) and containers (``wait``, the mains
    behind the emissary), with Argo's mounts and env."""
    simplified = {k: v for k, v in t.items() if k != "inputs"}
    var_run = {"name": "var-run-argo", "mountPath": VAR_RUN_ARGO}
    init = _exec_container("init", executor, wf_name)
    init["env"] += _argo_env("init", nid, simplified)
    wait = _exec_container("wait", executor, wf_name)
    wait["env"] += _argo_env("wait", nid, None)
    tmp = {"name": "tmp-dir-argo", "mountPath": "/tmp", "subPath": "0"}  # :776-783
    wait["volumeMounts"] = [*(wait.get("volumeMounts") or []), tmp, var_run]
    containers = [wait]
    for c in _mains(t, executor):
        wrapper = [f"{VAR_RUN_ARGO}/argoexec", "emissary", *executor.log_options, "--"]
        c["command"] = [*wrapper, *(c.get("command") or [])]
        c["env"] = list(c.get("env") or []) + _argo_env(str(c["name"]), nid, None)
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), var_run]
        containers.append(c)
    inits = [init] + [dict(c) for c in t.get("initContainers") or []]
    for c in inits:
        c["volumeMounts"] = [*(c.get("volumeMounts") or []), var_run]
    return inits, containers


def _labels_annotations(
    t: Json, wf: Json, executor: ArgoExecutor, wf_name: str, node: str, default: str
) -> Json:
    """Argo's labels and annotations, the instance id, then the Workflow's ``podMetadata``
    and the template's (``addMetadata``, workflowpod.go:1325-1335)."""
    nid = node_id(wf_name, node)
    pod_meta, metadata = wf.get("podMetadata") or {}, t.get("metadata") or {}
    instance = {INSTANCE_ID_LABEL: executor.instance_id} if executor.instance_id else {}
    return {
        "labels": {
            "workflows.argoproj.io/workflow": wf_name,
            "workflows.argoproj.io/completed": "false",
            **instance,
            **(pod_meta.get("labels") or {}),
            **(metadata.get("labels") or {}),
        },
        "annotations": {
            "workflows.argoproj.io/node-name": node,
            "workflows.argoproj.io/node-id": nid,
            "kubectl.kubernetes.io/default-container": default,
            **(pod_meta.get("annotations") or {}),
            **(metadata.get("annotations") or {}),
        },
    }
