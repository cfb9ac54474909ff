"""Quota plan: where each step's Workload lands and whether it can ever be admitted. Pure.

Per step: its PodSets (``adapters.kueue.podsets``), the LocalQueue (in the
pipeline's namespace) and its ClusterQueue, the flavor Kueue v0.19.2 would
assign per resource group, and the fit on an otherwise empty cluster:
``nominal`` (within the ClusterQueue's nominalQuota), ``borrowing`` (needs
cohort peers' unused quota) or ``never`` (more than the ClusterQueue could
ever hold, or a resource no resourceGroup covers). This follows
``pkg/scheduler/flavorassigner/flavorassigner.go`` (``findFlavorForPodSets``,
``checkFlavorForPodSets``, ``fitsResourceQuota``) and the quota tree in
``pkg/cache/scheduler/resource_node.go`` (``potentialAvailable``,
``localQuota``): the most a ClusterQueue can hold is its nominal quota plus
what its cohort peers lend (their ``lendingLimit``, else their nominal),
capped at its own nominal + ``borrowingLimit``. A LocalQueue, ClusterQueue or ResourceFlavor
a step needs that is not in the queue files makes its fit ``unknown`` and is named in
``StepPlan.missing`` (``trainweave plan`` refuses it: Kueue would never admit the step, as
``ErrLocalQueueDoesNotExistOrInactive`` in ``pkg/cache/queue/manager.go`` and a ClusterQueue
inactive with reason ``FlavorNotFound`` in ``pkg/cache/scheduler/clusterqueue.go`` say).

With step durations, ``hours`` compares resource-hours held by per-step
admission (a step holds quota only while it runs) with whole-pipeline
admission (one Workload for all steps, as Kueue's TrainJob integration does),
with and without ``reclaimablePods`` (``trainjob_controller.go``
``ReclaimablePods``: a finished replicatedJob's pods stop counting).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from trainweave.adapters import names
from trainweave.adapters.kueue.flavormatch import matches_flavor
from trainweave.adapters.kueue.hours import ResourceHours, resource_hours
from trainweave.adapters.kueue.podsets import PodRole, pod_roles
from trainweave.adapters.kueue.rolehash import PodDefaults
from trainweave.adapters.kueue.tasplan import flavor_mismatch, missing_topologies, placement_notes
from trainweave.model import Pipeline, Step
from trainweave.quantity import format_quantity, parse
from trainweave.queues import ClusterQueue, FlavorQuotas, QueueSet, quota_amount


class Fit(enum.StrEnum):
    """How a step's request fits its ClusterQueue on an empty cluster (best first)."""

    NOMINAL = "nominal"
    BORROWING = "borrowing"
    NEVER = "never"
    UNKNOWN = "unknown"  # a queue object the step needs is not in the queue files


_RANK = {Fit.NOMINAL: 0, Fit.BORROWING: 1, Fit.UNKNOWN: 2, Fit.NEVER: 3}


@dataclass(frozen=True)
class ResourceFit:
    """One resource of one PodSet: its total, flavor and fit."""

    podset: str
    resource: str
    per_pod: str
    total: str
    flavor: str | None
    fit: Fit
    nominal: str | None = None  # nominalQuota in that flavor
    maximum: str | None = None  # the most the ClusterQueue could ever hold


@dataclass(frozen=True)
class StepPlan:
    """One step's Workload and its fit."""

    step: str
    role: str
    workload: str
    pods: int
    local_queue: str
    cluster_queue: str | None
    podsets: tuple[PodRole, ...]
    resources: tuple[ResourceFit, ...]
    findings: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # queue objects not in the queue files ("LocalQueue ns/q")

    @property
    def fit(self) -> Fit:
        """The worst fit over all resources (UNKNOWN when a queue object is missing)."""
        if self.cluster_queue is None or self.missing:
            return Fit.UNKNOWN
        fits = [r.fit for r in self.resources] or [Fit.NOMINAL]
        return max(fits, key=_RANK.__getitem__)

    def totals(self) -> dict[str, Decimal]:
        """Requests of all the step's pods, per resource."""
        out: dict[str, Decimal] = {}
        for role in self.podsets:
            for name, value in role.total().items():
                out[name] = out.get(name, Decimal(0)) + parse(value)
        return out


