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

Whether one domain of the requested level has room needs the nodes' capacity, which queue
files do not hold: the plan names the level and the pods that must share one of its domains,
and Kueue decides at admission.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainweave.adapters.kueue.podsets import PodRole
from trainweave.adapters.kueue.tas import topology_request
from trainweave.queues import ClusterQueue, QueueSet, ResourceFlavor


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
    return None


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
        notes.append(
            f"{who}: {what} ({where}); rank r on the r-th assigned slot. Room in one domain "
            "needs node capacity, which queue files do not hold: Kueue decides at admission"
        )
    return notes
