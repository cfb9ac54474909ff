"""A Topology-Aware Scheduling fleet on kwok, for tests/e2e/test_tas.py and the upstream phase
(tests/e2e/upstream_phase.py): 8 kwok nodes of 8 GPUs, 2 blocks x 2 racks x 2 hosts, tainted so
that only the namespace's TAS ResourceFlavor (which tolerates the taint) lands there; a Topology
(block, rack, hostname), a cpu and a TAS-only gpu ClusterQueue and the LocalQueues cpu and gpu.
Everything cluster-scoped is named after the namespace, so fleets of two namespaces never meet.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from kubernetes.client.exceptions import ApiException

from .kube import ARGO, KUEUE, Kube, condition_is, wait_until
from .pipelines import TRAINER, example

Json = dict[str, Any]
BLOCK = "trainweave.test/block"
RACK = "trainweave.test/rack"
HOST = "kubernetes.io/hostname"
POOL = "trainweave.test/pool"
TAINT = "trainweave.test/tas"
INDEX = "kueue.x-k8s.io/pod-group-pod-index"
COMPLETION = "batch.kubernetes.io/job-completion-index"


def fleet_nodes(ns: str) -> list[Json]:
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


def queue_objects(ns: str) -> list[tuple[str, Json]]:
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


def clear_pods(kube: Kube, namespace: str) -> None:
    """The namespace's pipelines and pods gone before their nodes are: a pod bound to a deleted
    node waits for the pod GC's orphan sweep (about 40 s), and the namespace's deletion with it.
    The TrainJobs and Workflows go first (nothing recreates a pod), then the Workloads (Kueue
    strips its pod finalizers)."""
    for gv, plural in ((TRAINER, "trainjobs"), (ARGO, "workflows"), (KUEUE, "workloads")):
        for obj in kube.list(gv, plural, namespace):
            kube.delete(gv, plural, obj["metadata"]["name"], namespace)
    kube.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    wait_until("the test's pods gone", lambda: not kube.pods(namespace), timeout=60)


def _all_ready(kube: Kube, made: list[Json]) -> bool:
    for node in made:
        got = kube.core.read_node(node["metadata"]["name"])
        conds = {c.type: c.status for c in (got.status and got.status.conditions) or []}
        if conds.get("Ready") != "True":
            return False
    return True


def _make_queues(kube: Kube, namespace: str, made: list[tuple[str, str]]) -> None:
    """``queue_objects`` created (the cluster-scoped ones noted in ``made``), LocalQueues Active."""
    for plural, obj in queue_objects(namespace):
        ns = obj["metadata"].get("namespace")
        kube.create(KUEUE, plural, obj, ns)
        if not ns:
            made.append((plural, obj["metadata"]["name"]))
    for lq in ("cpu", "gpu"):

        def active(lq: str = lq) -> bool:
            return condition_is(kube.get(KUEUE, "localqueues", lq, namespace), "Active")

        wait_until(f"LocalQueue {lq} Active", active, timeout=60)


@contextmanager
def fleet_of(kube: Kube, namespace: str) -> Iterator[list[Json]]:
    """The namespace's nodes (Ready) and TAS queues (Active); on exit its pods cleared, then the
    queues and nodes removed (they are cluster-scoped)."""
    made_nodes = fleet_nodes(namespace)
    made: list[tuple[str, str]] = []
    try:
        for node in made_nodes:
            kube.core.create_node(cast(Any, node))  # the client serializes dicts as they are
        wait_until("TAS nodes Ready", lambda: _all_ready(kube, made_nodes), timeout=60)
        _make_queues(kube, namespace, made)
        yield made_nodes
    finally:
        for plural, name in reversed(made):
            kube.delete(KUEUE, plural, name)
        clear_pods(kube, namespace)
        for node in made_nodes:
            try:
                kube.core.delete_node(node["metadata"]["name"])
            except ApiException as e:
                if e.status != 404:
                    raise


def tas_example(ns: str, name: str, nodes: int, level: str, duration: str) -> tuple[Json, Json]:
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


def slot_hosts(wl: Json, podset: str | None = None) -> list[str]:
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
