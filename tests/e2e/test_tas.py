"""Topology-Aware Scheduling on the local control plane: a trainer gang placed in one block, in
rank order.

The test makes its own fleet: 8 kwok nodes of 8 GPUs, 2 blocks x 2 racks x 2 hosts, tainted so
that only its TAS ResourceFlavor (which tolerates the taint) lands there; a Topology
(block, rack, hostname) and a TAS-only ClusterQueue. A first pipeline's trainer (2 nodes x 8 GPUs,
``podset-required-topology: rack``) fills one rack; then a 4-node x 8-GPU trainer requiring one
block must go to the other block, all of it. Kueue's Workload says which host each slot of the
PodSet gets (``status.admission.podSetAssignments[].topologyAssignment``); the pod whose
``kueue.x-k8s.io/pod-group-pod-index`` is i must run on the i-th (kueue v0.19.2
``pkg/controller/tas/topology_ungater.go`` ``assignGatedPodsToDomainsByRanks``).
An MPI step of two PodSets in one ``podset-group-name`` (launcher apart from its nodes) keeps
rank order too: launcher 0, nodes 1..N, as the ungater offsets the larger PodSet.
Run with ``-s`` to print the admitted Workload as ``kubectl get workload -o yaml`` would.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes.client.exceptions import ApiException

from trainweave.adapters.kueue import workloads
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob

from .controller_proc import ControllerProc
from .kube import ARGO, KUEUE, Kube, condition_is, wait_until
from .pipelines import TRAINER, apply, example, for_upstream, trainjob, wait_condition

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_LABEL = "trainweave.test/upstream"  # upstream's webhooks see these namespaces only
Json = dict[str, Any]
BLOCK = "trainweave.test/block"
RACK = "trainweave.test/rack"
HOST = "kubernetes.io/hostname"
POOL = "trainweave.test/pool"
TAINT = "trainweave.test/tas"
INDEX = "kueue.x-k8s.io/pod-group-pod-index"
COMPLETION = "batch.kubernetes.io/job-completion-index"


def _nodes(ns: str) -> list[Json]:
    """2 blocks x 2 racks x 2 hosts, 8 GPUs each, kept Ready by kwok."""
    out = []
    for b in range(2):
        for r in range(2):
            for h in range(2):
                name = f"{ns}-b{b}-r{r}-h{h}"[-63:].lstrip("-")
                capacity = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {
                            "name": name,
                            "annotations": {
                                "kwok.x-k8s.io/node": "fake",
                                "node.alpha.kubernetes.io/ttl": "0",
                            },
                            "labels": {
                                "type": "kwok",
                                POOL: ns,
                                BLOCK: f"b{b}",
                                RACK: f"b{b}-r{r}",
                                HOST: name,
                                "kubernetes.io/os": "linux",
                            },
                        },
                        "spec": {"taints": [{"key": TAINT, "value": ns, "effect": "NoSchedule"}]},
                        "status": {"allocatable": capacity, "capacity": capacity},
                    }
                )
    return out


def _queue_objects(ns: str) -> list[tuple[str, Json]]:
    """(plural, object): Topology, TAS flavor, ClusterQueues (cpu: the cluster's cpu flavor;
    gpu: TAS only) and the LocalQueues cpu/gpu the example's steps use."""
    api = "kueue.x-k8s.io/v1beta2"
    selector = {"matchLabels": {"kubernetes.io/metadata.name": ns}}
    return [
        (
            "topologies",
            {
                "apiVersion": api,
                "kind": "Topology",
                "metadata": {"name": ns},
                "spec": {"levels": [{"nodeLabel": level} for level in (BLOCK, RACK, HOST)]},
            },
        ),
        (
            "resourceflavors",
            {
                "apiVersion": api,
                "kind": "ResourceFlavor",
                "metadata": {"name": ns},
                "spec": {
                    "nodeLabels": {POOL: ns},
                    "nodeTaints": [{"key": TAINT, "value": ns, "effect": "NoSchedule"}],
                    "tolerations": [
                        {"key": TAINT, "operator": "Equal", "value": ns, "effect": "NoSchedule"}
                    ],
                    "topologyName": ns,
                },
            },
        ),
        (
            "clusterqueues",
            {
                "apiVersion": api,
                "kind": "ClusterQueue",
                "metadata": {"name": f"{ns}-cpu"},
                "spec": {
                    "namespaceSelector": selector,
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "cpu",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "64"},
                                        {"name": "memory", "nominalQuota": "512Gi"},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        (
            "clusterqueues",
            {
                "apiVersion": api,
                "kind": "ClusterQueue",
                "metadata": {"name": f"{ns}-gpu"},
                "spec": {
                    "namespaceSelector": selector,
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": ns,
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "512"},
                                        {"name": "memory", "nominalQuota": "4Ti"},
                                        {"name": "nvidia.com/gpu", "nominalQuota": "64"},
                                    ],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        *[
            (
                "localqueues",
                {
                    "apiVersion": api,
                    "kind": "LocalQueue",
                    "metadata": {"name": q, "namespace": ns},
                    "spec": {"clusterQueue": f"{ns}-{q}"},
                },
            )
            for q in ("cpu", "gpu")
        ],
    ]


@pytest.fixture
def fleet(kube: Kube, namespace: str) -> Iterator[list[Json]]:
    """The test's nodes and TAS queues; removed afterwards (they are cluster-scoped)."""
    nodes = _nodes(namespace)
    made: list[tuple[str, str]] = []
    try:
        for node in nodes:
            kube.core.create_node(cast(Any, node))  # the client serializes dicts as they are

        def ready() -> bool:
            for node in nodes:
                got = kube.core.read_node(node["metadata"]["name"])
                conds = {c.type: c.status for c in (got.status and got.status.conditions) or []}
                if conds.get("Ready") != "True":
                    return False
            return True

        wait_until("TAS nodes Ready", ready, timeout=60)
        for plural, obj in _queue_objects(namespace):
            ns = obj["metadata"].get("namespace")
            kube.create(KUEUE, plural, obj, ns)
            if not ns:
                made.append((plural, obj["metadata"]["name"]))
        for lq in ("cpu", "gpu"):

            def active(lq: str = lq) -> bool:
                return condition_is(kube.get(KUEUE, "localqueues", lq, namespace), "Active")

            wait_until(f"LocalQueue {lq} Active", active, timeout=60)
        yield nodes
    finally:
        for plural, name in reversed(made):
            kube.delete(KUEUE, plural, name)
        _clear_pods(kube, namespace)
        for node in nodes:
            try:
                kube.core.delete_node(node["metadata"]["name"])
            except ApiException as e:
                if e.status != 404:
                    raise


def _clear_pods(kube: Kube, namespace: str) -> None:
    """The test's pipelines and pods gone before their nodes are: a pod bound to a deleted node
    waits for the pod GC's orphan sweep (about 40 s), and the namespace's deletion with it. The
    TrainJobs and Workflows go first (nothing recreates a pod), then the Workloads (Kueue
    strips its pod finalizers)."""
    for gv, plural in ((TRAINER, "trainjobs"), (ARGO, "workflows"), (KUEUE, "workloads")):
        for obj in kube.list(gv, plural, namespace):
            kube.delete(gv, plural, obj["metadata"]["name"], namespace)
    kube.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_until("the test's pods gone", lambda: not kube.pods(namespace), timeout=60)


def _tas_example(ns: str, name: str, nodes: int, level: str, duration: str) -> tuple[Json, Json]:
    """The e2e llm-finetune pipeline with an 8-GPU trainer of ``nodes`` nodes whose pods require
    one ``level`` domain (the annotation on the runtime's pod template, as upstream's
    ``test/e2e/tas/extended/trainjob_test.go`` puts it)."""
    tj, rt = example(ns, name, nodes=nodes, gpus=8, runtime_name=name, duration="1s")
    tj["spec"]["runtimeRef"]["name"] = name
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        if rjob["name"] == "node":
            meta = rjob["template"]["spec"]["template"]["metadata"]
            meta["annotations"]["kueue.x-k8s.io/podset-required-topology"] = level
            meta["annotations"]["trainweave.test/duration"] = duration
    return tj, rt


def _hosts(wl: Json, podset: str | None = None) -> list[str]:
    """The host of each pod slot of the Workload's TAS PodSet (``podset``, else the only one), in
    slot order (``utiltas.InternalSeqFrom``: slices in order, each domain ``count`` times)."""
    (psa,) = [
        p
        for p in wl["status"]["admission"]["podSetAssignments"]
        if p.get("topologyAssignment") and podset in (None, p["name"])
    ]
    ta = psa["topologyAssignment"]
    assert ta["levels"] == [HOST]  # with a hostname level Kueue assigns hosts only
    out = []
    for s in ta["slices"]:
        (values,) = s["valuesPerLevel"]
        for i in range(s["domainCount"]):
            if "universal" in values:
                host = values["universal"]
            else:
                ind = values["individual"]
                host = ind.get("prefix", "") + ind["roots"][i] + ind.get("suffix", "")
            counts = s["podCounts"]
            count = counts["universal"] if "universal" in counts else counts["individual"][i]
            out += [host] * count
    return out


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
    fill_tj, fill_rt = _tas_example(namespace, "fill", 2, RACK, "600s")
    apply(kube, namespace, fill_tj, fill_rt)
    fill = kube.wait_workload(namespace, "fill-node-a0", _admitted, "admitted", timeout=180)
    # the preview (trainweave plan -o yaml) is the topologyRequest Kueue built
    live = {ps["name"]: ps["topologyRequest"] for ps in fill["spec"]["podSets"]}
    assert live == _preview_requests(fill_tj, fill_rt, "fill-node-a0")
    fill_nodes = _placed(kube, namespace, "fill-node-a0", 2)
    (fill_block,) = {block_of[n] for n in fill_nodes.values()}

    big_tj, big_rt = _tas_example(namespace, "big", 4, BLOCK, "5s")
    apply(kube, namespace, big_tj, big_rt)
    wl = kube.wait_workload(namespace, "big-node-a0", _admitted, "admitted", timeout=180)
    print("\n$ kubectl get workload big-node-a0 -o yaml  # status.admission")
    print(yaml.safe_dump({"status": {"admission": wl["status"]["admission"]}}, sort_keys=False))
    (podset,) = wl["spec"]["podSets"]
    assert podset["topologyRequest"] == {"required": BLOCK, "podIndexLabel": INDEX}
    assert {podset["name"]: podset["topologyRequest"]} == _preview_requests(
        big_tj, big_rt, "big-node-a0"
    )
    hosts = _hosts(wl)
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
    launcher_slots, node_slots = _hosts(wl, by_count[1]), _hosts(wl, by_count[4])
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


def cluster(*args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), *args], check=True)


def _complete(kube: Kube, ns: str, name: str) -> bool:
    return condition_is(trainjob(kube, ns, name), "Complete")


def _upstream_workload(kube: Kube, ns: str, trainjob: str) -> Json | None:
    """Kueue's one Workload of an upstream TrainJob (``trainjob-<name>-<hash>``), once admitted."""
    for wl in kube.list(KUEUE, "workloads", ns):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o["kind"] == "TrainJob" and o["name"] == trainjob for o in owners):
            return wl if _admitted(wl) else None
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


