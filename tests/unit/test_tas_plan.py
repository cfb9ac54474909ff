"""``trainweave plan`` on TAS queues: Topology objects in queue files, the flavor check Kueue's
``checkPodSetAndFlavorMatchForTAS`` makes, what the plan can and cannot say about one domain, and
Workload previews with a topologyRequest valid against Kueue's Workload CRD."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import model_job
from tests.crds import Validator, schema_errors
from trainweave import labels as L
from trainweave.adapters.kueue import workloads
from trainweave.adapters.kueue.plan_format import missing_errors
from trainweave.adapters.kueue.workloads import Fit, format_plan, plan, plan_errors, plan_exit_code
from trainweave.errors import InputErrors
from trainweave.labels import StepRole
from trainweave.model import Job, Pipeline, Step
from trainweave.queues import QueueSet, parse_queues

Json = dict[str, Any]
BLOCK = "cloud.example.com/block"
RACK = "cloud.example.com/rack"
HOST = "kubernetes.io/hostname"
API = "kueue.x-k8s.io/v1beta2"


def _job(name: str, pods: int, annotations: dict[str, str], gpu: str = "8") -> Job:
    job = model_job(name, pods, {"limits": {"nvidia.com/gpu": gpu}})
    template = {"metadata": {"annotations": annotations}, "spec": job.pod_template["spec"]}
    return Job(job.name, job.ancestor, job.replicas, job.pods_per_replica, template, job.retry)


def _pipeline(*jobs: Job) -> Pipeline:
    step = Step("trainer", StepRole.TRAINER, jobs, "gpu")
    return Pipeline("ft", "ml", (step,), "TrainingRuntime", "rt", {})


def _topology(name: str = "dc", levels: tuple[str, ...] = (BLOCK, RACK, HOST)) -> Json:
    return {
        "apiVersion": API,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def _flavor(name: str, topology: str | None) -> Json:
    spec: Json = {"nodeLabels": {"pool": name}}
    if topology:
        spec["topologyName"] = topology
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def _queues(flavors: list[str], *extra: Json, gpus: int = 64) -> QueueSet:
    cq = {
        "apiVersion": API,
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu-cq"},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpus}]}
                        for f in flavors
                    ],
                }
            ]
        },
    }
    lq = {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": "gpu", "namespace": "ml"},
        "spec": {"clusterQueue": "gpu-cq"},
    }
    return parse_queues([(d, "q.yaml") for d in (cq, lq, *extra)])


TAS = _flavor("tas", "dc")
PLAIN = _flavor("plain", None)
REQ = {L.KUEUE_PODSET_REQUIRED_TOPOLOGY: BLOCK}


@pytest.mark.parametrize(
    ("annotations", "flavors", "docs", "fit", "flavor", "finding"),
    [
        (
            REQ,
            ["tas"],
            [TAS, _topology()],
            Fit.NOMINAL,
            "tas",
            "all in one cloud.example.com/block",
        ),
        # a TAS request skips the flavor without a topologyName, takes the next
        (REQ, ["plain", "tas"], [PLAIN, TAS, _topology()], Fit.NOMINAL, "tas", "all in one"),
        (
            REQ,
            ["plain"],
            [PLAIN],
            Fit.NEVER,
            None,
            "flavor plain does not support TopologyAwareScheduling (no spec.topologyName): never",
        ),
        (
            {L.KUEUE_PODSET_REQUIRED_TOPOLOGY: "cloud.example.com/zone"},
            ["tas"],
            [TAS, _topology()],
            Fit.NEVER,
            None,
            "Topology dc of flavor tas has no level cloud.example.com/zone: never admitted",
        ),
        (
            {
                L.KUEUE_PODSET_REQUIRED_TOPOLOGY: RACK,
                L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY: BLOCK,
                L.KUEUE_PODSET_SLICE_SIZE: "2",
            },
            ["tas"],
            [TAS, _topology()],
            Fit.NEVER,
            None,
            f"podset slice topology {BLOCK} is above the podset topology {RACK}",
        ),
        (
            {L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY: "false"},
            ["tas"],
            [TAS, _topology()],
            Fit.NEVER,
            None,
            "'kueue.x-k8s.io/podset-unconstrained-topology: false' names no level",
        ),
        # no annotation: TAS implied on a TAS-only ClusterQueue
        ({}, ["tas"], [TAS, _topology()], Fit.NOMINAL, "tas", "anywhere (TAS implied)"),
        # no annotation on a mixed ClusterQueue: TAS flavors are skipped
        ({}, ["tas", "plain"], [TAS, PLAIN, _topology()], Fit.NOMINAL, "plain", None),
        (
            {L.KUEUE_PODSET_PREFERRED_TOPOLOGY: RACK},
            ["tas"],
            [TAS, _topology()],
            Fit.NOMINAL,
            "tas",
            "preferably in one cloud.example.com/rack domain",
        ),
    ],
    ids=[
        "required-block",
        "skips-plain",
        "no-tas-flavor",
        "no-such-level",
        "slice-above-level",
        "unconstrained-false",
        "implied",
        "mixed-cq-no-request",
        "preferred",
    ],
)
def test_tas_flavor_choice(
    annotations: dict[str, str],
    flavors: list[str],
    docs: list[Json],
    fit: Fit,
    flavor: str | None,
    finding: str | None,
) -> None:
    result = plan(_pipeline(_job("node", 4, annotations)), _queues(flavors, *docs))
    (step,) = result.steps
    assert step.fit is fit
    assert {r.flavor for r in step.resources} == {flavor}
    assert plan_exit_code(result) == (1 if fit is Fit.NEVER else 0)
    if finding is None:
        assert not step.findings
    else:
        assert any(finding in f for f in step.findings), step.findings
    if fit is Fit.NEVER:
        (error,) = plan_errors(result)
        assert error.endswith(
            "(or no flavor matches the pods' nodeSelector/affinity/tolerations/topology): never admitted"
        )


def test_domain_room_is_left_to_kueue() -> None:
    """The note names the pods that must share one domain; node capacity is not in queue files."""
    result = plan(_pipeline(_job("node", 4, REQ)), _queues(["tas"], TAS, _topology()))
    text = format_plan(result)
    (step,) = result.steps
    assert step.findings == (
        f"PodSet {step.podsets[0].name} (node: 4 pods): all in one {BLOCK} domain (flavor tas, "
        f"Topology dc [{BLOCK}, {RACK}, {HOST}]); rank r on the r-th assigned slot. Room in one "
        "domain needs node capacity, which queue files do not hold: Kueue decides at admission",
    )
    assert f"note: trainer: {step.findings[0]}" in text


def test_missing_topology_is_missing() -> None:
    """A TAS flavor without its Topology keeps the ClusterQueue inactive (TopologyNotFound)."""
    result = plan(_pipeline(_job("node", 4, REQ)), _queues(["tas"], TAS))
    (step,) = result.steps
    assert step.fit is Fit.UNKNOWN
    assert step.missing == ("Topology 'dc' (of ResourceFlavor 'tas')",)
    (error,) = missing_errors(result, "q.yaml")
    assert str(error) == (
        "q.yaml: step trainer: Topology 'dc' (of ResourceFlavor 'tas') is not in the queue files: "
        "Kueue would never admit the step"
    )


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ((BLOCK, BLOCK), "levels must be unique"),
        ((HOST, BLOCK), "the kubernetes.io/hostname label can only be used at the lowest level"),
        (("bad label",), "must be a node label name"),
        ((), "List should have at least 1 item"),
    ],
    ids=["duplicate", "hostname-not-lowest", "bad-label", "empty"],
)
def test_bad_topology(levels: tuple[str, ...], message: str) -> None:
    with pytest.raises(InputErrors) as exc:
        parse_queues([(_topology(levels=levels), "t.yaml")])
    assert message in str(exc.value)
    assert str(exc.value).startswith("t.yaml: spec.levels")


def test_topology_v1beta1_parses() -> None:
    doc = {**_topology(), "apiVersion": "kueue.x-k8s.io/v1beta1"}
    queues = parse_queues([(doc, "t.yaml")])
    assert queues.topologies["dc"].levels == [BLOCK, RACK, HOST]


@pytest.mark.schema
def test_tas_workload_preview_is_a_valid_workload(workload_validator: Validator) -> None:
    launcher = _job("launcher", 1, {**REQ, L.KUEUE_PODSET_GROUP_NAME: "mpi"}, gpu="0")
    node = _job("node", 4, {**REQ, L.KUEUE_PODSET_GROUP_NAME: "mpi"})
    sliced = _job(
        "sliced",
        8,
        {
            L.KUEUE_PODSET_PREFERRED_TOPOLOGY: BLOCK,
            L.KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY: RACK,
            L.KUEUE_PODSET_SLICE_SIZE: "4",
        },
        gpu="4",
    )
    layered = _job(
        "layered",
        8,
        {
            L.KUEUE_PODSET_SLICE_CONSTRAINTS: f'[{{"topology":"{BLOCK}","size":8}},'
            f'{{"topology":"{RACK}","size":4}}]'
        },
        gpu="2",
    )
    loose = _job("loose", 2, {L.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY: "true"}, gpu="1")
    (wl,) = workloads.workloads(_pipeline(launcher, node, sliced, layered, loose))
    requests = [ps["topologyRequest"] for ps in wl["spec"]["podSets"]]
    assert len(requests) == 5 and all("podIndexLabel" in r for r in requests)
    assert schema_errors(workload_validator, wl) == []


def _node(name: str, block: str, gpus: str = "8", **spec: Any) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"pool": "tas", BLOCK: block, RACK: block, HOST: name},
        },
        "spec": spec,
        "status": {
            "allocatable": {"nvidia.com/gpu": gpus, "cpu": "64", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],  # ignored
        },
    }


def _fleet(hosts_per_block: int, **spec: Any) -> Json:
    """``kubectl get nodes -o yaml``: a v1 List of 2 blocks of ``hosts_per_block`` hosts."""
    items = [_node(f"b{b}-h{h}", f"b{b}", **spec) for b in range(2) for h in range(hosts_per_block)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.mark.parametrize(
    ("annotations", "fleet", "fit", "finding"),
    [
        (REQ, _fleet(4), Fit.NOMINAL, "the flavor's nodes in the queue files have room for it"),
        (
            REQ,
            _fleet(2),
            Fit.NEVER,
            f"no {BLOCK} domain of flavor tas's 4 nodes holds 4 pods (the largest holds 2): never",
        ),
        ({L.KUEUE_PODSET_PREFERRED_TOPOLOGY: BLOCK}, _fleet(2), Fit.NOMINAL, "have room"),
        (
            {L.KUEUE_PODSET_PREFERRED_TOPOLOGY: BLOCK},
            _fleet(1),
            Fit.NEVER,
            "flavor tas's 2 nodes hold 2 of its 4 pods: never admitted",
        ),
        # nodes whose taint neither the pods nor the flavor tolerate are not the flavor's
        (
            REQ,
            _fleet(1, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
            Fit.NOMINAL,
            "which queue files do not hold",
        ),
    ],
    ids=["block-has-room", "no-block-has-room", "preferred-spreads", "too-few-nodes", "tainted"],
)
def test_domain_capacity_from_nodes(
    annotations: dict[str, str], fleet: Json, fit: Fit, finding: str
) -> None:
    """With the flavor's Nodes in the queue files, the plan counts what one domain holds."""
    result = plan(
        _pipeline(_job("node", 4, annotations)), _queues(["tas"], TAS, _topology(), fleet)
    )
    (step,) = result.steps
    assert step.fit is fit
    assert any(finding in f for f in step.findings), step.findings
    assert plan_exit_code(result) == (1 if fit is Fit.NEVER else 0)


def test_nodes_parse_alone_or_in_a_list() -> None:
    queues = _queues(["tas"], TAS, _topology(), _fleet(1), _node("x", "b9"))
    assert [n.metadata.name for n in queues.nodes] == ["b0-h0", "b1-h0", "x"]
    with pytest.raises(InputErrors) as exc:
        parse_queues([({**_node("y", "b0"), "status": {"allocatable": {"cpu": "lots"}}}, "n.yaml")])
    assert str(exc.value).startswith("n.yaml: status.allocatable.cpu")
