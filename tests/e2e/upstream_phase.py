"""The upstream phase of the e2e tier: `hack/cluster.py upstream on` once per run, not once per
test that compares trainweave with Kubeflow Trainer + JobSet + Kueue (docs/upstream.md).

``upstream_results`` (session scope; conftest.py makes it visible to every e2e test) is set up by
the first test that asks for it: upstream on, then the four upstream halves one after another,
each cleaning up after itself, then upstream off (in a ``finally``). In order:

1. ``admission`` (test_admission.py): 6 init-heavy TrainJobs of benchmarks/admission.py. It
   measures makespan and held-idle GPU-seconds on the shared kwok GPU nodes, so it runs first,
   as it did right after its own ``upstream on``, and no other half runs beside it: the halves
   never run concurrently.
2. ``oracle`` (test_upstream.py): every scenario at once, each in its own namespace; the
   namespaces are awaited gone (upstream's controllers finalize their objects before they stop).
3. ``tas`` (test_tas.py): the placement oracle, in its own namespace and kwok fleet
   (tests/e2e/tas_fleet.py), both removed before it returns.
4. ``provisioning`` (test_provisioning.py): test_provisioning's TrainJob behind the same
   ProvisioningRequest check and stand-in provisioner (tests/e2e/capacity.py), until its trainer's
   pods have waited a bounded time; the provisioner is switched off (its nodes deleted) and the
   namespace, queue and check removed before it returns.

What the tests must keep: every test that asks for ``upstream_results`` is marked ``serial``
(while upstream is on no trainweave controller may run; hack/e2e.sh runs those alone, after the
parallel phase). The first of them (test_admission.py, by file order) pays for all four halves in
its setup. Every trainweave half runs after the fixture has returned, so upstream is off for it by
construction (test_upstream.py's ``trainweave_runs`` asks for ``upstream_runs``, which asks for
this). A half that raises does not stop the others: its exception and traceback are kept, the test
that needs it fails with them (``Half.get``), the other tests still get their data.
"""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from . import capacity
from .integrity import Integrity
from .kube import (
    E2E_NAMESPACE_LABEL,
    KUEUE,
    Kube,
    Timeout,
    condition,
    condition_is,
    default_kubeconfig,
    parse_time,
    wait_until,
)
from .pipelines import TRAINER, apply, ended, example, for_upstream, trainjob
from .tas_fleet import BLOCK, COMPLETION, RACK, fleet_of, slot_hosts, tas_example

# as in test_admission.py: the script checked as a file, not followed from here
admission: Any = importlib.import_module("benchmarks.admission")

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_LABEL = "trainweave.test/upstream"  # upstream's webhooks see these namespaces only
ADMISSION_TRAINJOBS = 6  # test_admission.py's docstring says why six
Json = dict[str, Any]
T = TypeVar("T")

# the dynamic oracle's scenarios (test_upstream.py) -> example() knobs (tests/e2e/pipelines.py):
# pod outcomes per replicatedJob and attempt
SCENARIOS: dict[str, dict[str, Any]] = {
    "success": {},
    "permanent-failure": {"codes": {"node": [1]}},  # the runtime's FailJob rule (exit 1 or 2)
    "retryable-then-success": {"codes": {"node": [3, 0]}},  # counted, then the retry succeeds
    "backoff-exhausted": {"codes": {"node": [3, 3, 3]}},  # backoffLimitPerIndex: 2
    "max-restarts": {"codes": {"node": [1]}, "max_restarts": 1},
    "deadline": {"deadline": 25, "durations": {"node": "600s"}},
}


@dataclass(frozen=True)
class Half(Generic[T]):
    """One upstream half's outcome: its value, or the exception it raised and its traceback."""

    name: str
    value: T | None = None
    exception: Exception | None = None
    trace: str = ""

    def get(self) -> T:
        """The value; the calling test fails with the half's traceback when it raised."""
        if self.exception is not None:
            pytest.fail(
                f"the upstream half {self.name!r} (tests/e2e/upstream_phase.py) raised:\n"
                f"{self.trace}",
                pytrace=False,
            )
        assert self.value is not None
        return self.value


