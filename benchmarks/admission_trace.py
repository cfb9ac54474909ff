"""What the admission benchmark submits: seeded traces of TrainJobs shaped like
examples/llm-finetune, their runtimes and the Kueue queues, for upstream (Trainer + JobSet +
Kueue's TrainJob integration) or for trainweave. Pure; benchmarks/admission.py runs them."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

GPU = "nvidia.com/gpu"
GPU_QUOTA = 32  # two trainers of 2 x 8 GPUs
CPU_QUOTA = {"cpu": "64", "gpu": "256"}  # per flavor, both setups
Json = dict[str, Any]


@dataclass(frozen=True)
class Job:
    """One TrainJob of a trace: when it is submitted and how long each of its pods runs."""

    name: str
    arrival: float
    seconds: dict[str, float]


TRACES = ("init-heavy", "init-light", "poisson", "sustained", "prov-init-heavy", "prov-long-init")
# the provisioning traces (benchmarks/admission_capacity.py): GPU nodes made on demand behind
# Kueue's ProvisioningRequest check. prov-init-heavy is init-heavy's trace (the same draws);
# prov-long-init's initializers (140-160 s) outlive the booking and the scale-down after it
# (cluster-autoscaler's 600 s + 600 s, times admission_capacity.TIME: 120 s)
PROVISIONING = ("prov-init-heavy", "prov-long-init")
# GPUs of each GPU step: the trainer (2 nodes x 8, the TrainJob's resourcesPerNode) and the
# sustained trace's evaluator (1 x 8, from the runtime)
STEP_GPUS = {"node": 16, "evaluator": 8}
# sustained: GPU-seconds per pipeline 16 x 10 + 8 x 5 = 200 (means); a mean gap of 6.5 s offers
# 200 / 6.5 = 30.8 GPUs, 0.96 of the quota (offered_gpus prints what the drawn trace offers)
SUSTAINED_GAP = 6.5


def trace(name: str, n: int, seed: int, scale: float = 1.0) -> list[Job]:
    """The seeded trace ``name`` of ``n`` TrainJobs (durations and gaps times ``scale``).

    ``sustained``: init-heavy initializers, a trainer of 8-12 s, then a GPU evaluator of 4-6 s,
    then the exporter; Poisson arrivals every SUSTAINED_GAP s on average. ``prov-init-heavy``:
    init-heavy's; ``prov-long-init``: the same with initializers of 140-160 s."""
    base = "init-heavy" if name in PROVISIONING else name
    rng = random.Random(f"{base}-{seed}")
    heavy = base in ("init-heavy", "poisson", "sustained")
    jobs, t = [], 0.0
    for i in range(n):
        init = rng.uniform(30, 40) if heavy else rng.uniform(2, 3)
        init = rng.uniform(140, 160) if name == "prov-long-init" else init
        train = rng.uniform(8, 12) if heavy else rng.uniform(25, 35)
        seconds = {
            "dataset-initializer": init,
            "model-initializer": init * rng.uniform(0.5, 1.0),
            "node": train,
            "model-exporter": 3.0,
        }
        if name == "sustained":
            seconds["evaluator"] = rng.uniform(4, 6)
        jobs.append(Job(f"ft-{i:02d}", t, {k: round(v * scale, 1) for k, v in seconds.items()}))
        if name == "poisson":
            t += rng.expovariate(1 / 8) * scale
        elif name == "sustained":
            t += rng.expovariate(1 / SUSTAINED_GAP) * scale
    return jobs


def offered_gpus(name: str) -> float:
    """GPUs the trace ``name`` offers on average: expected GPU-seconds per pipeline / mean gap
    (0 for the traces submitted at once). Durations and gaps scale alike (--scale cancels)."""
    if name != "sustained":
        return 0.0
    gpu_s = STEP_GPUS["node"] * 10.0 + STEP_GPUS["evaluator"] * 5.0  # uniform(8, 12), (4, 6)
    return gpu_s / SUSTAINED_GAP


