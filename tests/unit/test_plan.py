"""Quota plan: queue resolution, flavor choice, nominal/borrowing/never, resource-hours."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from tests.builders import model_job
from trainweave.adapters.kueue.plan_format import missing_errors
from trainweave.adapters.kueue.workloads import Fit, format_plan, plan, plan_errors, plan_exit_code
from trainweave.labels import StepRole
from trainweave.model import Job, Pipeline, Step
from trainweave.queues import QueueSet, parse_queues

Json = dict[str, Any]


def _job(name: str, pods: int, requests: dict[str, str], **spec: Any) -> Job:
    return model_job(name, pods, {"limits": requests}, **spec)


def _step(name: str, queue: str, job: Job, *deps: str, role: StepRole = StepRole.AUXILIARY) -> Step:
    return Step(name, role, (job,), queue, tuple(deps))


def _pipeline(*steps: Step) -> Pipeline:
    return Pipeline("ft", "ml", steps, "TrainingRuntime", "rt", {})


def _flavor(name: str, **spec: Any) -> Json:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def _cq(
    name: str, flavors: list[tuple[str, dict[str, Any]]], cohort: str | None = None, **spec: Any
) -> Json:
    """``flavors``: (flavor, {resource: nominal quota | Quota})."""
    covered = list(flavors[0][1])
    groups = [
        {
            "coveredResources": covered,
            "flavors": [
                {"name": f, "resources": [_quota(r, q) for r, q in quotas.items()]}
                for f, quotas in flavors
            ],
        }
    ]
    body: Json = {"resourceGroups": groups, **spec}
    if cohort:
        body["cohortName"] = cohort
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


class Quota(NamedTuple):
    """A flavor's quota of one resource with its limits (None: the field is not set)."""

    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


def _quota(resource: str, quota: Any) -> Json:
    if not isinstance(quota, Quota):
        return {"name": resource, "nominalQuota": str(quota)}
    out: Json = {"name": resource, "nominalQuota": str(quota.nominal)}
    if quota.borrowing_limit is not None:
        out["borrowingLimit"] = str(quota.borrowing_limit)
    if quota.lending_limit is not None:
        out["lendingLimit"] = str(quota.lending_limit)
    return out


def _lq(name: str, cq: str) -> Json:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"clusterQueue": cq},
    }


def _queues(*docs: Json) -> QueueSet:
    return parse_queues([(d, "q.yaml") for d in docs])


GPU8 = {"nvidia.com/gpu": "8"}


class FitCase(NamedTuple):
    """One step "t" of ``pods`` pods of 8 GPUs on LocalQueue gpu -> gpu-cq, with these queue
    documents: the fit and GPU flavor the plan gives it, and ``trainweave plan``'s exit code."""

    name: str
    pods: int
    queues: list[Json]
    fit: Fit
    flavor: str | None
    exit_code: int