@pytest.mark.serial  # switches upstream on: no trainweave controller may run meanwhile
def test_upstream_places_the_same_trainer_the_same_way(
    kube: Kube, namespace: str, fleet: list[Json]
) -> None:
    """The dynamic oracle for placement: the same two TrainJobs under Kubeflow Trainer + JobSet +
    Kueue (one Workload per TrainJob in the TAS-only queue, `hack/cluster.py upstream on`): the
    4 x 8-GPU trainer lands in the block the first one left whole, rank i on the i-th host of
    its PodSet's topologyAssignment, as under trainweave (docs/fidelity.md)."""
    block_of = {n["metadata"]["name"]: n["metadata"]["labels"][BLOCK] for n in fleet}
    kube.core.patch_namespace(namespace, {"metadata": {"labels": {UPSTREAM_LABEL: "true"}}})
    all_queue = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                 "metadata": {"name": "all", "namespace": namespace},
                 "spec": {"clusterQueue": f"{namespace}-gpu"}}  # fmt: skip
    kube.create(KUEUE, "localqueues", all_queue, namespace)
    cluster("upstream", "on")
    try:
        fill_tj, fill_rt = _tas_example(namespace, "fill", 2, RACK, "600s")
        for_upstream(namespace, fill_tj, fill_rt)
        apply(kube, namespace, fill_tj, fill_rt)
        wait_until(
            "upstream fill admitted", lambda: _upstream_workload(kube, namespace, "fill"), 180
        )
        fill_nodes = _upstream_placed(kube, namespace, "fill", 2)
        (fill_block,) = {block_of[n] for n in fill_nodes.values()}

        big_tj, big_rt = _tas_example(namespace, "big", 4, BLOCK, "5s")
        for_upstream(namespace, big_tj, big_rt)
        apply(kube, namespace, big_tj, big_rt)
        wl = wait_until(
            "upstream big admitted", lambda: _upstream_workload(kube, namespace, "big"), 180
        )
        node_set = next(p for p in wl["spec"]["podSets"] if p["name"] == "node")
        hosts = _hosts(wl, "node")
        placed = _upstream_placed(kube, namespace, "big", 4)
        print(
            f"\nupstream node PodSet topologyRequest: {node_set.get('topologyRequest')}"
            f"\nupstream fill (rack): {fill_nodes}\nupstream big (block): {placed}"
            f"\nupstream PodSets TAS-placed: "
            f"{[p['name'] for p in wl['status']['admission']['podSetAssignments'] if p.get('topologyAssignment')]}"
        )
        assert node_set["topologyRequest"]["required"] == BLOCK
        (big_block,) = {block_of[n] for n in placed.values()}
        assert big_block != fill_block
        assert placed == dict(enumerate(hosts))  # rank i on slot i, as under trainweave
        wait_until("upstream big Complete", lambda: _complete(kube, namespace, "big"), 240)
    finally:
        for wl in kube.list(KUEUE, "workloads", namespace):
            kube.delete(KUEUE, "workloads", wl["metadata"]["name"], namespace)
        for obj in kube.list(TRAINER, "trainjobs", namespace):
            kube.delete(TRAINER, "trainjobs", obj["metadata"]["name"], namespace)
        cluster("upstream", "off")
