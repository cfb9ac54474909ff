"""`trainweave render` output on the real engines: the llm-finetune example runs step by step.

No controller here: the rendered manifests are applied as a GitOps user would. Asserts the
render's promises: one Workload per step, named as rendered, with the PodSets (Kueue role
hashes and counts) that `trainweave plan -o yaml` previews; Kueue reserves exactly the requests
the preview totals (a native sidecar and an init container included); the trainer's GPU quota is
reserved only after both initializers finished; the run succeeds.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import utils

from trainweave.adapters.argo import workflow as argo
from trainweave.adapters.kueue import workloads
from trainweave.adapters.kueue.podsets import effective_requests
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.quantity import parse as parse_quantity

from .kube import ARGO, KUEUE, Kube, condition, condition_is, parse_time, wait_until

pytestmark = pytest.mark.e2e
EXAMPLE = Path(__file__).parents[2] / "examples" / "llm-finetune"


def example_in(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The llm-finetune TrainJob and runtime, moved into ``namespace`` for kwok's fake nodes.

    Queues are overridden by TrainJob annotation (the per-test LocalQueues are `cpu`/`gpu`), the
    shared PVC becomes an emptyDir (no volume provisioner here), requests fit a 32-CPU fake node,
    each pod runs 2 s (kwok stage annotation), and every container names its command.
    """
    tj = yaml.safe_load((EXAMPLE / "trainjob.yaml").read_text())
    rt = yaml.safe_load((EXAMPLE / "runtime.yaml").read_text())
    tj["metadata"]["namespace"] = rt["metadata"]["namespace"] = namespace
    tj["metadata"]["annotations"] = {
        "queue.trainweave.io/dataset-initializer": "cpu",
        "queue.trainweave.io/model-initializer": "cpu",
        "queue.trainweave.io/node": "gpu",
        "queue.trainweave.io/model-exporter": "cpu",
    }
    tj["spec"]["trainer"]["resourcesPerNode"]["requests"].update(cpu="8", memory="32Gi")
    del rt["spec"]["template"]["spec"]["volumeClaimPolicies"]
    for job in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = job["template"]["spec"]["template"]
        pod.setdefault("metadata", {})["annotations"] = {"trainweave.test/duration": "2s"}
        pod["spec"]["volumes"] = [{"name": "initializer", "emptyDir": {}}]
        # Argo's emissary needs a command, else it asks the registry for the image's entrypoint
        # (unreachable here; see docs/engines.md). Upstream initializer images rely on theirs.
        container = pod["spec"]["containers"][0]
        container.setdefault("command", ["/entrypoint"])
        if job["name"] == "node":
            # A native sidecar, then a regular init container that runs alongside it: the pod
            # needs max(8 + 1, 10 + 1) CPUs and 32Gi + 512Mi (KEP-753), which Kueue must charge.
            pod["spec"]["initContainers"] = [
                {
                    "name": "metrics",
                    "image": "prom/node-exporter:v1",
                    "command": ["/exporter"],
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "1", "memory": "512Mi"}},
                },
                {
                    "name": "warm-cache",
                    "image": "busybox:1",
                    "command": ["/warm"],
                    "resources": {"requests": {"cpu": "10", "memory": "1Gi"}},
                },
            ]
    return tj, rt


def test_llm_finetune_render_runs_one_gang_per_step(
    kube: Kube, namespace: str, queues: Callable[..., None]
) -> None:
    queues()
    tj, rt = example_in(namespace)
    pipeline = to_pipeline(parse_trainjob(tj), parse_runtime(rt))
    manifests = argo.render(pipeline)
    workflow, others = manifests[0], manifests[1:]
    # the initializers' secretRef: the user's HuggingFace token Secret (the integrity check
    # of every pod found it missing here)
    secret = {"metadata": {"name": "hf-token"}, "stringData": {"HF_TOKEN": "test"}}
    kube.core.create_namespaced_secret(namespace, cast(Any, secret))
    for obj in others:
        utils.create_from_dict(  # type: ignore[no-untyped-call]
            kube.api, copy.deepcopy(obj), namespace=namespace
        )
    kube.create(ARGO, "workflows", workflow, namespace)
    name = workflow["metadata"]["name"]
    previews = {w["metadata"]["name"]: w for w in kube_previews(pipeline)}

    seen: dict[str, dict[str, Any]] = {}

    def finished() -> dict[str, Any] | None:
        for wl in kube.list(KUEUE, "workloads", namespace):
            seen[wl["metadata"]["name"]] = wl
        wf = kube.workflow(namespace, name)
        return (
            wf
            if (wf.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error")
            else None
        )

    wf = wait_until(f"workflow {name} finished", finished, timeout=240)
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")

    def workloads_finished() -> bool:
        # Kueue marks a Workload Finished from its pods, independently of Argo's Workflow phase.
        for wl in kube.list(KUEUE, "workloads", namespace):
            seen[wl["metadata"]["name"]] = wl
        return all(condition_is(wl, "Finished") for wl in seen.values())

    wait_until("Workloads Finished", workloads_finished, timeout=30)

    assert set(seen) == set(previews)
    for wl_name, wl in seen.items():
        live = sorted((ps["name"], ps["count"]) for ps in wl["spec"]["podSets"])
        preview = sorted((ps["name"], ps["count"]) for ps in previews[wl_name]["spec"]["podSets"])
        assert live == preview, wl_name
        assert wl["spec"]["queueName"] == previews[wl_name]["spec"]["queueName"]
        assert charged(wl) == preview_totals(previews[wl_name]), wl_name
    # The trainer's pods: 2 x (11 CPUs, 32Gi + 512Mi), the native sidecar counted as Kubernetes does.
    assert preview_totals(previews[f"{name}-node-a0"]) == {
        "cpu": parse_quantity("22"),
        "memory": parse_quantity("65Gi"),
        "nvidia.com/gpu": parse_quantity("16"),
    }

    nodes = {n["displayName"]: n for n in wf["status"]["nodes"].values()}
    inits_done = max(
        parse_time(nodes[s]["finishedAt"]) for s in ("dataset-initializer", "model-initializer")
    )
    trainer = seen[f"{name}-node-a0"]
    reserved = condition(trainer, "QuotaReserved")
    assert reserved is not None
    # Conditions keep their last transition; the trainer was reserved once, after the initializers.
    assert parse_time(reserved["lastTransitionTime"]) >= inits_done


def kube_previews(pipeline: Any) -> list[dict[str, Any]]:
    return workloads.workloads(pipeline)


def charged(wl: dict[str, Any]) -> dict[str, Decimal]:
    """What Kueue reserved for the Workload: its PodSet assignments' resourceUsage, summed."""
    total: dict[str, Decimal] = {}
    for assignment in wl["status"]["admission"]["podSetAssignments"]:
        for resource, quantity in assignment["resourceUsage"].items():
            total[resource] = total.get(resource, Decimal(0)) + parse_quantity(quantity)
    return total


def preview_totals(wl: dict[str, Any]) -> dict[str, Decimal]:
    """What `trainweave plan` says the Workload's pods request, summed over its PodSets."""
    total: dict[str, Decimal] = {}
    for podset in wl["spec"]["podSets"]:
        for resource, quantity in effective_requests(podset["template"]["spec"]).items():
            total[resource] = (
                total.get(resource, Decimal(0)) + parse_quantity(quantity) * podset["count"]
            )
    return total
