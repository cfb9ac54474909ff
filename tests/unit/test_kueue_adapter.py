"""Workload previews: Kueue's role hash reproduced exactly, PodSets, names, queue, priority.

Every expected hash and quantity below was produced by Kueue v0.19.2's own
``pkg/util/pod.GenerateRoleHash`` and apimachinery v0.36.2's
``resource.Quantity`` (a small Go program built against the pinned module),
then pinned here.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import model_job
from tests.versions import PINS
from trainweave.adapters import names
from trainweave.adapters.kueue import workloads
from trainweave.adapters.kueue.podsets import effective_requests, pod_roles
from trainweave.adapters.kueue.rolehash import (
    ARGO_EXECUTOR_IMAGE,
    PodDefaults,
    admitted_pod_spec,
    role_hash,
    shape_json,
)
from trainweave.labels import StepRole
from trainweave.model import Job, Pipeline, Step
from trainweave.quantity import canonical_quantity

Json = dict[str, Any]
RAW = PodDefaults(argo_executor=False, default_toleration_seconds=None)

# (id, admitted pod spec, hash from Kueue's GenerateRoleHash)
HASHES: list[tuple[str, Json, str]] = [
    ("minimal", {"containers": [{"name": "a", "image": "x"}]}, "7aa6c7b8"),
    (
        "canonical-quantities",
        {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "resources": {"requests": {"cpu": "2000m", "memory": "1024Mi"}},
                }
            ]
        },
        "ca75fb86",
    ),
    (
        "ports-default-protocol",
        {
            "containers": [
                {
                    "name": "a",
                    "image": "x",
                    "ports": [
                        {"containerPort": 29500, "name": "rdzv", "protocol": "TCP"},
                        {"containerPort": 22, "protocol": "UDP", "hostPort": 22},
                    ],
                }
            ]
        },
        "80b2ea5b",
    ),
    (
        "every-hashed-field",
        {
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "100m"}}}],
            "containers": [
                {"name": "w"},
                {
                    "name": "a",
                    "resources": {
                        "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"}
                    },
                },
            ],
            "nodeSelector": {"pool": "gpu", "a&b": "<x>"},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "k", "operator": "In", "values": ["a", "b"]}
                                ]
                            }
                        ]
                    },
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 5,
                            "preference": {
                                "matchExpressions": [{"key": "z", "operator": "Exists"}]
                            },
                        }
                    ],
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"b": "1", "a": "2"}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ],
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "matchLabelKeys": ["x"], "namespaceSelector": {}}
                    ],
                },
            },
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "runtimeClassName": "nvidia",
            "priority": 1000,
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {
                        "matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]
                    },
                    "minDomains": 2,
                }
            ],
            "overhead": {"cpu": "250m", "memory": "120Mi"},
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            "resources": {"requests": {"cpu": "10", "memory": "100Gi"}},
        },
        "0fc071f1",
    ),
    (
        "priority-zero",
        {"containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}], "priority": 0},
        "4576969b",
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [h[1:] for h in HASHES], ids=[h[0] for h in HASHES])
def test_role_hash_matches_kueue(spec: Json, expected: str) -> None:
    assert role_hash(spec) == expected


def test_role_hash_shape_bytes() -> None:
    spec = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "2000m"}}}]}
    assert shape_json(spec) == (
        b'{"spec":{"affinity":null,"containers":[{"ports":null,"resources":{"requests":'
        b'{"cpu":"2"}}}],"initContainers":null,"nodeSelector":null,"overhead":null,'
        b'"priority":null,"resourceClaims":null,"runtimeClassName":null,'
        b'"tolerations":null,"topologySpreadConstraints":null}}'
    )


TRAINER_POD: Json = {
    "containers": [
        {
            "name": "node",
            "image": "trainer:1",
            "command": ["torchrun"],
            "resources": {
                "limits": {"nvidia.com/gpu": "8"},
                "requests": {"cpu": "32", "memory": "256Gi"},
            },
            "ports": [{"containerPort": 29400}],
        }
    ],
    "nodeSelector": {"pool": "h100"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
}


@pytest.mark.parametrize(
    ("pod", "defaults", "expected"),
    [
        (TRAINER_POD, PodDefaults(), "4de1b03b"),
        (
            TRAINER_POD,
            PodDefaults(executor_resources={"requests": {"cpu": "10m", "memory": "64Mi"}}),
            "5faad0da",
        ),
        (
            {**TRAINER_POD, "priorityClassName": "high"},
            PodDefaults(
                argo_executor=False, priorities={"high": 1000}, default_toleration_seconds=None
            ),
            "ad308682",
        ),
        ({**TRAINER_POD, "tolerations": [{"operator": "Exists"}]}, PodDefaults(), "31bd64f1"),
    ],
    ids=["argo-defaults", "executor-requests", "priority-class", "tolerates-everything"],
)
def test_admitted_pod_hash(pod: Json, defaults: PodDefaults, expected: str) -> None:
    assert role_hash(admitted_pod_spec(pod, defaults)) == expected


def test_admission_defaults() -> None:
    spec = admitted_pod_spec(TRAINER_POD, PodDefaults())
    assert [c["name"] for c in spec["initContainers"]] == ["init"]
    assert [c["name"] for c in spec["containers"]] == ["wait", "node"]
    assert spec["containers"][1]["resources"]["requests"] == {
        "cpu": "32",
        "memory": "256Gi",
        "nvidia.com/gpu": "8",
    }
    assert spec["containers"][1]["ports"] == [{"containerPort": 29400, "protocol": "TCP"}]
    assert spec["priority"] == 0
    assert [t["key"] for t in spec["tolerations"]] == [
        "nvidia.com/gpu",
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert "priority" not in TRAINER_POD  # the input is not mutated


# (input, Go's resource.Quantity String())
QUANTITIES = [
    ("2000", "2k"),
    ("1000m", "1"),
    ("1024Mi", "1Gi"),
    ("1536Mi", "1536Mi"),
    ("1.5Gi", "1536Mi"),
    ("0.5", "500m"),
    ("0.5Gi", "512Mi"),
    ("1.5e3", "1500"),
    ("10e2", "1e3"),
    ("1e3", "1e3"),
    ("1E6", "1E6"),
    ("01", "01"),
    ("+1", "+1"),
    ("1.0", "1"),
    ("1023Ki", "1023Ki"),
    ("1.5Ki", "1536"),
    ("1000k", "1M"),
    ("0e0", "0"),
    ("8", "8"),
    ("64Gi", "64Gi"),
]


@pytest.mark.parametrize(("value", "expected"), QUANTITIES, ids=[q[0] for q in QUANTITIES])
def test_canonical_quantity_matches_go(value: str, expected: str) -> None:
    assert canonical_quantity(value) == expected


# --- Workloads -------------------------------------------------------------------------------


def _job(name: str, pods: int, requests: dict[str, str], **spec: Any) -> Job:
    return model_job(name, pods, {"requests": requests}, image=f"{name}:1", **spec)


def _pipeline(*steps: Step, attempt: int = 0) -> Pipeline:
    return Pipeline("ft", "ml", steps, "TrainingRuntime", "rt", {}, attempt=attempt)


def test_workload_of_a_step() -> None:
    step = Step("trainer", StepRole.TRAINER, (_job("node", 2, {"nvidia.com/gpu": "8"}),), "gpu")
    (wl,) = workloads.workloads(_pipeline(step, attempt=1))
    podset = wl["spec"]["podSets"][0]
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert wl["kind"] == "Workload"
    assert wl["metadata"] == {
        "name": names.group_name("ft", "trainer", 1),
        "namespace": "ml",
        "annotations": {"kueue.x-k8s.io/is-group-workload": "true"},
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
    }
    assert wl["spec"]["queueName"] == "gpu"
    assert "priorityClassRef" not in wl["spec"] and "priority" not in wl["spec"]
    assert (podset["name"], podset["count"]) == (pod_roles(step)[0].name, 2)
    assert podset["topologyRequest"] == {"podIndexLabel": "kueue.x-k8s.io/pod-group-pod-index"}
    assert [c["name"] for c in podset["template"]["spec"]["containers"]] == ["wait", "node"]


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        ((_job("a", 1, {"cpu": "1"}),), [1]),
        ((_job("a", 1, {"cpu": "1"}), _job("b", 3, {"cpu": "1000m"})), [4]),  # same role hash
        ((_job("a", 1, {"cpu": "1"}), _job("b", 3, {"cpu": "2"})), [1, 3]),
        ((_job("a", 2, {"cpu": "1"}), _job("b", 0, {"cpu": "2"})), [2]),  # no pods, no PodSet
    ],
    ids=["one-job", "identical-roles-merge", "two-roles", "empty-job"],
)
def test_podsets_by_role(jobs: tuple[Job, ...], expected: list[int]) -> None:
    step = Step("s", StepRole.AUXILIARY, jobs, "q")
    roles = pod_roles(step)
    assert sorted(r.count for r in roles) == sorted(expected)
    assert [r.name for r in roles] == sorted(r.name for r in roles)
    assert sum(r.count for r in roles) == step.pods


def test_merged_role_names_both_jobs() -> None:
    step = Step(
        "s", StepRole.AUXILIARY, (_job("a", 1, {"cpu": "1"}), _job("b", 1, {"cpu": "1"})), "q"
    )
    assert pod_roles(step)[0].jobs == ("a", "b")


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        (
            {},
            {
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                }
            },
        ),
        (
            {"high": 1000},
            {
                "priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "high",
                },
                "priority": 1000,
            },
        ),
    ],
    ids=["value-unknown", "value-known"],
)
def test_priority_class(priorities: dict[str, int], expected: Json) -> None:
    step = Step("s", StepRole.TRAINER, (_job("a", 1, {"cpu": "1"}),), "q", priority_class="high")
    (wl,) = workloads.workloads(_pipeline(step), PodDefaults(priorities=priorities))
    got = {k: wl["spec"][k] for k in ("priorityClassRef", "priority") if k in wl["spec"]}
    assert got == expected


def test_effective_requests_include_executor_and_overhead() -> None:
    step = Step(
        "s", StepRole.AUXILIARY, (_job("a", 2, {"cpu": "1"}, overhead={"cpu": "250m"}),), "q"
    )
    defaults = PodDefaults(executor_resources={"requests": {"cpu": "100m", "memory": "64Mi"}})
    (role,) = pod_roles(step, defaults)
    assert role.requests() == {"cpu": "1350m", "memory": "64Mi"}
    assert role.total() == {"cpu": "2700m", "memory": "128Mi"}


def _c(name: str, cpu: str, sidecar: bool = False, limit: bool = False) -> Json:
    c: Json = {"name": name, "resources": {"limits" if limit else "requests": {"cpu": cpu}}}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


@pytest.mark.parametrize(
    ("spec", "cpu"),
    [
        # KEP-753's example: a sidecar adds to the containers' sum; a regular init container
        # after it runs alongside it (i2: 1500m + sidecar 1 > containers 1 + sidecar 1).
        (
            {
                "initContainers": [_c("i1", "2"), _c("s1", "1", sidecar=True), _c("i2", "1500m")],
                "containers": [_c("c", "1")],
            },
            "2500m",
        ),
        # A regular init container before the sidecar does not run alongside it.
        (
            {
                "initContainers": [_c("i1", "2"), _c("s1", "1", sidecar=True)],
                "containers": [_c("c", "1500m")],
            },
            "2500m",
        ),
        # Sidecars accumulate; a limit stands for a missing request.
        (
            {
                "initContainers": [
                    _c("s1", "1", sidecar=True),
                    _c("s2", "500m", sidecar=True, limit=True),
                ],
                "containers": [_c("c", "2")],
            },
            "3500m",
        ),
        # Without sidecars: max(sum of containers, largest init container).
        ({"initContainers": [_c("i1", "4")], "containers": [_c("a", "1"), _c("b", "2")]}, "4"),
        # Pod-level cpu replaces the aggregate; overhead is added on top.
        (
            {
                "initContainers": [_c("s1", "1", sidecar=True)],
                "containers": [_c("c", "2")],
                "resources": {"requests": {"cpu": "5"}},
                "overhead": {"cpu": "250m"},
            },
            "5250m",
        ),
    ],
    ids=["kep-753", "init-before-sidecar", "sidecars-add", "no-sidecar", "pod-level-overhead"],
)
def test_effective_requests_follow_kubernetes_pod_requests(spec: Json, cpu: str) -> None:
    """component-helpers v0.36.2 ``resource.PodRequests``, as Kueue v0.19.2 totals a PodSet."""
    assert effective_requests(spec) == {"cpu": cpu}


def test_workloads_do_not_share_state() -> None:
    step = Step("s", StepRole.AUXILIARY, (_job("a", 1, {"cpu": "1"}),), "q")
    pipeline = _pipeline(step)
    before = copy.deepcopy(step.jobs[0].pod_template)
    assert workloads.workloads(pipeline) == workloads.workloads(pipeline)
    assert step.jobs[0].pod_template == before


def test_the_executor_image_in_role_hashes_is_the_pinned_argo() -> None:
    """Argo's default executor image carries Argo's version (workflow-controller's
    ``executor.image``): the role hash's injected ``wait``/``init`` containers name the pinned one."""
    pin = PINS["ARGO_WORKFLOWS_VERSION"]  # the pin, not ARGO_VERSION: a v4.0.7 run keeps it
    assert f"quay.io/argoproj/argoexec:{pin}" == ARGO_EXECUTOR_IMAGE