FITS = [
    FitCase(
        name="within-nominal",
        pods=2,
        queues=[_cq("gpu-cq", [("a100", {"nvidia.com/gpu": 16})])],
        fit=Fit.NOMINAL,
        flavor="a100",
        exit_code=0,
    ),
    FitCase(
        name="no-cohort-too-big",
        pods=3,
        queues=[_cq("gpu-cq", [("a100", {"nvidia.com/gpu": 16})])],
        fit=Fit.NEVER,
        flavor=None,
        exit_code=1,
    ),
    FitCase(
        name="borrows-from-peer",
        pods=3,
        queues=[
            _cq("gpu-cq", [("a100", {"nvidia.com/gpu": 16})], cohort="c"),
            _cq("peer", [("a100", {"nvidia.com/gpu": 8})], cohort="c"),
        ],
        fit=Fit.BORROWING,
        flavor="a100",
        exit_code=0,
    ),
    FitCase(
        name="peer-lends-only-lendingLimit",
        pods=3,
        queues=[
            _cq("gpu-cq", [("a100", {"nvidia.com/gpu": 16})], cohort="c"),
            _cq("peer", [("a100", {"nvidia.com/gpu": Quota(8, lending_limit=4)})], cohort="c"),
        ],
        fit=Fit.NEVER,
        flavor=None,
        exit_code=1,
    ),
    FitCase(
        name="borrowingLimit-caps",
        pods=3,
        queues=[
            _cq("gpu-cq", [("a100", {"nvidia.com/gpu": Quota(16, borrowing_limit=4)})], cohort="c"),
            _cq("peer", [("a100", {"nvidia.com/gpu": 32})], cohort="c"),
        ],
        fit=Fit.NEVER,
        flavor=None,
        exit_code=1,
    ),
    FitCase(
        name="own-lendingLimit-still-usable",
        pods=2,
        queues=[
            _cq("gpu-cq", [("a100", {"nvidia.com/gpu": Quota(16, lending_limit=8)})], cohort="c")
        ],
        fit=Fit.NOMINAL,
        flavor="a100",
        exit_code=0,
    ),
    FitCase(
        name="first-flavor-that-fits",
        pods=3,
        queues=[
            _cq("gpu-cq", [("a100", {"nvidia.com/gpu": 16}), ("h100", {"nvidia.com/gpu": 32})])
        ],
        fit=Fit.NOMINAL,
        flavor="h100",
        exit_code=0,
    ),
    FitCase(
        name="may-stop-search-borrows-in-first",
        pods=3,
        queues=[
            _cq(
                "gpu-cq",
                [("a100", {"nvidia.com/gpu": 16}), ("h100", {"nvidia.com/gpu": 32})],
                cohort="c",
            ),
            _cq("peer", [("a100", {"nvidia.com/gpu": 16})], cohort="c"),
        ],
        fit=Fit.BORROWING,
        flavor="a100",
        exit_code=0,
    ),
    FitCase(
        name="try-next-flavor-avoids-borrowing",
        pods=3,
        queues=[
            _cq(
                "gpu-cq",
                [("a100", {"nvidia.com/gpu": 16}), ("h100", {"nvidia.com/gpu": 32})],
                cohort="c",
                flavorFungibility={"whenCanBorrow": "TryNextFlavor"},
            ),
            _cq("peer", [("a100", {"nvidia.com/gpu": 16})], cohort="c"),
        ],
        fit=Fit.NOMINAL,
        flavor="h100",
        exit_code=0,
    ),
    FitCase(
        name="resource-not-covered",
        pods=1,
        queues=[_cq("gpu-cq", [("a100", {"cpu": 64})])],
        fit=Fit.NEVER,
        flavor=None,
        exit_code=1,
    ),
]


@pytest.mark.parametrize("case", FITS, ids=[case.name for case in FITS])
def test_fit(case: FitCase) -> None:
    flavors = [_flavor("a100"), _flavor("h100")]
    pipeline = _pipeline(_step("t", "gpu", _job("node", case.pods, GPU8)))
    result = plan(pipeline, _queues(*flavors, *case.queues, _lq("gpu", "gpu-cq")))
    (step,) = result.steps
    gpu = [r for r in step.resources if r.resource == "nvidia.com/gpu"]
    assert (step.fit, gpu[0].flavor) == (case.fit, case.flavor)
    assert gpu[0].total == str(8 * case.pods)
    assert plan_exit_code(result) == case.exit_code


@pytest.mark.parametrize(
    ("pod_spec", "flavor"),
    [
        ({}, "spot"),
        ({"nodeSelector": {"pool": "reserved"}}, "reserved"),
        ({"nodeSelector": {"unrelated": "x"}}, "spot"),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "pool", "operator": "NotIn", "values": ["spot"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "reserved",
        ),
        ({"nodeSelector": {"pool": "none"}}, None),
    ],
    ids=[
        "first-flavor",
        "node-selector",
        "foreign-key-ignored",
        "affinity-not-in",
        "no-flavor-matches",
    ],
)
def test_flavor_node_labels(pod_spec: Json, flavor: str | None) -> None:
    queues = _queues(
        _flavor("spot", nodeLabels={"pool": "spot"}),
        _flavor("reserved", nodeLabels={"pool": "reserved"}),
        _cq("cq", [("spot", {"cpu": 8}), ("reserved", {"cpu": 8})]),
        _lq("q", "cq"),
    )
    result = plan(_pipeline(_step("s", "q", _job("a", 1, {"cpu": "4"}, **pod_spec))), queues)
    assert result.steps[0].resources[0].flavor == flavor


