"""What ``trainweave plan`` can say about a step's Topology-Aware Scheduling from queue files. Pure.

Kueue v0.19.2 assigns a flavor to a PodSet only when ``checkPodSetAndFlavorMatchForTAS``
(``pkg/scheduler/flavorassigner/tas_flavorassigner.go``) accepts it: a PodSet asking for TAS by
annotation (``IsExplicitlyRequestingTAS``) needs a flavor with ``spec.topologyName`` whose
Topology has every level it names (``TASFlavorSnapshot.HasLevel``), unless the flavor covers none
of its resources; a PodSet without TAS annotations gets TAS implied when every flavor of the
ClusterQueue is a TAS flavor (``isTASOnly``) and is otherwise kept off TAS flavors. A TAS flavor
whose Topology does not exist keeps the ClusterQueue inactive (``TopologyNotFound``,
``pkg/cache/scheduler/clusterqueue.go``). ``findTopologyAssignment``
(``pkg/cache/scheduler/tas_flavor_snapshot.go``) refuses a slice level above the PodSet's level.

Whether one domain of the requested level has room needs the nodes' capacity. When the queue
files hold the flavor's Nodes (``kubectl get nodes -o yaml``), ``domain_error`` counts, on empty
nodes, how many of the PodSet's pods each node holds (its ``allocatable`` over the per-pod
requests; nodes that carry the flavor's ``nodeLabels`` and every level label, are schedulable
and whose NoSchedule/NoExecute taints the pods and the flavor tolerate, as the TAS snapshot
keeps them) and sums them per domain: a required level none of whose domains holds the
PodSet, or nodes that cannot hold it at all, is ``never``. Without Nodes the plan names the
level and the pods that must share one of its domains, and Kueue decides at admission.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from trainweave.adapters.kueue.flavormatch import tolerates
from trainweave.adapters.kueue.podsets import PodRole
from trainweave.adapters.kueue.tas import TopologyRequest, topology_request
from trainweave.quantity import parse
from trainweave.queues import ClusterQueue, QueueSet, ResourceFlavor
from trainweave.topology import Node


def tas_only(cq: ClusterQueue, queues: QueueSet) -> bool:
    """Every flavor of ``cq`` is a TAS flavor (``clusterQueue.isTASOnly``)."""
    for group in cq.spec.resource_groups:
        for fq in group.flavors:
            rf = queues.flavors.get(fq.name)
            if rf is None or rf.spec.topology_name is None:
                return False
    return True


def flavor_mismatch(
    role: PodRole,
    flavor: ResourceFlavor,
    cq: ClusterQueue,
    queues: QueueSet,
    covered: list[str],
    requests: Mapping[str, Any],
) -> str | None:
    """Why Kueue's TAS check refuses ``flavor`` for ``role`` (None: it does not)."""
    request = topology_request(role.annotations)
    name = flavor.metadata.name
    topology_name = flavor.spec.topology_name
    explicit = request.explicit
    if not explicit:
        if tas_only(cq, queues) or topology_name is None:
            return None
        return f"flavor {name} supports only TopologyAwareScheduling"
    if topology_name is None:
        if not set(requests) & set(covered):
            return None
        return f"flavor {name} does not support TopologyAwareScheduling (no spec.topologyName)"
    topology = queues.topologies.get(topology_name)
    if topology is None:
        return f"Topology {topology_name} of flavor {name} is not in the queue files"
    if request.unconstrained is False and not request.levels():
        return (
            f"'kueue.x-k8s.io/podset-unconstrained-topology: false' names no level of flavor {name}"
        )
    levels = topology.levels
    absent = [level for level in request.levels() if level not in levels]
    if absent:
        return f"Topology {topology_name} of flavor {name} has no level {', '.join(absent)}"
    main = request.required or request.preferred
    slice_level = request.pod_set_slice_required_topology
    if main and slice_level and levels.index(slice_level) < levels.index(main):
        return f"podset slice topology {slice_level} is above the podset topology {main}"
    return domain_error(role, request, flavor, levels, queues.nodes)