@dataclass(frozen=True)
class Plan:
    """The plan of a whole pipeline; ``hours`` only when durations were given."""

    pipeline: str
    namespace: str
    steps: tuple[StepPlan, ...]
    hours: tuple[ResourceHours, ...] = ()
    findings: tuple[str, ...] = ()

    def missing(self) -> list[tuple[StepPlan, str]]:
        """(step, queue object) pairs the queue files lack."""
        return [(s, m) for s in self.steps for m in s.missing]

    def never(self) -> list[tuple[StepPlan, ResourceFit]]:
        """(step, resource) pairs that can never be admitted."""
        return [(s, r) for s in self.steps for r in s.resources if r.fit is Fit.NEVER]


def plan(
    pipeline: Pipeline,
    queues: QueueSet,
    durations: Mapping[str, float] | None = None,
    defaults: PodDefaults | None = None,
) -> Plan:
    """Fit of every step on ``queues``; idle resource-hours when ``durations`` (hours) given."""
    defaults = defaults or PodDefaults()
    steps = tuple(_step_plan(pipeline, step, queues, defaults) for step in pipeline.steps)
    findings: list[str] = []
    hours: tuple[ResourceHours, ...] = ()
    if durations is not None:
        missing = [s.name for s in pipeline.steps if s.name not in durations]
        unknown = sorted(set(durations) - {s.name for s in pipeline.steps})
        if missing:
            findings.append(f"no duration for step(s) {', '.join(missing)}: hours not computed")
        if unknown:
            findings.append(f"durations name unknown step(s) {', '.join(unknown)}")
        if not missing:
            usage = {sp.step: sp.totals() for sp in steps}
            hours = resource_hours(pipeline, usage, durations)
    return Plan(pipeline.name, pipeline.namespace, steps, hours, tuple(findings))


def _step_plan(pipeline: Pipeline, step: Step, queues: QueueSet, defaults: PodDefaults) -> StepPlan:
    roles = tuple(pod_roles(step, defaults))
    workload = names.step_group(pipeline, step)
    base = StepPlan(step.name, step.role.value, workload, step.pods, step.queue, None, roles, ())
    lq = queues.local_queue(pipeline.namespace, step.queue)
    if lq is None:
        missing = f"LocalQueue {pipeline.namespace}/{step.queue}"
        return replace(base, findings=(f"{missing} is not in the queue files",), missing=(missing,))
    cq_name = lq.spec.cluster_queue or ""
    cq = queues.cluster_queues.get(cq_name)
    if cq is None:
        missing = f"ClusterQueue {cq_name!r} (of LocalQueue {step.queue})"
        return replace(base, findings=(f"{missing} is not in the queue files",), missing=(missing,))
    absent = sorted(
        {f.name for g in cq.spec.resource_groups for f in g.flavors} - set(queues.flavors)
    )
    if absent:  # Kueue keeps the ClusterQueue inactive (FlavorNotFound): it admits nothing
        missing_flavors = tuple(
            f"ResourceFlavor {name!r} (of ClusterQueue {cq_name})" for name in absent
        )
    else:  # a TAS flavor without its Topology: inactive too (TopologyNotFound)
        missing_flavors = tuple(missing_topologies(cq, queues))
    if missing_flavors:
        return replace(
            base,
            cluster_queue=cq_name,
            findings=tuple(f"{m} is not in the queue files" for m in missing_flavors),
            missing=missing_flavors,
        )
    fits, findings = _assign(roles, cq, queues)
    assigned = {r.podset: r.flavor for r in fits if r.flavor}
    findings += placement_notes(roles, assigned, queues)
    if cq.spec.stop_policy != "None":
        findings.append(f"ClusterQueue {cq_name} has stopPolicy {cq.spec.stop_policy}")
    return replace(base, cluster_queue=cq_name, resources=tuple(fits), findings=tuple(findings))


