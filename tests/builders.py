"""Small test builders: ``make_runtime().with_initializers().gpu(8)`` and friends.

They build wire dicts (what a user writes in YAML), so tests exercise parsing too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from trainweave.model import Job, RetryPolicy

Json = dict[str, Any]
API = "trainer.kubeflow.org/v1alpha1"


def _job(name: str, container: str, ancestor: str | None, queue: str | None, image: str) -> Json:
    labels: dict[str, str] = {}
    if ancestor:
        labels["trainer.kubeflow.org/trainjob-ancestor-step"] = ancestor
    if queue:
        labels["kueue.x-k8s.io/queue-name"] = queue
    return {
        "name": name,
        "template": {
            "metadata": {"labels": labels},
            "spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}},
        },
    }


@dataclass
class RuntimeBuilder:
    """A TrainingRuntime with a torch trainer job ``node`` on ``gpu-queue``."""

    name: str = "rt"
    kind: str = "TrainingRuntime"
    jobs: list[Json] = field(default_factory=list)
    ml_policy: Json = field(default_factory=lambda: {"numNodes": 1, "torch": {}})
    extra_spec: Json = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.jobs:
            self.jobs = [_job("node", "node", "trainer", "gpu-queue", "trainer:1")]

    def with_initializers(self, queue: str = "cpu-queue") -> RuntimeBuilder:
        """Dataset and model initializers (with the ``initializer`` mount) before the trainer."""
        inits = []
        for which in ("dataset-initializer", "model-initializer"):
            job = _job(which, which, which, queue, f"{which}:1")
            container = job["template"]["spec"]["template"]["spec"]["containers"][0]
            container["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
            # a mount names a pod volume, or the API server refuses the pod
            job["template"]["spec"]["template"]["spec"]["volumes"] = [
                {"name": "initializer", "emptyDir": {}}
            ]
            inits.append(job)
        trainer = self.job("node")
        trainer["dependsOn"] = [{"name": j["name"], "status": "Complete"} for j in inits]
        self.jobs = inits + self.jobs
        return self

    def with_exporter(self, queue: str = "cpu-queue") -> RuntimeBuilder:
        """A post-processor job depending on the trainer."""
        job = _job("exporter", "exporter", None, queue, "exporter:1")
        job["dependsOn"] = [{"name": "node", "status": "Complete"}]
        self.jobs.append(job)
        return self

    def gpu(self, count: int) -> RuntimeBuilder:
        """GPU limit on the trainer container."""
        self.container("node")["resources"] = {"limits": {"nvidia.com/gpu": str(count)}}
        return self

    def job(self, name: str) -> Json:
        """The replicatedJob called ``name`` (mutable)."""
        return next(j for j in self.jobs if j["name"] == name)

    def job_spec(self, name: str) -> Json:
        """The batch JobSpec of job ``name`` (mutable)."""
        spec: Json = self.job(name)["template"]["spec"]
        return spec

    def container(self, job: str) -> Json:
        """The only container of job ``job`` (mutable)."""
        container: Json = self.job_spec(job)["template"]["spec"]["containers"][0]
        return container

    def build(self) -> Json:
        """The runtime document."""
        spec: Json = {"template": {"spec": {"replicatedJobs": copy.deepcopy(self.jobs)}}}
        if self.ml_policy:
            spec["mlPolicy"] = copy.deepcopy(self.ml_policy)
        spec["template"]["spec"].update(copy.deepcopy(self.extra_spec))
        meta: Json = {"name": self.name}
        if self.kind == "TrainingRuntime":
            meta["namespace"] = "ml"
        return {"apiVersion": API, "kind": self.kind, "metadata": meta, "spec": spec}


def make_runtime(**kwargs: Any) -> RuntimeBuilder:
    """A runtime builder (see RuntimeBuilder)."""
    return RuntimeBuilder(**kwargs)


def make_trainjob(
    name: str = "tj", runtime: str = "rt", kind: str = "TrainingRuntime", **spec: Any
) -> Json:
    """A TrainJob document in namespace ``ml``; ``spec`` keys are merged in (camelCase)."""
    return {
        "apiVersion": API,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"runtimeRef": {"name": runtime, "kind": kind}, **spec},
    }


def model_job(name: str, pods: int, resources: Json, image: str = "x", **spec: Any) -> Job:
    """A ``model.Job`` of ``pods`` pods, one container ``name`` with ``resources`` (the
    container's ``resources`` field), no retries; ``spec`` adds pod spec fields."""
    pod: Json = {"containers": [{"name": name, "image": image, "resources": resources}], **spec}
    return Job(
        name=name,
        ancestor=None,
        replicas=1,
        pods_per_replica=pods,
        pod_template={"metadata": {}, "spec": pod},
        retry=RetryPolicy(budget=0),
    )