@dataclass(frozen=True)
class AdmissionUpstream:
    """test_admission.py's upstream half: the trace it ran and benchmarks/admission.py's Run."""

    trace: list[Any]  # admission_trace.Job
    run: Any  # admission_report.Run


@dataclass(frozen=True)
class TasUpstream:
    """test_tas.py's upstream half: what its assertions read."""

    node_request: Json | None  # the big TrainJob's Workload: its node PodSet's topologyRequest
    block_of: dict[str, str]  # node -> block, of the half's fleet
    fill_nodes: dict[int, str]  # rank -> node: the rack-filling trainer
    placed: dict[int, str]  # rank -> node: the block-wide trainer
    hosts: list[str]  # the block-wide trainer's slots, in order (its topologyAssignment)
    tas_podsets: list[str]  # the PodSets Kueue placed by topology
    big_complete: bool  # the block-wide TrainJob reached Complete (in 240 s)
    big_status: Json  # its status when the wait ended
    problems: tuple[str, ...] = ()  # pods' missing references (integrity.Integrity)


@dataclass(frozen=True)
class ProvisioningUpstream:
    """test_provisioning.py's upstream half: what it saw when the bounded wait ended."""

    check: str  # the AdmissionCheck's name
    workload: Json  # the TrainJob's one Workload
    requests: dict[str, Json]  # every ProvisioningRequest made for it, by name, as last seen
    nodes_seen: tuple[str, ...]  # every node of the flavor seen while it ran
    nodes_left: tuple[str, ...]  # those still there at the end
    trainer_pods: tuple[Json, ...]  # the trainer's pods (JSON)
    trainjob: Json
    trainer_waited: float  # seconds the trainer's pods had existed when the wait ended
    booking_to_trainer: float  # seconds from BookingExpired (its time) to the trainer's pods


@dataclass(frozen=True)
class UpstreamResults:
    """Each upstream half's outcome (``upstream_results``)."""

    admission: Half[AdmissionUpstream]
    oracle: Half[dict[str, Json]]
    tas: Half[TasUpstream]
    provisioning: Half[ProvisioningUpstream]


def switch(state: str) -> None:
    """``hack/cluster.py upstream on|off``."""
    cluster_py = str(ROOT / "hack" / "cluster.py")
    subprocess.run([sys.executable, cluster_py, "upstream", state], check=True)


def run_half(name: str, fn: Callable[[], T]) -> Half[T]:
    """``fn``'s value, or what it raised (the other halves still run)."""
    try:
        return Half(name, value=fn())
    except Exception as err:
        trace = traceback.format_exc()
        print(f"upstream half {name} raised:\n{trace}")
        return Half(name, exception=err, trace=trace)


@pytest.fixture(scope="session")
def upstream_results(kube: Kube) -> UpstreamResults:
    """Upstream on once, the four halves one after another, upstream off (module docstring)."""
    switch("on")
    try:
        first = run_half("admission", admission_half)  # alone on the shared kwok GPU nodes
        oracle = run_half("oracle", partial(oracle_half, kube))
        tas = run_half("tas", partial(tas_half, kube))
        prov = run_half("provisioning", partial(provisioning_half, kube))
        return UpstreamResults(admission=first, oracle=oracle, tas=tas, provisioning=prov)
    finally:
        switch("off")


# -- admission (test_admission.py) ------------------------------------------------------------


def admission_trace() -> list[Any]:
    """test_admission.py's trace: init-heavy, seeded, durations halved."""
    jobs: list[Any] = admission.trace("init-heavy", ADMISSION_TRAINJOBS, seed=1, scale=0.5)
    return jobs


def admission_half() -> AdmissionUpstream:
    """The trace under upstream (benchmarks/admission.py deletes its namespace and queues)."""
    jobs = admission_trace()
    cluster = admission.Cluster(str(default_kubeconfig()))
    return AdmissionUpstream(jobs, cluster.run("upstream", jobs, timeout=600))