def _assign(
    roles: tuple[PodRole, ...], cq: ClusterQueue, queues: QueueSet
) -> tuple[list[ResourceFit], list[str]]:
    """Kueue's flavor assignment, PodSet by PodSet, on an empty cluster."""
    findings: list[str] = []
    fits: list[ResourceFit] = []
    assumed: dict[tuple[str, str], Decimal] = {}  # (flavor, resource) -> earlier PodSets' usage
    covers_pods = any("pods" in g.covered_resources for g in cq.spec.resource_groups)
    try_next = cq.spec.flavor_fungibility.when_can_borrow == "TryNextFlavor"
    for role in roles:
        per_pod = role.requests()
        if covers_pods:
            per_pod["pods"] = "1"
        requests = {k: parse(v) * role.count for k, v in per_pod.items() if parse(v) != 0}
        done: set[str] = set()
        for resource in sorted(requests):
            if resource in done:
                continue
            group = next(
                (g for g in cq.spec.resource_groups if resource in g.covered_resources), None
            )
            if group is None:
                fits.append(_line(role, resource, per_pod, requests, None, Fit.NEVER))
                findings.append(
                    f"{resource} is not covered by ClusterQueue {cq.metadata.name}: never admitted"
                )
                done.add(resource)
                continue
            wanted = [r for r in sorted(requests) if r in group.covered_resources]
            done.update(wanted)
            best: tuple[int, str, dict[str, tuple[Fit, Decimal, Decimal]]] | None = None
            tas_refusals: list[str] = []
            for flavor in group.flavors:
                rf = queues.flavors.get(flavor.name)  # present: _step_plan checked
                if rf is None or not matches_flavor(rf, role.spec):
                    continue
                tas_why = flavor_mismatch(role, rf, cq, queues, group.covered_resources, requests)
                if tas_why:
                    tas_refusals.append(f"PodSet {role.name} ({', '.join(role.jobs)}): {tas_why}")
                    continue
                result = {r: _fit(cq, queues, flavor.name, r, assumed, requests[r]) for r in wanted}
                modes = [f for f, _, _ in result.values()]
                if Fit.NEVER in modes:
                    continue
                borrow = int(Fit.BORROWING in modes)
                if best is None or borrow < best[0]:
                    best = (borrow, flavor.name, result)
                if borrow == 0 or not try_next:
                    break
            if best is None:
                fits += _no_flavor(cq, queues, group.flavors, role, per_pod, requests, wanted)
                findings += [f"{why}: never admitted" for why in tas_refusals]
                continue
            _, flavor_name, result = best
            for r in wanted:
                fit, nominal, maximum = result[r]
                assumed[(flavor_name, r)] = assumed.get((flavor_name, r), Decimal(0)) + requests[r]
                fits.append(_line(role, r, per_pod, requests, flavor_name, fit, nominal, maximum))
    return fits, findings


def _no_flavor(
    cq: ClusterQueue,
    queues: QueueSet,
    flavors: list[FlavorQuotas],
    role: PodRole,
    per_pod: Mapping[str, str],
    requests: Mapping[str, Decimal],
    wanted: list[str],
) -> list[ResourceFit]:
    """No flavor fits: NEVER for each resource beyond every flavor's maximum.

    If each resource alone fits some flavor (but no single flavor fits all),
    all of them are NEVER, since one resource group takes one flavor.
    """
    lines = []
    for r in wanted:
        nominal, maximum = _max_over_flavors(cq, queues, flavors, r, role, requests)
        too_big = maximum is None or requests[r] > maximum
        lines.append((r, nominal, maximum, too_big))
    any_too_big = any(too_big for *_, too_big in lines)
    return [
        _line(role, r, per_pod, requests, None, Fit.NEVER, nominal, maximum)
        for r, nominal, maximum, too_big in lines
        if too_big or not any_too_big
    ]


