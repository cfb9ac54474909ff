"""A step's pods as Kueue's pod-group integration sees them: PodSets by role. Pure.

``pod_roles`` groups a step's jobs by Kueue's role hash (``adapters.kueue.rolehash``)
the way ``constructGroupPodSets`` (kueue v0.19.2
``pkg/controller/jobs/pod/pod_controller.go``) does: one PodSet per hash,
count = pods with it, sorted by name. Two jobs whose pods differ only in
image, command or env share a PodSet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainweave.adapters.kueue.rolehash import PodDefaults, admitted_pod_spec, role_hash
from trainweave.model import Step
from trainweave.quantity import add_quantities, format_quantity, max_quantities, parse

Json = dict[str, Any]


@dataclass(frozen=True)
class PodRole:
    """One PodSet of a step's Workload: pods sharing a role hash."""

    name: str  # the role hash
    count: int
    jobs: tuple[str, ...]  # replicatedJob names whose pods have this role
    spec: Json  # admitted pod spec (what Kueue copies into the PodSet template)
    # the first job's pod annotations: Kueue reads the PodSet's topologyRequest from them
    annotations: Mapping[str, str] = field(default_factory=dict)

    def requests(self) -> dict[str, str]:
        """Per-pod requests as Kueue counts them: containers, init, pod-level, overhead."""
        return effective_requests(self.spec)

    def total(self) -> dict[str, str]:
        """Requests of all ``count`` pods."""
        return {k: format_quantity(parse(v) * self.count, k) for k, v in self.requests().items()}


def pod_roles(step: Step, defaults: PodDefaults | None = None) -> list[PodRole]:
    """The PodSets Kueue derives for ``step``'s pod group, sorted by name."""
    defaults = defaults or PodDefaults()
    roles: dict[str, PodRole] = {}
    for job in step.jobs:
        if job.pods == 0:
            continue
        spec = admitted_pod_spec(job.pod_template["spec"], defaults)
        name = role_hash(spec)
        if name in roles:
            role = roles[name]
            roles[name] = PodRole(
                name, role.count + job.pods, (*role.jobs, job.name), role.spec, role.annotations
            )
        else:
            meta = job.pod_template.get("metadata") or {}
            roles[name] = PodRole(name, job.pods, (job.name,), spec, meta.get("annotations") or {})
    return [roles[name] for name in sorted(roles)]


# k8s.io/component-helpers resource.IsSupportedPodLevelResource: pod-level requests Kubernetes uses.
_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


def effective_requests(spec: Json) -> dict[str, str]:
    """Per-pod requests as Kueue counts them: ``resource.PodRequests`` of
    k8s.io/component-helpers v0.36.2, which Kueue v0.19.2 calls in
    ``totalRequestsFromPodSets``.

    ``AggregateContainerRequests`` (KEP-753): containers are summed; a native
    sidecar (init container with ``restartPolicy: Always``) adds to that sum; a
    regular init container needs its own requests plus those of the sidecars
    started before it; the pod needs the max of the two. Then pod-level
    cpu/memory/hugepages requests replace the aggregate, and overhead is added.
    A container's request defaults to its limit, as the API server defaults it.
    """
    total: dict[str, str] = {}
    for container in spec.get("containers") or []:
        total = add_quantities(total, _container_requests(container))
    sidecars: dict[str, str] = {}
    init_peak: dict[str, str] = {}
    for init in spec.get("initContainers") or []:
        own = _container_requests(init)
        if init.get("restartPolicy") == "Always":
            total = add_quantities(total, own)
            sidecars = add_quantities(sidecars, own)
            need = sidecars
        else:
            need = add_quantities(own, sidecars)
        init_peak = max_quantities(init_peak, need)
    total = max_quantities(total, init_peak)
    pod_level = (spec.get("resources") or {}).get("requests") or {}
    total.update(
        {k: str(v) for k, v in pod_level.items() if k in _POD_LEVEL or k.startswith(_HUGEPAGES)}
    )
    return add_quantities(total, {k: str(v) for k, v in (spec.get("overhead") or {}).items()})


def _container_requests(container: Json) -> dict[str, str]:
    resources = container.get("resources") or {}
    requests = dict(resources.get("limits") or {})
    requests.update(resources.get("requests") or {})
    return {name: str(value) for name, value in requests.items()}
