"""Topology-Aware Scheduling on the local control plane: a trainer gang placed in one block, in
rank order.

Each test makes its own fleet (tests/e2e/tas_fleet.py): 8 kwok nodes of 8 GPUs, 2 blocks x 2
racks x 2 hosts, tainted so that only its TAS ResourceFlavor (which tolerates the taint) lands
there; a Topology (block, rack, hostname) and a TAS-only ClusterQueue. A first pipeline's
trainer (2 nodes x 8 GPUs, ``podset-required-topology: rack``) fills one rack; then a 4-node x
8-GPU trainer requiring one block must go to the other block, all of it. Kueue's Workload says
which host each slot of the PodSet gets
(``status.admission.podSetAssignments[].topologyAssignment``); the pod whose
``kueue.x-k8s.io/pod-group-pod-index`` is i must run on the i-th (kueue v0.19.2
``pkg/controller/tas/topology_ungater.go`` ``assignGatedPodsToDomainsByRanks``).
An MPI step of two PodSets in one ``podset-group-name`` (launcher apart from its nodes) keeps
rank order too: launcher 0, nodes 1..N, as the ungater offsets the larger PodSet.
Run with ``-s`` to print the admitted Workload as ``kubectl get workload -o yaml`` would.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainweave.adapters.kueue import workloads
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob

from .controller_proc import ControllerProc
from .kube import Kube, condition_is, wait_until
from .pipelines import apply, wait_condition
from .tas_fleet import BLOCK, COMPLETION, INDEX, RACK, fleet_of, slot_hosts, tas_example
from .upstream_phase import UpstreamResults

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
Json = dict[str, Any]


@pytest.fixture
def fleet(kube: Kube, namespace: str) -> Iterator[list[Json]]:
    """The test's nodes and TAS queues (tests/e2e/tas_fleet.py); removed afterwards (they are
    cluster-scoped)."""
    with fleet_of(kube, namespace) as nodes:
        yield nodes


def _preview_requests(tj: Json, rt: Json, workload: str) -> dict[str, Json]:
    """PodSet name -> topologyRequest of ``trainweave plan -o yaml``'s Workload preview."""
    pipeline = to_pipeline(parse_trainjob(tj), parse_runtime(rt))
    (wl,) = [w for w in workloads.workloads(pipeline) if w["metadata"]["name"] == workload]
    return {ps["name"]: ps["topologyRequest"] for ps in wl["spec"]["podSets"]}


def _admitted(wl: Json) -> bool:
    return condition_is(wl, "Admitted")


def _placed(kube: Kube, ns: str, group: str, count: int) -> dict[int, str]:
    """rank -> node of the group's pods, once all ``count`` are bound."""

    def bound() -> dict[int, str] | None:
        pods = [p for p in kube.group_pods(ns, group) if p.metadata.deletion_timestamp is None]
        if len(pods) != count or not all(p.spec.node_name for p in pods):
            return None
        # the rank is the completion index PET_NODE_RANK reads (one replica of the trainer Job)
        assert all(p.metadata.labels[INDEX] == p.metadata.labels[COMPLETION] for p in pods)
        by_name = sorted(pods, key=lambda p: p.metadata.name)
        print(f"{group} pods by name: {[p.metadata.labels[INDEX] for p in by_name]} (ranks)")
        return {int(p.metadata.labels[INDEX]): p.spec.node_name for p in pods}

    return wait_until(f"pods of {group} bound", bound, timeout=120)


def test_trainer_lands_in_one_block_in_rank_order(
    kube: Kube, namespace: str, fleet: list[Json], controller: ControllerProc
) -> None:
    block_of = {n["metadata"]["name"]: n["metadata"]["labels"][BLOCK] for n in fleet}
    # the first pipeline's trainer fills one rack (2 of the 8 nodes) and keeps running
    fill_tj, fill_rt = tas_example(namespace, "fill", 2, RACK, "600s")
    apply(kube, namespace, fill_tj, fill_rt)
    fill = kube.wait_workload(namespace, "fill-node-a0", _admitted, "admitted", timeout=180)
    # the preview (trainweave plan -o yaml) is the topologyRequest Kueue built
    live = {ps["name"]: ps["topologyRequest"] for ps in fill["spec"]["podSets"]}
    assert live == _preview_requests(fill_tj, fill_rt, "fill-node-a0")
    fill_nodes = _placed(kube, namespace, "fill-node-a0", 2)
    (fill_block,) = {block_of[n] for n in fill_nodes.values()}

    big_tj, big_rt = tas_example(namespace, "big", 4, BLOCK, "5s")
    apply(kube, namespace, big_tj, big_rt)
    wl = kube.wait_workload(namespace, "big-node-a0", _admitted, "admitted", timeout=180)
    print("\n$ kubectl get workload big-node-a0 -o yaml  # status.admission")
    print(yaml.safe_dump({"status": {"admission": wl["status"]["admission"]}}, sort_keys=False))
    (podset,) = wl["spec"]["podSets"]
    assert podset["topologyRequest"] == {"required": BLOCK, "podIndexLabel": INDEX}
    assert {podset["name"]: podset["topologyRequest"]} == _preview_requests(
        big_tj, big_rt, "big-node-a0"
    )
    hosts = slot_hosts(wl)
    placed = _placed(kube, namespace, "big-node-a0", 4)
    print(f"fill (rack): {fill_nodes}\nbig (block): {placed}")
    # all in one block, the one the first trainer left whole
    assert {block_of[h] for h in hosts} == {block_of[n] for n in placed.values()}
    (big_block,) = {block_of[n] for n in placed.values()}
    assert big_block != fill_block
    # rank i on the host Kueue assigned to slot i (Argo names pods <workflow>-node-<hash>: an
    # order other than the ranks' would match the slots by chance, 1 in 24)
    assert placed == dict(enumerate(hosts))
    wait_condition(kube, namespace, "Complete", name="big", timeout=240)