@pytest.mark.parametrize(
    ("tolerations", "flavor"),
    [([], "plain"), ([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}], "tainted")],
    ids=["untolerated-taint-skipped", "tolerated"],
)
def test_flavor_taints(tolerations: list[Json], flavor: str) -> None:
    queues = _queues(
        _flavor("tainted", nodeTaints=[{"key": "gpu", "effect": "NoSchedule"}]),
        _flavor("plain"),
        _cq("cq", [("tainted", {"cpu": 8}), ("plain", {"cpu": 8})]),
        _lq("q", "cq"),
    )
    job = _job("a", 1, {"cpu": "1"}, tolerations=tolerations)
    assert plan(_pipeline(_step("s", "q", job)), queues).steps[0].resources[0].flavor == flavor


@pytest.mark.parametrize(
    ("docs", "missing"),
    [
        ([], "LocalQueue ml/gpu"),
        ([_lq("gpu", "gone")], "ClusterQueue 'gone' (of LocalQueue gpu)"),
        (
            [_lq("gpu", "cq"), _cq("cq", [("h100", {"nvidia.com/gpu": 8})])],
            "ResourceFlavor 'h100' (of ClusterQueue cq)",
        ),
    ],
    ids=["no-local-queue", "no-cluster-queue", "no-resource-flavor"],
)
def test_missing_queues_are_input_errors(docs: list[Json], missing: str) -> None:
    """A queue object the step needs and the files lack: fit unknown, and an InputError naming
    the step and the object (``trainweave plan`` exits 2), not a note with exit 0."""
    result = plan(_pipeline(_step("t", "gpu", _job("n", 1, GPU8))), _queues(*docs))
    (step,) = result.steps
    assert (step.fit, step.missing) == (Fit.UNKNOWN, (missing,))
    assert [str(e) for e in missing_errors(result, "q.yaml")] == [
        f"q.yaml: step t: {missing} is not in the queue files: Kueue would never admit the step"
    ]
    assert plan_exit_code(result) == 0  # not "never": the CLI refuses the input instead


def test_pods_resource_counts_pods() -> None:
    queues = _queues(_flavor("f"), _cq("cq", [("f", {"cpu": 64, "pods": 2})]), _lq("q", "cq"))
    result = plan(_pipeline(_step("s", "q", _job("a", 3, {"cpu": "1"}))), queues)
    pods = next(r for r in result.steps[0].resources if r.resource == "pods")
    assert (pods.total, pods.fit) == ("3", Fit.NEVER)


def _llm(gpu_quota: int = 16) -> tuple[Pipeline, QueueSet]:
    pipeline = _pipeline(
        _step(
            "dataset",
            "cpu",
            _job("dataset", 1, {"cpu": "4", "memory": "16Gi"}),
            role=StepRole.INITIALIZER,
        ),
        _step(
            "model",
            "cpu",
            _job("model", 1, {"cpu": "4", "memory": "16Gi"}),
            role=StepRole.INITIALIZER,
        ),
        _step(
            "trainer",
            "gpu",
            _job("node", 2, {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}),
            "dataset",
            "model",
            role=StepRole.TRAINER,
        ),
        _step(
            "export",
            "gpu",
            _job("export", 1, {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}),
            "trainer",
        ),
    )
    queues = _queues(
        _flavor("cpu"),
        _flavor("h100"),
        _cq("cpu-cq", [("cpu", {"cpu": 64, "memory": "512Gi"})]),
        _cq("gpu-cq", [("h100", {"cpu": 128, "memory": "1Ti", "nvidia.com/gpu": gpu_quota})]),
        _lq("cpu", "cpu-cq"),
        _lq("gpu", "gpu-cq"),
    )
    return pipeline, queues


DURATIONS = {"dataset": 0.5, "model": 1.0, "trainer": 6.0, "export": 0.5}