# -- the dynamic oracle (test_upstream.py) ----------------------------------------------------


def terminal(kube: Kube, ns: str) -> Json | None:
    """The namespace's TrainJob ``ft`` once Complete or Failed."""
    tj = trainjob(kube, ns)
    for ctype in ("Complete", "Failed"):
        c = condition(tj, ctype)
        if c and c.get("status") == "True":
            return tj
    return None


def _start_scenario(kube: Kube, ns: str, knobs: dict[str, Any]) -> None:
    """The namespace's queues (one ClusterQueue, as upstream users have it) and its TrainJob."""
    for obj in admission.queues(ns, upstream=True, gpus=16):
        plural = "clusterqueues" if obj["kind"] == "ClusterQueue" else "localqueues"
        kube.create(KUEUE, plural, obj, obj["metadata"].get("namespace"))
    tj, rt = example(ns, **knobs)
    for_upstream(ns, tj, rt)
    apply(kube, ns, tj, rt)


def _delete_scenarios(kube: Kube, namespaces: Sequence[str]) -> None:
    """Workloads, then the namespaces and their ClusterQueues; the namespaces are deleted
    together and awaited together: upstream's controllers finalize their objects before they
    stop."""
    for ns in namespaces:
        for wl in kube.list(KUEUE, "workloads", ns):
            kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
        kube.delete_namespace(ns)
        kube.delete(KUEUE, "clusterqueues", f"{ns}-all")
    for ns in namespaces:
        kube.delete_namespace(ns, wait=120)


def oracle_half(kube: Kube) -> dict[str, Json]:
    """Every scenario's TrainJob as upstream ends it (all run at once), scenario -> TrainJob."""
    made: dict[str, str] = {}
    try:
        for name, knobs in SCENARIOS.items():
            ns = f"upstream-{name}-{uuid.uuid4().hex[:5]}"
            kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true", UPSTREAM_LABEL: "true"})
            made[name] = ns
            _start_scenario(kube, ns, knobs)
        return {
            name: wait_until(f"upstream {name} ends", partial(terminal, kube, ns), timeout=300)
            for name, ns in made.items()
        }
    finally:
        _delete_scenarios(kube, list(made.values()))


# -- placement (test_tas.py) ------------------------------------------------------------------


def _upstream_workload(kube: Kube, ns: str, trainjob: str) -> Json | None:
    """Kueue's one Workload of an upstream TrainJob (``trainjob-<name>-<hash>``), once admitted."""
    for wl in kube.list(KUEUE, "workloads", ns):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "TrainJob" and o["name"] == trainjob for o in owners):
            return wl if condition_is(wl, "Admitted") else None
    return None


def _upstream_placed(kube: Kube, ns: str, trainjob: str, count: int) -> dict[int, str]:
    """rank (the trainer Job's completion index) -> node of an upstream trainer's pods."""
    selector = (
        f"jobset.sigs.k8s.io/jobset-name={trainjob},jobset.sigs.k8s.io/replicatedjob-name=node"
    )

    def bound() -> dict[int, str] | None:
        pods = [p for p in kube.pods(ns, selector) if p.metadata.deletion_timestamp is None]
        if len(pods) != count or not all(p.spec.node_name for p in pods):
            return None
        return {int(p.metadata.labels[COMPLETION]): p.spec.node_name for p in pods}

    return wait_until(f"upstream pods of {trainjob} bound", bound, timeout=180)


def _upstream_trainjob(
    kube: Kube, ns: str, name: str, nodes: int, level: str, duration: str
) -> Json:
    """tas_fleet's example as Trainer + Kueue users write it, applied; its Workload, admitted."""
    tj, rt = tas_example(ns, name, nodes, level, duration)
    for_upstream(ns, tj, rt)
    apply(kube, ns, tj, rt)
    return wait_until(f"upstream {name} admitted", partial(_upstream_workload, kube, ns, name), 180)


