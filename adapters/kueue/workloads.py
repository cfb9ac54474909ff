"""Pipeline -> the Kueue Workloads its steps become (``kueue.x-k8s.io/v1beta2``). Pure.

Each step is one plain-pod group, and Kueue v0.19.2 builds its Workload in
``pkg/controller/jobs/pod/pod_controller.go``: name = the group name
(``workloadName``), the annotation ``kueue.x-k8s.io/is-group-workload: "true"``
and the ``resource-in-use`` finalizer (``NewGroupWorkload`` ->
``jobframework.NewWorkload``), ``spec.queueName`` from the pods' queue label,
and one PodSet per distinct role hash (``constructGroupPodSets``): named by the
8-hex hash (``adapters.kueue.rolehash``), ``count`` = pods with that hash, sorted by
name, ``template.spec`` = the pod's spec, and with TopologyAwareScheduling on
(the default) the ``topologyRequest`` Kueue builds from the first pod's
``kueue.x-k8s.io/podset-*`` annotations, with ``podIndexLabel:
kueue.x-k8s.io/pod-group-pod-index`` (``constructPodSet``, ``adapters.kueue.tas``). A ``kueue.x-k8s.io/priority-class`` label becomes
``priorityClassRef`` to a WorkloadPriorityClass (``ExtractPriority``); its
``priority`` value lives in the cluster, so it is set only when
``PodDefaults.priorities`` knows it.

Role hashes are ``adapters.kueue.rolehash``, PodSets ``adapters.kueue.podsets``; quota math over them is
``adapters.kueue.plan``, its text ``adapters.kueue.plan_format`` (``plan``,
``format_plan``, ``plan_errors`` and ``plan_exit_code`` are re-exported here).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from trainweave import labels
from trainweave.adapters import names
from trainweave.adapters.kueue.plan import Fit, Plan, plan
from trainweave.adapters.kueue.plan_format import format_plan, plan_errors, plan_exit_code
from trainweave.adapters.kueue.podsets import PodRole, pod_roles
from trainweave.adapters.kueue.rolehash import PodDefaults
from trainweave.adapters.kueue.tas import TopologyRequest, podset_requests
from trainweave.labels import KUEUE_IS_GROUP_WORKLOAD
from trainweave.model import Pipeline, Step

Json = dict[str, Any]
API_VERSION = "kueue.x-k8s.io/v1beta2"
MAX_POD_SETS = 18  # jobframework.MaxPodSets: "pod group can't include more than 18 roles"


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class PriorityClassRef(_Wire):
    group: str
    kind: str
    name: str


class PodSetTemplate(_Wire):
    spec: Json


class WorkloadPodSet(_Wire):
    name: str
    count: int
    template: PodSetTemplate
    topology_request: TopologyRequest | None = None


class WorkloadSpec(_Wire):
    pod_sets: list[WorkloadPodSet]
    queue_name: str | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority: int | None = None


class WorkloadMeta(_Wire):
    name: str
    namespace: str
    annotations: dict[str, str] = Field(default_factory=dict)
    finalizers: list[str] = Field(default_factory=list)


class Workload(_Wire):
    api_version: str = Field(default=API_VERSION, alias="apiVersion")
    kind: str = "Workload"
    metadata: WorkloadMeta
    spec: WorkloadSpec


def workload(pipeline: Pipeline, step: Step, defaults: PodDefaults | None = None) -> Workload:
    """The Workload Kueue creates for ``step``'s pod group."""
    defaults = defaults or PodDefaults()
    roles = pod_roles(step, defaults)
    requests = podset_requests(roles)
    ref = None
    priority = None
    if step.priority_class:
        ref = PriorityClassRef(
            group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name=step.priority_class
        )
        priority = defaults.priorities.get(step.priority_class)
    return Workload(
        metadata=WorkloadMeta(
            name=names.step_group(pipeline, step),
            namespace=pipeline.namespace,
            annotations={KUEUE_IS_GROUP_WORKLOAD: "true"},
            finalizers=[labels.KUEUE_RESOURCE_IN_USE],
        ),
        spec=WorkloadSpec(
            queue_name=step.queue,
            priority_class_ref=ref,
            priority=priority,
            pod_sets=[
                WorkloadPodSet(
                    name=role.name,
                    count=role.count,
                    template=PodSetTemplate(spec=role.spec),
                    topology_request=requests[role.name],
                )
                for role in roles
            ],
        ),
    )


def workloads(pipeline: Pipeline, defaults: PodDefaults | None = None) -> list[Json]:
    """Wire dicts of every step's Workload, in step order."""
    return [
        workload(pipeline, step, defaults).model_dump(by_alias=True, exclude_none=True)
        for step in pipeline.steps
    ]


__all__ = [
    "Fit",
    "Plan",
    "PodDefaults",
    "PodRole",
    "Workload",
    "format_plan",
    "plan",
    "plan_errors",
    "plan_exit_code",
    "pod_roles",
    "workload",
    "workloads",
]
