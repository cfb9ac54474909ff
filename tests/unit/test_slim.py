"""The caches' kept fields (integrations.views.read.slim): the reconcile decides the same on slim objects."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.cluster_objects import Pod, StepState, pod, trainjob, workflow, workload
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.decide.jobs_status import jobs_status
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.read.argo_view import view
from trainweave.integrations.views.read.observed import Observed

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 10, tzinfo=UTC)
FIXTURES = Path(__file__).parent / "fixtures" / "argo"
INIT_OK = StepState("Succeeded", [Pod("init-0-0", "Succeeded", code=0)])
TRAINER_RUN = StepState("Running", [Pod("node-0-0", "Running")], role="trainer", queue="gpu")
TRAINER_FAILED = StepState(
    "Failed", [Pod("node-0-0", "Failed", message="node: Error (exit code 3)")], role="trainer"
)
MANAGED = [{"manager": "kube-apiserver", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


def full_pod(obj: Json) -> Json:
    """A pod as the API serves it: containers, volumes, statuses, managedFields."""
    out = copy.deepcopy(obj)
    out["metadata"]["managedFields"] = MANAGED
    out["spec"]["containers"] = [{"name": "node", "image": "x", "resources": {}}]
    out["spec"]["volumes"] = [{"name": "v", "emptyDir": {}}]
    out["status"]["containerStatuses"] = [{"name": "node", "ready": False, "restartCount": 0}]
    out["status"].setdefault("conditions", []).append(
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-01T10:00:00Z"}
    )
    return out


def full_workflow(obj: Json) -> Json:
    out = copy.deepcopy(obj)
    out["metadata"]["managedFields"] = MANAGED
    for tpl in out["spec"]["templates"]:
        tpl["podSpecPatch"] = '{"hostname":"x"}'
    for node in (out["status"].get("nodes") or {}).values():
        node.update(startedAt="2026-11-01T10:00:00Z", progress="1/1", hostNodeName="n")
    return out


def test_slim_objects_drop_what_the_reconcile_never_reads() -> None:
    p = slim.pod(full_pod(pod("ft", "trainer", "node-0-0", "Running", gated=True)))
    assert "managedFields" not in p["metadata"]
    assert p["spec"] == {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}]}
    assert "conditions" not in p["status"]  # PodScheduled: not read
    done = full_pod(pod("ft", "trainer", "node-0-0", "Succeeded"))
    done["metadata"]["finalizers"] = ["kueue.x-k8s.io/managed"]
    done["metadata"]["labels"][slim.ARGO_COMPLETED] = "true"
    done["status"]["conditions"].append(
        {"type": "Ready", "status": "False", "reason": "PodCompleted"}
    )
    p = slim.pod(done)
    assert "finalizers" not in p["metadata"] and slim.ARGO_COMPLETED not in p["metadata"]["labels"]
    assert p["status"]["conditions"] == [{"type": "Ready", "status": "False"}]
    wl = workload("ft-node-a0", queue="gpu", reserved="2026-11-01T10:04:00Z")
    wl["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    wl["status"]["conditions"].append({"type": "PodsReady", "status": "True"})
    wl["status"]["requeueState"] = {"count": 1}
    w = slim.workload(wl)
    assert "finalizers" not in w["metadata"] and "requeueState" not in w["status"]
    assert [c["type"] for c in w["status"]["conditions"]] == ["QuotaReserved", "Admitted"]
    assert w["status"]["admission"] == wl["status"]["admission"]
    wf = slim.workflow(full_workflow(workflow({"init": INIT_OK})))
    assert all(set(t) <= {"name", "metadata", "dag"} for t in wf["spec"]["templates"])
    assert all(
        set(n) <= {"name", "type", "phase", "message", "outputs", "startedAt", "finishedAt"}
        for n in wf["status"]["nodes"].values()
    )


def test_compressed_nodes_are_decoded_once_into_nodes() -> None:
    packed = workflow({"init": INIT_OK, "trainer": TRAINER_RUN}, compressed=True)
    slimmed = slim.workflow(packed)
    assert "compressedNodes" not in slimmed["status"]
    assert view(slimmed) == view(packed)


@pytest.mark.parametrize(
    "fixture", ["dag-exhausted-retries-xfail.yaml", "containerset-retried-then-failed.yaml"]
)
def test_real_workflows_view_the_same_when_slim(fixture: str) -> None:
    doc = yaml.safe_load((FIXTURES / fixture).read_text())
    doc["metadata"].pop("resourceVersion", None)  # no memoised view: both computed here
    assert view(slim.workflow(doc)) == view(doc)


def test_plan_on_slim_objects_equals_plan_on_full_objects() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_RUN})
    pods = (
        pod("ft", "init", "init-0-0", "Succeeded"),
        pod("ft", "trainer", "node-0-0", "Running", ready=True),
        pod("ft", "trainer", "node-0-1", "Pending", gated=True),
    )
    wls = (
        workload("ft-init-a0", reserved="2026-11-01T10:01:00Z", finished="2026-11-01T10:03:00Z"),
        workload("ft-trainer-a0", queue="gpu", reserved="2026-11-01T10:04:00Z"),
    )
    tj = trainjob(annotations={"trainweave.io/attempts": "1"})
    full_wls = copy.deepcopy(wls)
    for wl in full_wls:  # what Kueue adds that the caches drop
        wl["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
        wl["status"]["conditions"].append({"type": "PodsReady", "status": "True"})
    full_pods = tuple(full_pod(p) for p in pods)
    full_pods[0]["metadata"]["labels"][slim.ARGO_COMPLETED] = "true"
    full = Observed(tj, (full_workflow(wf),), full_pods, full_wls)
    thin = Observed(
        slim.trainjob(tj),
        tuple(slim.workflow(w) for w in full.workflows),
        tuple(slim.pod(p) for p in full.pods),
        tuple(slim.workload(w) for w in full.workloads),
    )
    assert jobs_status(thin) == jobs_status(full)
    assert reconcile.actions(thin, NOW) == reconcile.actions(full, NOW)


def test_failed_containerset_pod_keeps_its_exit_code_when_slim() -> None:
    wf = workflow({"init": INIT_OK, "trainer": TRAINER_FAILED}, phase="Failed")
    failed = view(slim.workflow(full_workflow(wf))).steps["trainer"].failed_pod
    assert failed is not None and failed.exit_code == 3
