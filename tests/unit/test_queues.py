"""Kueue queue files: v1beta2 and v1beta1 objects parse; bad ones name file, field and reason."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from trainweave.errors import InputErrors
from trainweave.queues import ClusterQueue, parse_queues

Json = dict[str, Any]

QUEUES = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec:
  nodeLabels: {pool: h100}
  nodeTaints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: gpu-cq}
spec:
  cohortName: research
  namespaceSelector: {}
  queueingStrategy: StrictFIFO
  flavorFungibility: {whenCanBorrow: TryNextFlavor}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: h100
      resources:
      - {name: cpu, nominalQuota: 128}
      - {name: memory, nominalQuota: 1Ti}
      - {name: nvidia.com/gpu, nominalQuota: "16", borrowingLimit: "8", lendingLimit: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: old-cq}
spec:
  cohort: research
  admissionChecks: [prov]
  flavorFungibility: {whenCanBorrow: Borrow}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: gpu, namespace: ml}
spec: {clusterQueue: gpu-cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: anywhere}
spec: {clusterQueue: old-cq}
"""


def _docs() -> list[Json]:
    return list(yaml.safe_load_all(QUEUES))


def test_both_versions_parse() -> None:
    queues = parse_queues([(d, "queues.yaml") for d in _docs()])
    assert sorted(queues.flavors) == ["h100"]
    assert sorted(queues.cluster_queues) == ["gpu-cq", "old-cq"]
    assert queues.cluster_queues["gpu-cq"].spec.cohort == "research"
    assert queues.cluster_queues["old-cq"].spec.cohort == "research"
    assert [cq.metadata.name for cq in queues.cohort_members("research")] == ["gpu-cq", "old-cq"]
    quota = queues.cluster_queues["gpu-cq"].spec.resource_groups[0].flavors[0].resources
    assert [(r.name, r.nominal_quota, r.borrowing_limit, r.lending_limit) for r in quota] == [
        ("cpu", "128", None, None),
        ("memory", "1Ti", None, None),
        ("nvidia.com/gpu", "16", "8", "4"),
    ]


@pytest.mark.parametrize(
    ("namespace", "name", "cluster_queue"),
    [
        ("ml", "gpu", "gpu-cq"),
        ("other", "gpu", None),
        ("other", "anywhere", "old-cq"),  # no namespace in the file: kubectl -n decides
    ],
    ids=["same-namespace", "other-namespace", "namespace-less"],
)
def test_local_queue_lookup(namespace: str, name: str, cluster_queue: str | None) -> None:
    queues = parse_queues([(d, "queues.yaml") for d in _docs()])
    lq = queues.local_queue(namespace, name)
    assert (lq.spec.cluster_queue if lq else None) == cluster_queue


def _cq(version: str = "v1beta2", **spec: Any) -> Json:
    base: Json = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
            }
        ]
    }
    base.update(spec)
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": base,
    }


def _with_quota(**fields: Any) -> Json:
    doc = _cq(cohortName="c")
    doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(fields)
    return doc