def _complete(kube: Kube, ns: str, name: str) -> bool:
    return condition_is(trainjob(kube, ns, name), "Complete")


def _reaches_complete(kube: Kube, ns: str, name: str) -> bool:
    """Whether the TrainJob reaches Complete in 240 s."""
    try:
        wait_until(f"upstream {name} Complete", partial(_complete, kube, ns, name), 240)
    except Timeout:
        return False
    return True


def _placement(kube: Kube, ns: str, nodes: list[Json]) -> TasUpstream:
    """A trainer filling one rack, then a 4 x 8-GPU trainer requiring one block; where they went.
    Their Workloads and TrainJobs are deleted before it returns (the fleet clears the rest)."""
    all_queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "all", "namespace": ns},
                 "spec": {"clusterQueue": f"{ns}-gpu"}}  # fmt: skip
    kube.create(KUEUE, "localqueues", all_queue, ns)
    try:
        _upstream_trainjob(kube, ns, "fill", 2, RACK, "600s")
        fill_nodes = _upstream_placed(kube, ns, "fill", 2)
        wl = _upstream_trainjob(kube, ns, "big", 4, BLOCK, "5s")
        node_set = next(p for p in wl["spec"]["podSets"] if p["name"] == "node")
        hosts = slot_hosts(wl, "node")
        placed = _upstream_placed(kube, ns, "big", 4)
        complete = _reaches_complete(kube, ns, "big")
        return TasUpstream(
            node_request=node_set.get("topologyRequest"),
            block_of={n["metadata"]["name"]: n["metadata"]["labels"][BLOCK] for n in nodes},
            fill_nodes=fill_nodes,
            placed=placed,
            hosts=hosts,
            tas_podsets=[
                p["name"]
                for p in wl["status"]["admission"]["podSetAssignments"]
                if p.get("topologyAssignment")
            ],
            big_complete=complete,
            big_status=trainjob(kube, ns, "big").get("status") or {},
        )
    finally:
        for obj in kube.list(KUEUE, "workloads", ns):
            kube.delete(KUEUE, "workloads", obj["metadata"]["name"], ns)
        for obj in kube.list(TRAINER, "trainjobs", ns):
            kube.delete(TRAINER, "trainjobs", obj["metadata"]["name"], ns)


def tas_half(kube: Kube) -> TasUpstream:
    """``_placement`` in a namespace of its own (labelled as the ``namespace`` fixture does, and
    for upstream's webhooks), with its own fleet and its pods' references checked; the fleet and
    the namespace removed (Workloads first, the namespace not awaited) before it returns."""
    ns = f"upstream-tas-{uuid.uuid4().hex[:5]}"
    kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true", UPSTREAM_LABEL: "true"})
    checker = Integrity(kube.api, ns).start()
    try:
        with fleet_of(kube, ns) as nodes:
            placement = _placement(kube, ns, nodes)
    finally:
        checker.stop()
        for wl in kube.list(KUEUE, "workloads", ns):
            kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
        kube.delete_namespace(ns)
    return dataclasses.replace(placement, problems=tuple(checker.problems))


# -- capacity on demand (test_provisioning.py) ------------------------------------------------

TRAINER_WAIT = 15.0  # seconds the trainer's pods are watched once they exist
TRAINER_PODS = "jobset.sigs.k8s.io/jobset-name=ft,jobset.sigs.k8s.io/replicatedjob-name=node"


def provisioning_half(kube: Kube) -> ProvisioningUpstream:
    """test_provisioning's TrainJob under upstream, behind the same check and provisioner, in a
    namespace of its own; the namespace, its ClusterQueue, the check and the provisioner's nodes
    are gone when it returns."""
    ns = f"upstream-prov-{uuid.uuid4().hex[:5]}"
    kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true", UPSTREAM_LABEL: "true"})
    with capacity.provisioner(), capacity.check_objects(kube, f"{ns}-gpu-nodes") as check:
        # one ClusterQueue, as upstream users have it: the initializers and the exporter on the
        # cpu flavor, the trainer on the provisioned one, behind the check
        flavors = {"cpu": capacity.CPU_QUOTA, capacity.FLAVOR: capacity.GPU_QUOTA}
        cq = capacity.cluster_queue(ns, "all", flavors, check)
        kube.create(KUEUE, "clusterqueues", cq)
        try:
            capacity.local_queue(kube, ns, "all")
            return _booking_outlived(kube, ns, check)
        finally:
            _delete_running(kube, ns)
            kube.delete(KUEUE, "clusterqueues", cq["metadata"]["name"])