def domain_error(
    role: PodRole,
    request: TopologyRequest,
    flavor: ResourceFlavor,
    levels: list[str],
    nodes: Sequence[Node],
) -> str | None:
    """Why no domain of the flavor's nodes in the queue files can ever hold ``role``'s pods
    (None: one can, or the queue files hold none of its nodes)."""
    kept = [n for n in nodes if _usable(n, flavor, role, levels)]
    if not kept:
        return None
    per_pod = {k: parse(v) for k, v in role.requests().items() if parse(v) > 0}
    name = flavor.metadata.name
    if request.required:
        depth = levels.index(request.required) + 1
        held: dict[tuple[str, ...], int] = {}
        for node in kept:
            key = tuple(node.metadata.labels[level] for level in levels[:depth])
            held[key] = held.get(key, 0) + _pods_on(node, per_pod)
        best = max(held.values())
        if best < role.count:
            return (
                f"no {request.required} domain of flavor {name}'s {len(kept)} nodes holds "
                f"{role.count} pods (the largest holds {best})"
            )
        return None
    total = sum(_pods_on(node, per_pod) for node in kept)
    if total < role.count:
        return f"flavor {name}'s {len(kept)} nodes hold {total} of its {role.count} pods"
    return None


def _usable(node: Node, flavor: ResourceFlavor, role: PodRole, levels: list[str]) -> bool:
    labels = node.metadata.labels
    if node.spec.unschedulable or any(level not in labels for level in levels):
        return False
    if any(labels.get(k) != v for k, v in flavor.spec.node_labels.items()):
        return False
    selector = role.spec.get("nodeSelector") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        return False
    tolerations = [
        *(role.spec.get("tolerations") or []),
        *(t.model_dump(by_alias=True, exclude_none=True) for t in flavor.spec.tolerations),
    ]
    return all(
        any(tolerates(t, taint.key, taint.value, taint.effect) for t in tolerations)
        for taint in node.spec.taints
        if taint.effect in ("NoSchedule", "NoExecute")
    )


def _pods_on(node: Node, per_pod: Mapping[str, Decimal]) -> int:
    """How many of these pods an empty ``node`` holds (its ``pods`` allocatable included)."""
    allocatable = node.allocatable()
    fits = [int(allocatable.get(r, Decimal(0)) // amount) for r, amount in per_pod.items()]
    if "pods" in allocatable:
        fits.append(int(allocatable["pods"]))
    return min(fits) if fits else 0


def missing_topologies(cq: ClusterQueue, queues: QueueSet) -> list[str]:
    """``Topology 'x' (of ResourceFlavor 'f')`` for each TAS flavor of ``cq`` whose Topology the
    queue files lack (Kueue keeps the ClusterQueue inactive)."""
    out = []
    for group in cq.spec.resource_groups:
        for fq in group.flavors:
            rf = queues.flavors.get(fq.name)
            name = rf.spec.topology_name if rf else None
            if name and name not in queues.topologies:
                out.append(f"Topology {name!r} (of ResourceFlavor {fq.name!r})")
    return out


def placement_notes(
    roles: tuple[PodRole, ...], flavors: Mapping[str, str], queues: QueueSet
) -> list[str]:
    """One note per TAS PodSet: the level its pods must share and the flavor's Topology.

    ``flavors``: PodSet name -> the flavor the plan assigned it.
    """
    notes = []
    for role in roles:
        flavor = queues.flavors.get(flavors.get(role.name, ""))
        if flavor is None or flavor.spec.topology_name is None:
            continue
        topology = queues.topologies.get(flavor.spec.topology_name)
        if topology is None:
            continue
        request = topology_request(role.annotations)
        levels = ", ".join(topology.levels)
        who = f"PodSet {role.name} ({', '.join(role.jobs)}: {role.count} pods)"
        where = f"flavor {flavor.metadata.name}, Topology {topology.metadata.name} [{levels}]"
        if request.required:
            what = f"all in one {request.required} domain"
        elif request.preferred:
            what = f"preferably in one {request.preferred} domain"
        elif request.unconstrained or not request.explicit:
            what = "anywhere (TAS " + ("unconstrained" if request.explicit else "implied") + ")"
        else:
            what = "in slices"
        if request.pod_set_slice_required_topology:
            what += (
                f", slices of {request.pod_set_slice_size} in one "
                f"{request.pod_set_slice_required_topology} domain each"
            )
        for layer in request.podset_slice_required_topology_constraints or []:
            what += f", slices of {layer.size} in one {layer.topology} domain each"
        if request.pod_set_group_name:
            what += f", with PodSet group {request.pod_set_group_name}"
        if any(_usable(n, flavor, role, topology.levels) for n in queues.nodes):
            room = "the flavor's nodes in the queue files have room for it when empty"
        else:
            room = (
                "Room in one domain needs node capacity, which queue files do not hold: "
                "Kueue decides at admission"
            )
        notes.append(f"{who}: {what} ({where}); rank r on the r-th assigned slot. {room}")
    return notes