def _borrowing_without_cohort() -> Json:
    doc = _cq()
    doc["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "2"
    return doc


_RES = "spec.resourceGroups[0].flavors[0].resources[0]"

BAD = [
    (
        "other-kind",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}},
        "bad.yaml: kind: expected a Kueue ResourceFlavor, ClusterQueue, LocalQueue or Topology "
        "(kueue.x-k8s.io/v1beta2 or kueue.x-k8s.io/v1beta1), got apps/v1 Deployment",
    ),
    (
        "cohort-object",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"}},
        "bad.yaml: kind: expected a Kueue ResourceFlavor, ClusterQueue, LocalQueue or Topology "
        "(kueue.x-k8s.io/v1beta2 or kueue.x-k8s.io/v1beta1), got kueue.x-k8s.io/v1beta2 Cohort",
    ),
    (
        "unserved-version",
        {**_cq(), "apiVersion": "kueue.x-k8s.io/v1alpha1"},
        "bad.yaml: apiVersion: expected kueue.x-k8s.io/v1beta2 or kueue.x-k8s.io/v1beta1, "
        "got 'kueue.x-k8s.io/v1alpha1'",
    ),
    ("v1beta1-spelling-in-v1beta2", _cq(cohort="c"), "bad.yaml: spec.cohort: unknown field"),
    (
        "v1beta2-spelling-in-v1beta1",
        _cq("v1beta1", cohortName="c"),
        "bad.yaml: spec.cohortName: unknown field",
    ),
    (
        "bad-quantity",
        _with_quota(nominalQuota="1.2.3"),
        f"bad.yaml: {_RES}.nominalQuota: '1.2.3' is not a Kubernetes quantity",
    ),
    (
        "float-quantity",
        _with_quota(nominalQuota=1.5),
        f"bad.yaml: {_RES}.nominalQuota: must be a quantity (an integer or a string like "
        "'8' or '64Gi'), got 1.5",
    ),
    (
        "negative-quantity",
        _with_quota(lendingLimit="-2"),
        f"bad.yaml: {_RES}.lendingLimit: '-2' must not be negative",
    ),
    ("unknown-quota-field", _with_quota(maxQuota="3"), f"bad.yaml: {_RES}.maxQuota: unknown field"),
    (
        "borrowing-limit-without-cohort",  # CRD CEL rule
        _borrowing_without_cohort(),
        "bad.yaml: spec: borrowingLimit of 'cpu' in flavor 'f' must be nil when cohort is empty",
    ),
    (
        "resources-out-of-order",
        _cq(
            resourceGroups=[
                {
                    "coveredResources": ["cpu", "memory"],
                    "flavors": [
                        {
                            "name": "f",
                            "resources": [
                                {"name": "memory", "nominalQuota": "1Gi"},
                                {"name": "cpu", "nominalQuota": "1"},
                            ],
                        }
                    ],
                }
            ]
        ),
        "bad.yaml: spec.resourceGroups[0]: flavor 'f' must list the coveredResources "
        "['cpu', 'memory'] in order, got ['memory', 'cpu']",
    ),
    (
        "bad-enum",
        _cq(queueingStrategy="LIFO"),
        "bad.yaml: spec.queueingStrategy: Input should be 'StrictFIFO' or 'BestEffortFIFO'",
    ),
    (
        "v1beta2-rejects-borrow",
        _cq(flavorFungibility={"whenCanBorrow": "Borrow"}),
        "bad.yaml: spec.flavorFungibility.whenCanBorrow: "
        "Input should be 'MayStopSearch' or 'TryNextFlavor'",
    ),
    (
        "flavor-taint-effect",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "f"},
            "spec": {"nodeTaints": [{"key": "k", "effect": "Sometimes"}]},
        },
        "bad.yaml: spec.nodeTaints[0].effect: "
        "Input should be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute'",
    ),
    (
        "local-queue-unknown-field",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q", "namespace": "ml"},
            "spec": {"clusterQueue": "cq", "cohort": "x"},
        },
        "bad.yaml: spec.cohort: unknown field",
    ),
    (
        "local-queue-bad-name",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "q"},
            "spec": {"clusterQueue": "GPU_CQ"},
        },
        "bad.yaml: spec.clusterQueue: 'GPU_CQ' must be a DNS subdomain "
        "(lower case, at most 253 characters)",
    ),
    (
        "no-name",
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {}},
        "bad.yaml: metadata.name: required field is missing",
    ),
]


@pytest.mark.parametrize(("doc", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_queue_files(doc: Json, message: str) -> None:
    with pytest.raises(InputErrors) as exc:
        parse_queues([(copy.deepcopy(doc), "bad.yaml")])
    assert [str(e) for e in exc.value.errors] == [message]


def test_duplicates_name_both_files() -> None:
    doc = _cq()
    with pytest.raises(InputErrors) as exc:
        parse_queues([(doc, "a.yaml"), (copy.deepcopy(doc), "b.yaml")])
    assert [str(e) for e in exc.value.errors] == [
        "b.yaml: metadata.name: duplicate ClusterQueue 'cq' (first in a.yaml)"
    ]


def test_all_errors_of_all_files_are_reported() -> None:
    bad_kind = {"apiVersion": "v1", "kind": "ConfigMap"}
    with pytest.raises(InputErrors) as exc:
        parse_queues([(bad_kind, "a.yaml"), (_cq(cohort="x"), "b.yaml")])
    assert [e.source for e in exc.value.errors] == ["a.yaml", "b.yaml"]


def test_v1beta1_cluster_queue_is_a_cluster_queue() -> None:
    queues = parse_queues([(_cq("v1beta1", cohort="c"), "q.yaml")])
    assert isinstance(queues.cluster_queues["cq"], ClusterQueue)
    assert queues.cluster_queues["cq"].spec.cohort == "c"