def _mpi_example(ns: str, nodes: int) -> tuple[Json, Json]:
    """examples/mpi fitted to kwok: the launcher apart from ``nodes`` sshd node pods of 8 GPUs
    (``runLauncherAsNode: false``: two PodSets), both requiring one block as one PodSet group."""
    tj = yaml.safe_load((ROOT / "examples/mpi/trainjob.yaml").read_text())
    rt = yaml.safe_load((ROOT / "examples/mpi/runtime.yaml").read_text())
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {"name": "mpi", "namespace": ns}
    rt["spec"]["mlPolicy"]["mpi"]["runLauncherAsNode"] = False
    tj["metadata"] = {"name": "mpi", "namespace": ns}
    tj["spec"]["runtimeRef"] = {"name": "mpi", "kind": "TrainingRuntime"}
    tj["spec"]["trainer"]["numNodes"] = nodes
    tj["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    gpus = {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"}
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "gpu"
        pod = rjob["template"]["spec"]["template"]
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations["kueue.x-k8s.io/podset-required-topology"] = BLOCK
        annotations["kueue.x-k8s.io/podset-group-name"] = "mpi"
        for c in pod["spec"]["containers"]:
            c["command"] = ["true"]  # Argo's emissary cannot look images up offline
            c.pop("args", None)
        if rjob["name"] == "node":  # sshd: runs until the launcher is done (an Argo daemon)
            annotations["trainweave.test/duration"] = "10m"
            pod["spec"]["containers"][0]["resources"] = {
                "requests": gpus,
                "limits": {"nvidia.com/gpu": "8"},
            }
        else:
            annotations["trainweave.test/duration"] = "5s"
    return tj, copy.deepcopy(rt)


def test_mpi_launcher_and_nodes_keep_rank_order_as_a_podset_group(
    kube: Kube, namespace: str, fleet: list[Json], controller: ControllerProc
) -> None:
    """Two PodSets in one group: Kueue's ungater ranks the smaller (launcher) 0 and the larger
    (nodes) from 1 (``rankOffsets``); trainweave labels them so, and each lands on its slot."""
    block_of = {n["metadata"]["name"]: n["metadata"]["labels"][BLOCK] for n in fleet}
    tj, rt = _mpi_example(namespace, 4)
    apply(kube, namespace, tj, rt)
    wl = kube.wait_workload(namespace, "mpi-node-a0", _admitted, "admitted", timeout=180)
    assert {ps["name"]: ps["topologyRequest"] for ps in wl["spec"]["podSets"]} == (
        _preview_requests(tj, rt, "mpi-node-a0")
    )
    by_count = {ps["count"]: ps["name"] for ps in wl["spec"]["podSets"]}
    launcher_slots, node_slots = slot_hosts(wl, by_count[1]), slot_hosts(wl, by_count[4])
    print(f"launcher slots: {launcher_slots}\nnode slots: {node_slots}")

    def bound() -> dict[str, dict[int, str]] | None:
        pods = [p for p in kube.group_pods(namespace, "mpi-node-a0") if p.spec.node_name]
        if len(pods) != 5:
            return None
        out: dict[str, dict[int, str]] = {"launcher": {}, "node": {}}
        names = [p.metadata.labels[INDEX] for p in sorted(pods, key=lambda p: p.metadata.name)]
        print(f"mpi-node-a0 pods by name: {names} (ranks)")
        for p in pods:
            job = p.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]
            out[job][int(p.metadata.labels[INDEX])] = p.spec.node_name
        return out

    placed = wait_until("MPI pods bound", bound, timeout=120)
    print(f"placed by rank: {placed}")
    assert placed["launcher"] == {0: launcher_slots[0]}
    assert placed["node"] == {i + 1: host for i, host in enumerate(node_slots)}
    assert len({block_of[h] for h in [*launcher_slots, *node_slots]}) == 1
    wait_condition(kube, namespace, "Complete", name="mpi", timeout=240)


@pytest.mark.serial  # asks for upstream_results (upstream on): no trainweave controller meanwhile
def test_upstream_places_the_same_trainer_the_same_way(upstream_results: UpstreamResults) -> None:
    """The dynamic oracle for placement: the same two TrainJobs under Kubeflow Trainer + JobSet +
    Kueue (one Workload per TrainJob in the TAS-only queue, `hack/cluster.py upstream on`): the
    4 x 8-GPU trainer lands in the block the first one left whole, rank i on the i-th host of
    its PodSet's topologyAssignment, as under trainweave (docs/fidelity.md). The TrainJobs ran
    in tests/e2e/upstream_phase.py's ``tas`` half (its own namespace and fleet), with upstream's
    other halves."""
    up = upstream_results.tas.get()
    print(
        f"\nupstream node PodSet topologyRequest: {up.node_request}"
        f"\nupstream fill (rack): {up.fill_nodes}\nupstream big (block): {up.placed}"
        f"\nupstream PodSets TAS-placed: {up.tas_podsets}"
    )
    (fill_block,) = {up.block_of[n] for n in up.fill_nodes.values()}
    assert (up.node_request or {}).get("required") == BLOCK, up.node_request
    (big_block,) = {up.block_of[n] for n in up.placed.values()}
    assert big_block != fill_block
    assert up.placed == dict(enumerate(up.hosts))  # rank i on slot i, as under trainweave
    assert up.big_complete, f"upstream big not Complete in 240 s: {up.big_status}"
    assert up.problems == (), f"pods reference missing objects: {list(up.problems)}"