def _line(
    role: PodRole,
    resource: str,
    per_pod: Mapping[str, str],
    requests: Mapping[str, Decimal],
    flavor: str | None,
    fit: Fit,
    nominal: Decimal | None = None,
    maximum: Decimal | None = None,
) -> ResourceFit:
    def fmt(value: Decimal | None) -> str | None:
        return None if value is None else format_quantity(value, resource)

    return ResourceFit(
        role.name,
        resource,
        per_pod[resource],
        format_quantity(requests[resource], resource),
        flavor,
        fit,
        fmt(nominal),
        fmt(maximum),
    )


def _quota(
    cq: ClusterQueue, flavor: str, resource: str
) -> tuple[Decimal, Decimal | None, Decimal | None]:
    """(nominal, borrowingLimit, lendingLimit) of ``resource`` in ``flavor``; zeros if absent."""
    for group in cq.spec.resource_groups:
        for fq in group.flavors:
            if fq.name != flavor:
                continue
            for rq in fq.resources:
                if rq.name == resource:
                    return (
                        parse(rq.nominal_quota),
                        quota_amount(rq.borrowing_limit),
                        quota_amount(rq.lending_limit),
                    )
    return Decimal(0), None, None


def potential_available(cq: ClusterQueue, queues: QueueSet, flavor: str, resource: str) -> Decimal:
    """The most ``cq`` could ever hold of ``resource`` in ``flavor`` (``potentialAvailable``)."""
    nominal, borrowing_limit, lending_limit = _quota(cq, flavor, resource)
    cohort = cq.spec.cohort
    if not cohort:
        return nominal
    local = max(Decimal(0), nominal - lending_limit) if lending_limit is not None else Decimal(0)
    lent = Decimal(0)
    for member in queues.cohort_members(cohort):
        m_nominal, _, m_lending = _quota(member, flavor, resource)
        m_local = max(Decimal(0), m_nominal - m_lending) if m_lending is not None else Decimal(0)
        lent += m_nominal - m_local
    available = local + lent
    if borrowing_limit is not None:
        available = min(available, nominal + borrowing_limit)
    return available


def _fit(
    cq: ClusterQueue,
    queues: QueueSet,
    flavor: str,
    resource: str,
    assumed: Mapping[tuple[str, str], Decimal],
    request: Decimal,
) -> tuple[Fit, Decimal, Decimal]:
    value = assumed.get((flavor, resource), Decimal(0)) + request
    nominal = _quota(cq, flavor, resource)[0]
    maximum = potential_available(cq, queues, flavor, resource)
    if value > maximum:
        return Fit.NEVER, nominal, maximum
    return (Fit.NOMINAL if value <= nominal else Fit.BORROWING), nominal, maximum


def _max_over_flavors(
    cq: ClusterQueue,
    queues: QueueSet,
    flavors: list[FlavorQuotas],
    resource: str,
    role: PodRole,
    requests: Mapping[str, Decimal],
) -> tuple[Decimal | None, Decimal | None]:
    """The largest nominal and maximum among flavors the pods may use (for the message)."""
    best: tuple[Decimal | None, Decimal | None] = (None, None)
    for flavor in flavors:
        name = flavor.name
        rf = queues.flavors.get(name)
        if rf is None or not matches_flavor(rf, role.spec):
            continue
        if flavor_mismatch(role, rf, cq, queues, [resource], requests):
            continue
        maximum = potential_available(cq, queues, name, resource)
        if best[1] is None or maximum > best[1]:
            best = (_quota(cq, name, resource)[0], maximum)
    return best