def test_resource_hours_of_a_known_pipeline() -> None:
    pipeline, queues = _llm()
    result = plan(pipeline, queues, DURATIONS)
    hours = {h.resource: h for h in result.hours}
    assert list(hours) == ["nvidia.com/gpu", "cpu", "memory"]
    gpu = hours["nvidia.com/gpu"]
    # trainer 16 GPUs 1h..7h, export 1 GPU 7h..7.5h; makespan 7.5h (critical path model -> trainer -> export)
    assert (gpu.used, gpu.whole, gpu.whole_reclaim) == (
        Decimal("96.5"),
        Decimal("127.5"),
        Decimal("119.5"),
    )
    assert (gpu.idle_whole, gpu.idle_reclaim) == (Decimal("31.0"), Decimal("23.0"))
    cpu = hours["cpu"]
    # used 4*.5 + 4*1 + 64*6 + 8*.5 = 394; whole 80*7.5 = 600; reclaim 4*.5+4*1+64*7+8*7.5 = 514
    assert (cpu.used, cpu.whole, cpu.whole_reclaim) == (
        Decimal("394.0"),
        Decimal("600.0"),
        Decimal("514.0"),
    )


def test_parallel_steps_overlap() -> None:
    pipeline = _pipeline(
        _step("a", "q", _job("a", 1, GPU8)),
        _step("b", "q", _job("b", 1, GPU8)),
        _step("c", "q", _job("c", 1, GPU8), "a", "b"),
    )
    result = plan(pipeline, QueueSet(), {"a": 1, "b": 3, "c": 2})
    (gpu,) = result.hours
    # makespan 5h: whole = 24 GPUs * 5h; reclaim = 8*1 + 8*3 + 8*5; used = 8*(1+3+2)
    assert (gpu.used, gpu.whole, gpu.whole_reclaim) == (Decimal(48), Decimal(120), Decimal(72))


def test_missing_durations_are_a_finding() -> None:
    pipeline, queues = _llm()
    result = plan(pipeline, queues, {"dataset": 1, "bogus": 2})
    assert result.hours == ()
    assert result.findings == (
        "no duration for step(s) model, trainer, export: hours not computed",
        "durations name unknown step(s) bogus",
    )


def test_format_plan() -> None:
    pipeline, queues = _llm()
    text = format_plan(plan(pipeline, queues, DURATIONS))
    assert text.splitlines()[:6] == [
        "TrainJob ml/ft",
        "STEP     ROLE         PODS  REQUESTS (all pods)                      QUEUE -> CLUSTERQUEUE  FLAVOR  FITS",
        "dataset  initializer  1     cpu=4, memory=16Gi                       cpu -> cpu-cq          cpu     nominal",
        "model    initializer  1     cpu=4, memory=16Gi                       cpu -> cpu-cq          cpu     nominal",
        "trainer  trainer      2     cpu=64, memory=512Gi, nvidia.com/gpu=16  gpu -> gpu-cq          h100    nominal",
        "export   auxiliary    1     cpu=8, memory=64Gi, nvidia.com/gpu=1     gpu -> gpu-cq          h100    nominal",
    ]
    assert (
        "Idle GPU-hours avoided by per-step admission: 31.00 (vs whole-pipeline admission), "
        "23.00 (vs whole with reclaimablePods)"
    ) in text


def test_never_fits_exit_code_and_message() -> None:
    pipeline, queues = _llm(gpu_quota=8)
    result = plan(pipeline, queues)
    assert plan_exit_code(result) == 1
    assert plan_errors(result) == [
        "step trainer: nvidia.com/gpu 16 exceeds the most ClusterQueue gpu-cq could ever hold "
        "(8, nominal 8): never admitted"
    ]
    lines = format_plan(result).splitlines()
    assert lines[4].split() == [
        "trainer",
        "trainer",
        "2",
        "cpu=64,",
        "memory=512Gi,",
        "nvidia.com/gpu=16",
        "gpu",
        "->",
        "gpu-cq",
        "-",
        "never",
        "(nvidia.com/gpu)",
    ]
    assert lines[-1] == "note: " + plan_errors(result)[0]