def runtime(ns: str, job: Job, upstream: bool) -> Json:
    """examples/llm-finetune's shape, one runtime per TrainJob (its pods' durations)."""

    def rjob(
        name: str,
        queue: str,
        requests: Json,
        depends: list[str],
        ancestor: str,
        limits: Json | None = None,
    ) -> Json:
        labels = {} if upstream else {"kueue.x-k8s.io/queue-name": queue}
        resources: Json = {"requests": requests, **({"limits": limits} if limits else {})}
        if ancestor:
            labels["trainer.kubeflow.org/trainjob-ancestor-step"] = ancestor
        out: Json = {
            "name": name,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "template": {
                        "metadata": {
                            "annotations": {"trainweave.test/duration": f"{job.seconds[name]}s"}
                        },
                        "spec": {
                            "containers": [
                                {
                                    "name": name,
                                    "image": "registry.invalid/bench:1",
                                    "command": ["true"],
                                    "resources": resources,
                                    "volumeMounts": [
                                        {"name": "initializer", "mountPath": "/workspace"}
                                    ],
                                }
                            ],
                            # the initializers' download folder (a PVC in the example; kwok has
                            # no storage, and Trainer's webhook wants the mount)
                            "volumes": [{"name": "initializer", "emptyDir": {}}],
                        },
                    }
                },
            },
        }
        if depends:
            out["dependsOn"] = [{"name": d, "status": "Complete"} for d in depends]
        return out

    init = {"cpu": "4", "memory": "16Gi"}
    inits = ["dataset-initializer", "model-initializer"]
    jobs = [
        rjob("dataset-initializer", "cpu", init, [], "dataset-initializer"),
        rjob("model-initializer", "cpu", init, [], "model-initializer"),
        rjob("node", "gpu", {"cpu": "1"}, inits, "trainer"),
    ]
    last = "node"
    if "evaluator" in job.seconds:
        # no ancestor label: Trainer v2.3.0 applies resourcesPerNode, numNodes and the TrainJob's
        # image/command only to the `trainer` ancestor (pkg/runtime/framework/plugins/jobset/
        # builder.go, Builder.Trainer), so the evaluator keeps the runtime's 8 GPUs and 1 replica
        gpus = {GPU: str(STEP_GPUS["evaluator"])}
        jobs.append(rjob("evaluator", "gpu", {"cpu": "4", **gpus}, ["node"], "", gpus))
        last = "evaluator"
    jobs.append(rjob("model-exporter", "cpu", {"cpu": "8", "memory": "64Gi"}, [last], ""))
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": f"rt-{job.name}", "namespace": ns},
        "spec": {
            "mlPolicy": {"numNodes": 2, "torch": {}},
            "template": {"spec": {"replicatedJobs": jobs}},
        },
    }


def trainjob(ns: str, job: Job, upstream: bool) -> Json:
    gpus = {GPU: "8"}
    meta: Json = {"name": job.name, "namespace": ns}
    if upstream:
        meta["labels"] = {"kueue.x-k8s.io/queue-name": "all"}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": meta,
        "spec": {
            "runtimeRef": {"name": f"rt-{job.name}", "kind": "TrainingRuntime"},
            "initializer": {
                "dataset": {"storageUri": "hf://bench/data"},
                "model": {"storageUri": "hf://bench/model"},
            },
            "trainer": {
                "numNodes": 2,
                "resourcesPerNode": {
                    "requests": {"cpu": "8", "memory": "32Gi", **gpus},
                    "limits": gpus,
                },
            },
        },
    }


def queues(
    ns: str, upstream: bool, gpus: int = GPU_QUOTA, gpu_flavor: str = "gpu", check: str = ""
) -> list[Json]:
    """upstream: one ClusterQueue ``<ns>-all`` with flavors cpu and gpu; trainweave: ``<ns>-cpu``
    and ``<ns>-gpu``, the same totals (``gpus`` in flavor gpu). ``gpu_flavor``: the GPU flavor's
    name; ``check``: an AdmissionCheck on that flavor of the ClusterQueue that offers it."""

    def flavor(name: str, gpu: int) -> Json:
        return {
            "name": gpu_flavor if name == "gpu" else name,
            "resources": [
                {"name": "cpu", "nominalQuota": CPU_QUOTA[name]},
                {"name": "memory", "nominalQuota": "2Ti"},
                {"name": GPU, "nominalQuota": str(gpu)},
            ],
        }

    def cq(name: str, flavors: list[Json]) -> Json:
        spec: Json = {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "resourceGroups": [{"coveredResources": ["cpu", "memory", GPU], "flavors": flavors}],
        }
        if check and any(f["name"] == gpu_flavor for f in flavors):
            spec["admissionChecksStrategy"] = {
                "admissionChecks": [{"name": check, "onFlavors": [gpu_flavor]}]
            }
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": f"{ns}-{name}"},
            "spec": spec,
        }

    def lq(name: str) -> Json:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterQueue": f"{ns}-{name}"},
        }

    if upstream:
        return [cq("all", [flavor("cpu", 0), flavor("gpu", gpus)]), lq("all")]
    return [
        cq("cpu", [flavor("cpu", 0)]),
        cq("gpu", [flavor("gpu", gpus)]),
        lq("cpu"),
        lq("gpu"),
    ]
