"""The Kubernetes objects of the ProvisioningRequest stand-in (hack/provisioner.py), read into
hack/provisioner_model.py's values and written back from its actions. Pure: JSON dicts in and
out, no API server.

ProvisioningRequest: ``autoscaling.x-k8s.io/v1`` (the CRD ``config/crd/
autoscaling.x-k8s.io_provisioningrequests.yaml`` of the module
k8s.io/autoscaler/cluster-autoscaler/apis that Kueue v0.19.2 pins). Its pods are read from the
PodTemplates Kueue makes (``ppt-<request>-<podset>``), requests as Kueue counts them
(``adapters.kueue.podsets.effective_requests``). A pod consumes a request by the annotation
``autoscaling.x-k8s.io/consume-provisioning-request`` (``processors/provreq/pods_filter.go:99-108``
of cluster-autoscaler 1.36.1; the deprecated ``cluster-autoscaler.kubernetes.io`` key too).
New nodes copy the e2e pool's kwok node (``engine_config.node_manifests``).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from engine_config import POOL_LABEL, node_manifests
from provisioner_fit import NodeShape, PodShape, Taint, Toleration
from provisioner_model import (
    Condition,
    CreateNode,
    Node,
    Plan,
    Pod,
    RecordPlan,
    Request,
    SetConditions,
)

from trainweave.adapters.kueue.podsets import effective_requests
from trainweave.quantity import parse

Json = dict[str, Any]
GROUP, VERSION, PLURAL = "autoscaling.x-k8s.io", "v1", "provisioningrequests"
CONSUME = "autoscaling.x-k8s.io/consume-provisioning-request"
CONSUME_DEPRECATED = "cluster-autoscaler.kubernetes.io/consume-provisioning-request"
# Ours: the plan of a scale-up on the request, the request a node was made for, and a request a
# test wants revoked (fault injection).
PLAN = "provisioner.trainweave.test/plan"
OWNER = "provisioner.trainweave.test/for"
REVOKE = "provisioner.trainweave.test/revoke"
NODE_LABEL = "provisioner.trainweave.test/node"
TERMINAL = ("Succeeded", "Failed")


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def format_time(at: float) -> str:
    """RFC 3339 in whole seconds, as metav1.Time is written."""
    return datetime.fromtimestamp(int(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def template_names(obj: Json) -> list[str]:
    """The PodTemplates a ProvisioningRequest names, in PodSet order."""
    return [ps["podTemplateRef"]["name"] for ps in obj["spec"].get("podSets") or []]


def pod_shape(spec: Json) -> PodShape:
    """A pod spec as the simulation sees it."""
    return PodShape(
        {k: parse(v) for k, v in effective_requests(spec).items()},
        dict(spec.get("nodeSelector") or {}),
        tuple(
            Toleration(
                t.get("key", ""),
                t.get("operator", "Equal"),
                t.get("value", ""),
                t.get("effect", ""),
            )
            for t in spec.get("tolerations") or []
        ),
    )


def request_of(obj: Json, templates: dict[str, Json | None]) -> Request:
    """A ProvisioningRequest with the PodTemplates it names (None: missing)."""
    meta, spec = obj["metadata"], obj["spec"]
    annotations = meta.get("annotations") or {}
    pods: list[PodShape] | None = []
    for ps in spec.get("podSets") or []:
        template = templates.get(ps["podTemplateRef"]["name"])
        if template is None or pods is None:
            pods = None
            continue
        pods += [pod_shape(template["template"].get("spec") or {})] * int(ps["count"])
    return Request(
        meta["namespace"],
        meta["name"],
        spec["provisioningClassName"],
        parse_time(meta["creationTimestamp"]),
        sum(int(ps["count"]) for ps in spec.get("podSets") or []),
        tuple(pods) if pods is not None else None,
        tuple(condition_of(c) for c in (obj.get("status") or {}).get("conditions") or []),
        {k: str(v) for k, v in (spec.get("parameters") or {}).items()},
        plan_of(annotations.get(PLAN)),
        annotations.get(REVOKE) == "true",
    )


def condition_of(c: Json) -> Condition:
    at = parse_time(c["lastTransitionTime"]) if c.get("lastTransitionTime") else 0.0
    return Condition(c["type"], c["status"], c.get("reason", ""), c.get("message", ""), at)


def plan_of(value: str | None) -> Plan | None:
    """``"<nodes>@<RFC 3339>"``, as ``plan_patch`` writes it."""
    if not value:
        return None
    nodes, _, at = value.partition("@")
    return Plan(int(nodes), parse_time(at))


def node_of(obj: Json) -> Node:
    meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    shape = NodeShape(
        meta["name"],
        dict(meta.get("labels") or {}),
        {k: parse(v) for k, v in (status.get("allocatable") or {}).items()},
        tuple(Taint(t["key"], t.get("value", ""), t["effect"]) for t in spec.get("taints") or []),
        ready and not spec.get("unschedulable", False),
    )
    return Node(shape, (meta.get("annotations") or {}).get(OWNER))


def pod_of(obj: Json) -> Pod | None:
    """A pod that still holds its node (terminating too); None once it is terminal."""
    meta, spec = obj["metadata"], obj.get("spec") or {}
    if (obj.get("status") or {}).get("phase") in TERMINAL:
        return None
    annotations = meta.get("annotations") or {}
    return Pod(
        meta["namespace"],
        meta["name"],
        spec.get("nodeName") or "",
        pod_shape(spec),
        annotations.get(CONSUME) or annotations.get(CONSUME_DEPRECATED),
    )


def conditions_body(action: SetConditions) -> Json:
    """A merge patch of the status: the whole conditions list (a merge patch replaces lists)."""
    return {
        "status": {
            "conditions": [
                {
                    "type": c.type,
                    "status": c.status,
                    "reason": c.reason,
                    "message": c.message,
                    "lastTransitionTime": format_time(c.at),
                }
                for c in action.conditions
            ]
        }
    }


def plan_patch(action: RecordPlan) -> Json:
    plan = f"{action.plan.nodes}@{format_time(action.plan.at)}"
    return {"metadata": {"annotations": {PLAN: plan}}}


def pool_node(pool: str) -> Json:
    """The first kwok node of an e2e pool (hack/engine_config.py), the template of new nodes."""
    for node in node_manifests():
        if node["metadata"]["labels"][POOL_LABEL] == pool:
            return node
    raise ValueError(f"no pool {pool!r} in hack/engine_config.py POOLS")


def template_node(body: Json, labels: dict[str, str], taints: list[Taint]) -> Json:
    """``body`` with extra labels and taints: what a scale-up adds."""
    out = copy.deepcopy(body)
    out["metadata"]["labels"].update(labels)
    out["metadata"]["labels"][NODE_LABEL] = "true"
    if taints:
        out["spec"]["taints"] = [
            {"key": t.key, "value": t.value, "effect": t.effect}
            if t.value
            else {"key": t.key, "effect": t.effect}
            for t in taints
        ]
    return out


def node_body(template: Json, action: CreateNode) -> Json:
    """The template node named for the action, annotated with the request it is for."""
    out = copy.deepcopy(template)
    out["metadata"]["name"] = action.name
    out["metadata"]["labels"]["kubernetes.io/hostname"] = action.name
    out["metadata"]["annotations"][OWNER] = action.owner
    for address in out["status"].get("addresses") or []:
        if address["type"] == "Hostname":
            address["address"] = action.name
    return out


def shape_of_template(template: Json) -> NodeShape:
    """The template as the simulation sees a new node: Ready, schedulable."""
    node = node_of(template).shape
    return NodeShape("", node.labels, node.allocatable, node.taints, True)
