"""The e2e tier's pipeline: the llm-finetune example sized for kwok, with pod outcome knobs, and
the calls that apply it and wait on its TrainJob (shared by the controller and upstream tests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes.client.exceptions import ApiException

from trainweave.integrations.views.decide import verdict
from trainweave.integrations.views.read.argo_view import view

from .kube import ARGO, Kube, condition, wait_until

ROOT = Path(__file__).resolve().parents[2]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
RJOBS = ("dataset-initializer", "model-initializer", "node", "model-exporter")
Json = dict[str, Any]


def example(
    ns: str,
    name: str = "ft",
    *,
    codes: dict[str, list[int]] | None = None,
    duration: str = "1s",
    durations: dict[str, str] | None = None,
    max_restarts: int = 0,
    deadline: int | None = None,
    suspend: bool = False,
    nodes: int = 2,
    gpus: int = 1,
    runtime_name: str = "llm-finetune",
) -> tuple[Json, Json]:
    """The llm-finetune example in ``ns``, sized for kwok, with pod outcome knobs."""
    tj = yaml.safe_load((ROOT / "examples/llm-finetune/trainjob.yaml").read_text())
    rt = yaml.safe_load((ROOT / "examples/llm-finetune/runtime.yaml").read_text())
    tj["metadata"] = {"name": name, "namespace": ns}
    rt["metadata"]["namespace"] = ns
    rt["metadata"]["name"] = runtime_name
    tj["spec"]["runtimeRef"]["name"] = "llm-finetune"
    for init in ("dataset", "model"):
        tj["spec"]["initializer"][init].pop("secretRef", None)
    spec = rt["spec"]["template"]["spec"]
    spec.pop("volumeClaimPolicies", None)
    if max_restarts:
        spec["failurePolicy"] = {"maxRestarts": max_restarts}
    for rjob in spec["replicatedJobs"]:
        meta = rjob["template"]["metadata"]
        queue = meta["labels"]["kueue.x-k8s.io/queue-name"]
        meta["labels"]["kueue.x-k8s.io/queue-name"] = queue.removesuffix("-queue")
        pod = rjob["template"]["spec"]["template"]
        pod["spec"]["volumes"] = [{"name": "initializer", "emptyDir": {}}]  # PVC stand-in
        for c in pod["spec"]["containers"]:
            c.setdefault("command", ["true"])  # Argo's emissary cannot look images up offline
            if "resources" in c:
                c["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
        ann = pod.setdefault("metadata", {}).setdefault("annotations", {})
        ann["trainweave.test/duration"] = (durations or {}).get(rjob["name"], duration)
        ann["trainweave.test/attempt"] = "{{retries}}"
        for i, code in enumerate((codes or {}).get(rjob["name"], [])):
            ann[f"trainweave.test/exit-code.{i}"] = str(code)
    tj["spec"]["trainer"]["numNodes"] = nodes
    gpu = {"nvidia.com/gpu": str(gpus)}
    tj["spec"]["trainer"]["resourcesPerNode"] = {
        "requests": {"cpu": "1", "memory": "1Gi", **gpu},
        "limits": gpu,
    }
    if deadline:
        tj["spec"]["activeDeadlineSeconds"] = deadline
    else:
        tj["spec"].pop("activeDeadlineSeconds", None)
    if suspend:
        tj["spec"]["suspend"] = True
    return tj, rt


def apply(kube: Kube, ns: str, tj: Json, rt: Json | None) -> None:
    """The runtime, then the TrainJob. With Kueue's TrainJob integration on (the upstream phase),
    Kueue's webhook looks the runtime up in its informer cache and refuses the TrainJob ("runtime
    ... not found") until the cache has it: the TrainJob is created once that is no longer said."""
    if rt is not None:
        kube.create(TRAINER, "trainingruntimes", rt, ns)

    def created() -> bool:
        try:
            kube.create(TRAINER, "trainjobs", tj, ns)
        except ApiException as err:
            if err.status == 403 and "not found" in str(err.body):
                return False
            raise
        return True

    wait_until(f"TrainJob {tj['metadata']['name']} accepted", created, timeout=30)


def trainjob(kube: Kube, ns: str, name: str = "ft") -> Json:
    return cast(Json, kube.custom.get_namespaced_custom_object(*TRAINER, ns, "trainjobs", name))


TERMINAL = ("Complete", "Failed")


def ended(tj: Json) -> Json | None:
    """The TrainJob's terminal condition (Complete or Failed, True), if it has one."""
    for ctype in TERMINAL:
        c = condition(tj, ctype)
        if c and c.get("status") == "True":
            return c
    return None


def wait_condition(kube: Kube, ns: str, ctype: str, timeout: float = 180, name: str = "ft") -> Json:
    """Until the TrainJob has ``ctype`` True. A wait for a terminal condition ends at the first
    terminal condition: the other one fails the test at once, with its reason and message."""

    def ok() -> Json | None:
        tj = trainjob(kube, ns, name)
        c = condition(tj, ctype)
        if c and c.get("status") == "True":
            return tj
        end = ended(tj) if ctype in TERMINAL else None
        if end is not None:
            raise AssertionError(
                f"TrainJob {ns}/{name} ended {end['type']} ({end.get('reason')}: "
                f"{end.get('message')}), waiting for {ctype}"
            )
        return None

    return wait_until(f"TrainJob {name} {ctype}", ok, timeout=timeout)


def workload_done(kube: Kube, ns: str, name: str) -> bool:
    """The Workload holds no quota any more: gone, or Finished."""
    wl = kube.workload(ns, name)
    if wl is None:
        return True
    c = condition(wl, "Finished")
    return bool(c and c.get("status") == "True")


def workflows(kube: Kube, ns: str) -> list[Json]:
    return kube.list(ARGO, "workflows", ns)


# How a pipeline must end, for tests that disturb the controller and compare with an undisturbed
# run: (example knobs, terminal condition, its reason, the Workflows the TrainJob ends with).
ENDINGS: dict[str, tuple[Json, str, str, list[str]]] = {
    "success": ({}, "Complete", "AllJobsCompleted", ["ft"]),
    "max-restarts": (
        {"nodes": 1, "max_restarts": 1, "codes": {"node": [1]}},
        "Failed",
        "ReachedMaxRestarts",
        ["ft", "ft-r1"],
    ),
}


def for_upstream(ns: str, tj: Json, rt: Json) -> None:
    """Queue wiring as Trainer + Kueue users write it: the TrainJob's queue-name label (one
    Workload per TrainJob); no per-step queues, no Argo attempt knob (a Job's pod counts its
    attempts in ``batch.kubernetes.io/job-index-failure-count``, which the kwok stage reads)."""
    tj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "all"
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name", None)
        ann = rjob["template"]["spec"]["template"]["metadata"]["annotations"]
        ann.pop("trainweave.test/attempt", None)


def trainer_spent(wf: Json) -> dict[str, int]:
    """The trainer step's counted failures per pod, as the controller judges the Workflow (the
    disruptions it recorded, ``trainweave.io/disruptions``, and Argo's attempts)."""
    v = view(wf)
    policy = v.backoff_limits["node"]["node"]
    counted, failed = verdict.spent("node", policy, v.steps["node"], v.disruptions)
    assert failed is None, failed
    return counted