def _delete_running(kube: Kube, ns: str) -> None:
    """A namespace whose TrainJob is still running (Admitted, its trainer unschedulable), gone:
    the TrainJob first, awaited gone, while upstream's controllers and Kueue's TrainJob
    integration still run (Kueue then drops its Workload's finalizer, as for the tas half's
    TrainJobs); deleting the Workload of a live TrainJob instead makes Kueue try to make another
    one, and the namespace never finished deleting (a cold CI run, 120 s)."""
    for obj in kube.list(TRAINER, "trainjobs", ns):
        kube.delete(TRAINER, "trainjobs", obj["metadata"]["name"], ns)
    wait_until("the TrainJobs gone", lambda: not kube.list(TRAINER, "trainjobs", ns), timeout=60)
    for wl in kube.list(KUEUE, "workloads", ns):
        kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
    kube.delete_namespace(ns, wait=60)


def _booking_outlived(kube: Kube, ns: str, check: str) -> ProvisioningUpstream:
    """The TrainJob applied; its Workload admitted, its request's booking expired, its trainer's
    pods created; then at most TRAINER_WAIT seconds for them (or the TrainJob's end)."""
    tj, rt = example(ns, nodes=2, gpus=1, durations=capacity.DURATIONS)
    for_upstream(ns, tj, rt)
    seen: set[str] = set()

    def nodes() -> tuple[str, ...]:
        listed = kube.core.list_node(label_selector=f"{capacity.POOL}={capacity.FLAVOR}").items
        names = tuple(sorted(str(n.metadata.name) for n in listed if n.metadata))
        seen.update(names)
        return names

    def trainer_pods() -> list[Any]:
        nodes()
        return [p for p in kube.pods(ns, TRAINER_PODS) if p.metadata.deletion_timestamp is None]

    with capacity.Requests(kube, ns) as requests:
        apply(kube, ns, tj, rt)

        def admitted() -> Json | None:
            nodes()
            return _upstream_workload(kube, ns, "ft")

        name = wait_until("upstream ft admitted", admitted, timeout=90)["metadata"]["name"]

        def expired() -> Json | None:
            nodes()
            return next((r for r in requests.seen.values() if capacity.booking_expired(r)), None)

        lapsed = wait_until("its request's booking expired", expired, timeout=60)
        wait_until("the trainer's pods created", trainer_pods, timeout=90)
        created = time.time()
        until = created + TRAINER_WAIT
        while time.time() < until and ended(trainjob(kube, ns)) is None:
            nodes()
            time.sleep(0.5)
        waited = time.time() - created
        left = nodes()
        pods: tuple[Json, ...] = tuple(
            kube.api.sanitize_for_serialization(p)  # type: ignore[no-untyped-call]
            for p in trainer_pods()
        )
        assert not requests.error, requests.error
        made = requests.seen
    expired_at = parse_time(capacity.conditions(lapsed)["BookingExpired"]["lastTransitionTime"])
    first_pod = min(parse_time(p["metadata"]["creationTimestamp"]) for p in pods)
    wl = kube.workload(ns, name)
    assert wl is not None, f"Workload {ns}/{name} gone"
    return ProvisioningUpstream(
        check=check,
        workload=wl,
        requests=made,
        nodes_seen=tuple(sorted(seen)),
        nodes_left=left,
        trainer_pods=pods,
        trainjob=trainjob(kube, ns),
        trainer_waited=waited,
        booking_to_trainer=(first_pod - expired_at).total_seconds(),
    )
