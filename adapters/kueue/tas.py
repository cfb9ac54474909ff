"""Topology-Aware Scheduling of a step's pods: annotations -> topologyRequest, pod ranks. Pure.

Kueue v0.19.2 builds each pod-group PodSet's ``topologyRequest`` from the
annotations of the PodSet's first pod (``pkg/controller/jobs/pod/pod_controller.go``
``constructPodSet`` -> ``pkg/controller/jobframework/tas.go`` ``Build``), with
``podIndexLabel: kueue.x-k8s.io/pod-group-pod-index``; its pod webhook rejects a pod
whose annotations ``ValidateTASPodSetRequest`` (``jobframework/tas_validation.go``)
refuses, so ``annotation_errors`` refuses them at render time, with Kueue's messages.

Ranks: the TAS ungater (``pkg/controller/tas/topology_ungater.go``
``readRanksForLabels``) puts the pod whose ``pod-group-pod-index`` label is ``r``
on the ``r``-th pod slot of its PodSet's topologyAssignment, counting ranks per
PodSet from 0; inside a PodSet group (two PodSets with one ``podset-group-name``)
the larger PodSet's ranks start after the smaller one's (``rankOffsets``, the
LeaderWorkerSet convention). ``rank_bases`` gives each job the rank of its first
pod; a pod's rank is ``base + replica * pods_per_replica + index``: for a job that
is a PodSet of its own, the same rank Kueue reads from an upstream JobSet's pods
(``job-completion-index`` + ``job-index`` x pods per Job), so ``PET_NODE_RANK``
(the completion index) of a one-replica trainer is its rank.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from trainweave import labels as L
from trainweave.adapters.kueue.podsets import PodRole, pod_roles
from trainweave.adapters.kueue.rolehash import PodDefaults
from trainweave.errors import InputError
from trainweave.k8s_names import DNS1123_SUBDOMAIN, LABEL_KEY_FMT
from trainweave.labels import Reason
from trainweave.model import Step

_TRUE = ("1", "t", "T", "TRUE", "true", "True")  # Go strconv.ParseBool
_FALSE = ("0", "f", "F", "FALSE", "false", "False")
_INT32 = 2**31 - 1
# k8s.io/apimachinery metav1 validation ValidateLabelName: a qualified name.
_NAME = re.compile(f"^{LABEL_KEY_FMT}$")


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="forbid"
    )


class SliceConstraint(_Wire):
    """One layer of ``podsetSliceRequiredTopologyConstraints``."""

    topology: str
    size: int


class TopologyRequest(_Wire):
    """``PodSetTopologyRequest`` of ``kueue.x-k8s.io/v1beta2`` (``apis/kueue/v1beta2/workload_types.go``)."""

    required: str | None = None
    preferred: str | None = None
    unconstrained: bool | None = None
    pod_index_label: str | None = None
    sub_group_index_label: str | None = None
    sub_group_count: int | None = None
    pod_set_group_name: str | None = None
    pod_set_slice_required_topology: str | None = None
    pod_set_slice_size: int | None = None
    podset_slice_required_topology_constraints: list[SliceConstraint] | None = None

    @property
    def explicit(self) -> bool:
        """TAS asked for by annotation (``workload.IsExplicitlyRequestingTAS``)."""
        return any(
            (
                self.unconstrained is not None,
                self.required,
                self.preferred,
                self.pod_set_slice_required_topology,
                self.pod_set_slice_size is not None,
                self.podset_slice_required_topology_constraints,
            )
        )

    def levels(self) -> list[str]:
        """The Topology levels (node labels) this request names: all must exist in the flavor's
        Topology (``TASFlavorSnapshot.HasLevel``)."""
        out = [v for v in (self.required or self.preferred, self.pod_set_slice_required_topology)]
        out += [c.topology for c in self.podset_slice_required_topology_constraints or []]
        return [v for v in out if v]


def topology_request(annotations: Mapping[str, str]) -> TopologyRequest:
    """The topologyRequest Kueue builds for a PodSet whose first pod has ``annotations``
    (``Build`` with the pod-group index label; annotations already valid)."""
    a = annotations
    required = a.get(L.KUEUE_PODSET_REQUIRED_TOPOLOGY)
    preferred = a.get(L.KUEUE_PODSET_PREFERRED_TOPOLOGY) if required is None else None
    unconstrained = None
    if required is None and preferred is None and L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY in a:
        unconstrained = a[L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY] in _TRUE
    slice_level = slice_size = constraints = None
    if L.KUEUE_PODSET_SLICE_CONSTRAINTS in a:
        constraints = [
            SliceConstraint.model_validate(c)
            for c in json.loads(a[L.KUEUE_PODSET_SLICE_CONSTRAINTS])
        ]
    elif L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY in a and L.KUEUE_PODSET_SLICE_SIZE in a:
        slice_level = a[L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY]
        slice_size = int(a[L.KUEUE_PODSET_SLICE_SIZE])
    group = a.get(L.KUEUE_PODSET_GROUP_NAME) if required or preferred else None
    return TopologyRequest(
        required=required,
        preferred=preferred,
        unconstrained=unconstrained,
        pod_index_label=L.KUEUE_POD_GROUP_POD_INDEX,
        pod_set_group_name=group,
        pod_set_slice_required_topology=slice_level,
        pod_set_slice_size=slice_size,
        podset_slice_required_topology_constraints=constraints,
    )


def annotation_errors(annotations: Mapping[str, str], where: str) -> list[InputError]:
    """What Kueue's pod webhook would refuse in a pod's TAS annotations
    (``ValidateTASPodSetRequest``); ``where`` is the path of the annotations."""
    a = annotations

    def key(name: str) -> str:
        return f"{where}[{name}]"

    found = [
        k
        for k in (
            L.KUEUE_PODSET_REQUIRED_TOPOLOGY,
            L.KUEUE_PODSET_PREFERRED_TOPOLOGY,
            L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY,
        )
        if k in a
    ]
    out: list[InputError] = []
    if len(found) > 1:
        out.append(_err(where, f"must not contain more than one topology annotation: {found}"))
    for k in (
        L.KUEUE_PODSET_REQUIRED_TOPOLOGY,
        L.KUEUE_PODSET_PREFERRED_TOPOLOGY,
        L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY,
    ):
        if k in a and (why := label_name_error(a[k])):
            out.append(_err(key(k), why))
    slice_level = L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY in a
    slice_size = L.KUEUE_PODSET_SLICE_SIZE in a
    group = L.KUEUE_PODSET_GROUP_NAME
    if group in a:
        if a[group].isdigit():
            out.append(_err(key(group), f"{a[group]!r} must not be a number"))
        for other in (L.KUEUE_PODSET_SLICE_SIZE, L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY):
            if other in a:
                out.append(_err(key(group), f"may not be set when '{other}' is specified"))
        if L.KUEUE_PODSET_REQUIRED_TOPOLOGY not in a and L.KUEUE_PODSET_PREFERRED_TOPOLOGY not in a:
            out.append(
                _err(
                    key(group),
                    f"may not be set when neither '{L.KUEUE_PODSET_PREFERRED_TOPOLOGY}' "
                    f"nor '{L.KUEUE_PODSET_REQUIRED_TOPOLOGY}' is specified",
                )
            )
    unconstrained = a.get(L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY)
    if unconstrained is not None and unconstrained not in _TRUE + _FALSE:
        out.append(
            _err(
                key(L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY), f"{unconstrained!r}: must be a boolean"
            )
        )
    if slice_size and (why := _size_error(a[L.KUEUE_PODSET_SLICE_SIZE])):
        out.append(_err(key(L.KUEUE_PODSET_SLICE_SIZE), why))
    if slice_level and not slice_size:
        out.append(
            _err(
                key(L.KUEUE_PODSET_SLICE_SIZE),
                f"must be set when '{L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY}' is specified",
            )
        )
    if slice_size and not slice_level:
        out.append(
            _err(
                key(L.KUEUE_PODSET_SLICE_SIZE),
                f"may not be set when '{L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY}' is not specified",
            )
        )
    out += _constraints_errors(a, key(L.KUEUE_PODSET_SLICE_CONSTRAINTS), slice_level, slice_size)
    return out


def _constraints_errors(
    a: Mapping[str, str], path: str, slice_level: bool, slice_size: bool
) -> list[InputError]:
    """``validateSliceRequiredTopologyConstraintsAnnotation`` (TASMultiLayerTopology, beta, on)."""
    raw = a.get(L.KUEUE_PODSET_SLICE_CONSTRAINTS)
    if raw is None:
        return []
    out = []
    for other, present in (
        (L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY, slice_level),
        (L.KUEUE_PODSET_SLICE_SIZE, slice_size),
        (L.KUEUE_PODSET_GROUP_NAME, L.KUEUE_PODSET_GROUP_NAME in a),
    ):
        if present:
            out.append(_err(path, f"may not be set with '{other}'"))
    try:
        layers = [SliceConstraint.model_validate(c) for c in json.loads(raw)]
    except (ValueError, TypeError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        return [*out, _err(path, f"must be a valid JSON array of {{topology, size}}: {first}")]
    if not 1 <= len(layers) <= 3:
        return [*out, _err(path, "topology constraints must contain between 1 and 3 entries")]
    for i, layer in enumerate(layers):
        if why := label_name_error(layer.topology):
            out.append(_err(f"{path}[{i}].topology", why))
        if layer.size < 1:
            out.append(_err(f"{path}[{i}].size", "must be greater than or equal to 1"))
    seen = [c.topology for c in layers]
    if len(set(seen)) != len(seen):
        out.append(_err(path, f"topology levels must be unique, got {seen}"))
    for upper, lower in itertools.pairwise(layers):
        if lower.size > 0 and upper.size % lower.size:
            out.append(_err(path, f"size {lower.size} must evenly divide the parent {upper.size}"))
    return out


def label_name_error(value: str) -> str | None:
    """Why ``value`` is not a label name (``metavalidation.ValidateLabelName``), or None."""
    prefix, _, name = value.rpartition("/")
    if "/" in prefix or (value.count("/") and not prefix):
        return f"{value!r} must be a label name ([prefix/]name)"
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return f"{value!r}: prefix must be a DNS subdomain"
    if not name or len(name) > 63 or not _NAME.match(name):
        return f"{value!r}: name must be at most 63 alphanumerics, '-', '_' or '.'"
    return None


def _size_error(value: str) -> str | None:
    try:
        size = int(value)
    except ValueError:
        return f"{value!r} must be a numeric value"
    if size > _INT32:
        return f"{value!r} must be a numeric value"
    return None if size >= 1 else f"{value!r} must be greater than or equal to 1"


def _err(path: str, message: str) -> InputError:
    return InputError(path, message, reason=Reason.UNSUPPORTED_FIELD)


def podset_requests(roles: Sequence[PodRole]) -> dict[str, TopologyRequest]:
    """Each PodSet's topologyRequest, from its first job's pod annotations."""
    return {role.name: topology_request(role.annotations) for role in roles}


def step_rank_bases(step: Step, defaults: PodDefaults | None = None) -> dict[str, int]:
    """``rank_bases`` of ``step``'s PodSets as Kueue derives them (``pod_roles``)."""
    roles = pod_roles(step, defaults)
    return rank_bases(step, roles, podset_requests(roles))


