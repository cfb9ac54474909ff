"""The real-containers tier: examples/real run as real processes on the real node of
hack/node.py (containerd + runc + kubelet), admitted step by step by Kueue, driven by Argo's
emissary (argoexec built from the pinned module), rolled up by trainweave's controller.

What kwok never shows and these tests do: the initializers' files on the PVC are read by the
trainer, rank 1 reaches ``PET_MASTER_ADDR`` through the headless Service (CoreDNS), the ranks
all-reduce over TCP and agree on the model, argoexec reports real exit codes, and a real exit
code that a podFailurePolicy rule names fails the TrainJob.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition, wait_until
from .pipelines import TRAINER, apply, wait_condition, workflows

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "real"
NODE = "trainweave-node-0"
VOLUMES = Path("/var/lib/trainweave-node/volumes")
RBAC = client.RbacAuthorizationV1Api
Json = dict[str, Any]


@pytest.fixture(scope="session")
def real_node(kube_api: client.ApiClient) -> str:
    """hack/node.py up (a no-op when the node is already up): the node, Ready."""
    subprocess.run([sys.executable, str(ROOT / "hack" / "node.py"), "up"], check=True)
    return NODE


def _argo_dir() -> Path:
    out = subprocess.run(
        ["bash", str(ROOT / "hack" / "build.sh"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    env = dict(
        line.split("=", 1)
        for line in (Path(out.stdout.strip()) / "sources.env").read_text().splitlines()
        if "=" in line
    )
    return Path(env["ARGO_DIR"])


@pytest.fixture
def real_example(
    kube: Kube, namespace: str, real_node: str
) -> Iterator[Callable[..., tuple[Json, Json]]]:
    """examples/real in ``namespace``: its queues (ClusterQueues prefixed by the namespace), Argo's
    own executor Role for the emissary (the pinned module's quick-start manifests), and a hostPath
    PersistentVolume bound ahead to the TrainJob's PVC. Returns a factory of (TrainJob, runtime)
    with trainer env overrides."""
    made: list[str] = []
    for obj in yaml.safe_load_all((EXAMPLE / "queues.yaml").read_text()):
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "ResourceFlavor":
            if kube.get(KUEUE, "resourceflavors", meta["name"]) is None:
                kube.create(KUEUE, "resourceflavors", obj)
        elif kind == "ClusterQueue":
            meta["name"] = f"{namespace}-{meta['name']}"
            kube.create(KUEUE, "clusterqueues", obj)
            made.append(meta["name"])
        else:
            meta["namespace"] = namespace
            obj["spec"]["clusterQueue"] = f"{namespace}-{obj['spec']['clusterQueue']}"
            kube.create(KUEUE, "localqueues", obj, namespace)
    quick = _argo_dir() / "manifests" / "quick-start" / "base"
    role = yaml.safe_load((quick / "executor" / "emissary" / "executor-role.yaml").read_text())
    binding = yaml.safe_load((quick / "executor-default-rolebinding.yaml").read_text())
    RBAC(kube.api).create_namespaced_role(namespace, role)
    RBAC(kube.api).create_namespaced_role_binding(namespace, binding)

    tj = yaml.safe_load((EXAMPLE / "trainjob.yaml").read_text())
    rt = yaml.safe_load((EXAMPLE / "runtime.yaml").read_text())
    tj["metadata"]["namespace"] = rt["metadata"]["namespace"] = namespace
    claim = f"initializer-{tj['metadata']['name']}"
    pv_name = f"{namespace}-workspace"
    kube.core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": namespace, "name": claim},
                "hostPath": {"path": str(VOLUMES / namespace), "type": "DirectoryOrCreate"},
            },
        }
    )

    def make(**env: str) -> tuple[Json, Json]:
        trainer_env = tj["spec"]["trainer"].setdefault("env", [])
        trainer_env.extend({"name": k, "value": v} for k, v in env.items())
        return tj, rt

    yield make
    for name in made:
        kube.delete(KUEUE, "clusterqueues", name)
    kube.core.delete_persistent_volume(pv_name)


def _logs(kube: Kube, ns: str, pod: client.V1Pod, container: str) -> str:
    """The container's log through the API server (which asks the real kubelet)."""
    return str(kube.core.read_namespaced_pod_log(pod.metadata.name, ns, container=container))


def _step_pods(kube: Kube, ns: str, step: str) -> list[client.V1Pod]:
    return [
        p
        for p in kube.pods(ns)
        if p.metadata.labels.get("trainer.kubeflow.org/trainjob-ancestor-step") == step
        or p.metadata.labels.get("jobset.sigs.k8s.io/replicatedjob-name") == step
    ]


def _exit_codes(pod: client.V1Pod) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for s in pod.status.container_statuses or []:
        term = s.state.terminated if s.state else None
        out[s.name] = term.exit_code if term else None
    return out


def test_llm_style_pipeline_trains_for_real(
    kube: Kube, namespace: str, real_example: Any, controller: ControllerProc
) -> None:
    """Initializers write the dataset and model to the PVC, two trainer pods rendezvous at
    PET_MASTER_ADDR through the headless Service and train, the exporter reads the result;
    each step admitted on its own queue on the real flavor; the TrainJob ends Complete."""
    tj, rt = real_example()
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]
    got = wait_condition(kube, namespace, "Complete", timeout=420, name=name)
    assert condition(got, "Failed") is None or condition(got, "Failed")["status"] != "True"
    (wf,) = workflows(kube, namespace)
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")

    trainers = _step_pods(kube, namespace, "node")
    ranks = {}
    for pod in trainers:
        assert pod.spec.node_name == NODE, pod.metadata.name
        assert _exit_codes(pod).get("node") == 0, _exit_codes(pod)
        log = _logs(kube, namespace, pod, "node")
        assert "rendezvous complete, world=2" in log, log[-2000:]
        m = re.search(r"rank=(\d) world=2: final loss=([0-9.]+) model_sha256=([0-9a-f]{64})", log)
        assert m, log[-2000:]
        ranks[int(m[1])] = (float(m[2]), m[3])
    assert sorted(ranks) == [0, 1], ranks
    assert ranks[0][1] == ranks[1][1], f"the ranks disagree on the model: {ranks}"
    assert ranks[0][0] < 0.05, ranks

    (exporter,) = _step_pods(kube, namespace, "model-exporter")
    assert "learned weights=" in _logs(kube, namespace, exporter, "model-exporter")
    for step in ("dataset-initializer", "model-initializer"):
        for pod in _step_pods(kube, namespace, step):
            assert pod.spec.node_name == NODE
            assert set(_exit_codes(pod).values()) == {0}, (step, _exit_codes(pod))

    # every step's Workload was admitted on the real flavor of its own ClusterQueue
    admitted: dict[str, str] = {}
    for wl in kube.list(KUEUE, "workloads", namespace):
        adm = (wl.get("status") or {}).get("admission") or {}
        for psa in adm.get("podSetAssignments") or []:
            assert set((psa.get("flavors") or {}).values()) <= {"real"}, psa
        if adm:
            admitted[wl["metadata"]["name"]] = adm["clusterQueue"]
    queues = set(admitted.values())
    assert queues == {f"{namespace}-cpu-cq", f"{namespace}-trainer-cq"}, admitted


