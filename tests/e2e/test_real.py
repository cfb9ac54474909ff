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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .controller_proc import ControllerProc, status_server_controller
from .kube import KUEUE, Kube, condition, wait_until
from .pipelines import TRAINER, apply, trainjob, wait_condition, workflows
from .real import NODE, exit_codes, logs, none_admitted, step_pods

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real-node")]
Json = dict[str, Any]


@pytest.fixture
def status_controller(
    kube: Kube, namespace: str, real_node: str, controller_kubeconfig: Path
) -> Iterator[ControllerProc]:
    """The controller with Trainer's status server on (``--trainjob-status``), reachable from
    the real node's pods at the node's address (the host's), its certificate naming it."""
    node: Any = kube.core.read_node(real_node)
    (ip,) = [a.address for a in node.status.addresses if a.type == "InternalIP"]
    with status_server_controller(kube, namespace, controller_kubeconfig, "0.0.0.0", ip) as (
        ctl,
        _,
    ):
        yield ctl


def test_llm_style_pipeline_trains_for_real(
    kube: Kube, namespace: str, real_example: Any, status_controller: ControllerProc
) -> None:
    """Initializers write the dataset and model to the PVC, two trainer pods rendezvous at
    PET_MASTER_ADDR through the headless Service and train, the exporter reads the result;
    each step admitted on its own queue on the real flavor; the TrainJob ends Complete. Rank 0
    reports its progress and loss to the controller's status server (Trainer's env, token and
    CA on the pod), and ``status.trainerStatus`` moves while it trains."""
    tj, rt = real_example()
    env = {e["name"]: e for e in tj["spec"]["trainer"]["env"]}
    for k, v in {"TRAIN_STEPS": "60", "STEP_SLEEP_SECONDS": "0.25"}.items():  # ~15 s of steps
        env.setdefault(k, {"name": k})["value"] = v
    tj["spec"]["trainer"]["env"] = list(env.values())
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]
    seen: list[int] = []  # trainerStatus.progressPercentage as it moved

    def complete() -> Json | None:
        now = trainjob(kube, namespace, name)
        pct = ((now.get("status") or {}).get("trainerStatus") or {}).get("progressPercentage")
        if pct is not None and pct not in seen[-1:]:
            seen.append(int(pct))
        done = condition(now, "Complete")
        return now if done and done["status"] == "True" else None

    got = wait_until("TrainJob Complete", complete, timeout=420)
    failure = condition(got, "Failed")
    assert failure is None or failure["status"] != "True"
    (wf,) = workflows(kube, namespace)
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")

    trainers = step_pods(kube, namespace, "node")
    ranks = {}
    rank_logs = {}
    for pod in trainers:
        assert pod.spec.node_name == NODE, pod.metadata.name
        assert exit_codes(pod).get("node") == 0, exit_codes(pod)
        log = logs(kube, namespace, pod, "node")
        assert "rendezvous complete, world=2" in log, log[-2000:]
        m = re.search(r"rank=(\d) world=2: final loss=([0-9.]+) model_sha256=([0-9a-f]{64})", log)
        assert m, log[-2000:]
        ranks[int(m[1])] = (float(m[2]), m[3])
        rank_logs[int(m[1])] = (pod.metadata.name, log)
    assert sorted(ranks) == [0, 1], ranks
    assert ranks[0][1] == ranks[1][1], f"the ranks disagree on the model: {ranks}"
    assert ranks[0][0] < 0.05, ranks
    progress = got["status"]["trainerStatus"]
    assert progress["progressPercentage"] == 100 and seen[-1] == 100, (progress, seen)
    assert [p for p in seen if 0 < p < 100], f"no progress seen while training: {seen}"
    assert seen == sorted(seen), seen
    assert progress["metrics"] == [{"name": "loss", "value": f"{ranks[0][0]:.6f}"}], progress
    print(f"trainerStatus progress seen: {seen}; final: {progress}")

    (exporter,) = step_pods(kube, namespace, "model-exporter")
    exported = logs(kube, namespace, exporter, "model-exporter")
    assert "learned weights=" in exported
    print(f"--- {rank_logs[0][0]} (kubectl logs -c node)\n{rank_logs[0][1]}")
    print(f"--- {exporter.metadata.name} (kubectl logs -c model-exporter)\n{exported}")
    for step in ("dataset-initializer", "model-initializer"):
        for pod in step_pods(kube, namespace, step):
            assert pod.spec.node_name == NODE
            assert set(exit_codes(pod).values()) == {0}, (step, exit_codes(pod))

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
    failed = [p for p in step_pods(kube, namespace, "node") if 3 in exit_codes(p).values()]
    assert failed, [(exit_codes(p), p.metadata.name) for p in step_pods(kube, namespace, "node")]
    assert "FAIL_WITH_EXIT_CODE" in logs(kube, namespace, failed[0], "node")
    tjs = kube.list(TRAINER, "trainjobs", namespace)
    assert [t["metadata"]["name"] for t in tjs] == [name]
    wait_until("no Workload holds quota", lambda: none_admitted(kube, namespace), timeout=120)