def podset_groups(
    roles: Sequence[PodRole], requests: Mapping[str, TopologyRequest]
) -> dict[str, list[PodRole]]:
    """PodSets by ``podSetGroupName`` (in Workload order), as the ungater groups them."""
    groups: dict[str, list[PodRole]] = {}
    for role in roles:
        name = requests[role.name].pod_set_group_name
        if name:
            groups.setdefault(name, []).append(role)
    return groups


def rank_bases(
    step: Step, roles: Sequence[PodRole], requests: Mapping[str, TopologyRequest]
) -> dict[str, int]:
    """The rank of each job's first pod (``kueue.x-k8s.io/pod-group-pod-index``).

    Ranks count per PodSet from 0, jobs sharing a PodSet in step order; in a group of two
    PodSets the larger one's start after the smaller one's (the first in Workload order when
    equal), as the ungater offsets them. ``roles`` are the step's PodSets in Workload order.
    """
    offset: dict[str, int] = {}
    for members in podset_groups(roles, requests).values():
        if len(members) == 2:
            small, large = members
            if small.count > large.count:
                small, large = large, small
            offset[large.name] = small.count
    bases: dict[str, int] = {}
    by_job = {job: role for role in roles for job in role.jobs}
    next_rank = {role.name: offset.get(role.name, 0) for role in roles}
    for job in step.jobs:
        role = by_job.get(job.name)
        if role is None:  # no pods
            continue
        bases[job.name] = next_rank[role.name]
        next_rank[role.name] += job.pods
    return bases