def test_real_exit_code_named_by_failjob_fails_the_trainjob(
    kube: Kube, namespace: str, real_example: Any, controller: ControllerProc
) -> None:
    """The trainer process exits 3 (its FAIL_WITH_EXIT_CODE knob); the runtime's podFailurePolicy
    names 3 in a FailJob rule, so the first failure fails the TrainJob, with no retry."""
    tj, rt = real_example(FAIL_WITH_EXIT_CODE="3")
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]
    got = wait_condition(kube, namespace, "Failed", timeout=420, name=name)
    cond = condition(got, "Failed")
    assert cond is not None and cond["reason"] == "FailedJobs", cond
    assert "exit code 3" in cond["message"], cond
    failed = [p for p in _step_pods(kube, namespace, "node") if 3 in _exit_codes(p).values()]
    assert failed, [(_exit_codes(p), p.metadata.name) for p in _step_pods(kube, namespace, "node")]
    assert "FAIL_WITH_EXIT_CODE" in _logs(kube, namespace, failed[0], "node")
    tjs = kube.list(TRAINER, "trainjobs", namespace)
    assert [t["metadata"]["name"] for t in tjs] == [name]
    wait_until("no Workload holds quota", lambda: _none_admitted(kube, namespace), timeout=120)


def _none_admitted(kube: Kube, ns: str) -> bool:
    return not any(
        condition(wl, "QuotaReserved")
        and condition(wl, "QuotaReserved")["status"] == "True"
        and not condition(wl, "Finished")
        for wl in kube.list(KUEUE, "workloads", ns)
    )
