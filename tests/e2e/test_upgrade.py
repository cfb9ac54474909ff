"""An upgrade mid-run loses nothing (issue: faults, item 4): a pipeline started under an earlier
build of the controller is finished by this checkout's build, as a Deployment rollout does it
(SIGTERM to the old pod, which releases its Lease; the new one takes over).

The earlier build is the tree of PREVIOUS (the last commit of main before the real-container
tier), run from tests/e2e/old_build.py's layout. Names, labels, annotations and owner references
are the contract between builds: the new controller re-adopts the Workflow, the step Workloads
and the attempt count the old one left, makes no second copy, and ends the TrainJob as an
unupgraded run would.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from . import old_build
from .controller_proc import ControllerProc
from .kube import Kube, condition, wait_until
from .pipelines import ENDINGS, apply, example, wait_condition, workflows
from .service_account import SA_NAMESPACE

pytestmark = pytest.mark.e2e
PREVIOUS = "d93b0b5c9216a20ed056699aaae835ad56565eae"
Json = dict[str, Any]


def _trainer_running(kube: Kube, ns: str) -> bool:
    pods = kube.pods(ns, "trainweave.io/trainjob=ft,trainweave.io/replicated-job=node")
    return any(p.status.phase == "Running" for p in pods)


# the trainer runs long enough for the switch to land while it runs
SLOW_TRAINER = {"success": {"node": "8s"}, "max-restarts": {"node": "6s"}}


@pytest.mark.parametrize(
    ("knobs", "state", "reason", "wfs"),
    [({**k, "durations": SLOW_TRAINER[i]}, *rest) for i, (k, *rest) in ENDINGS.items()],
    ids=list(ENDINGS),
)
def test_pipeline_started_by_previous_build_finished_by_this_one(
    kube: Kube,
    namespace: str,
    queues: Any,
    controller_kubeconfig: Path,
    knobs: Json,
    state: str,
    reason: str,
    wfs: list[str],
) -> None:
    queues()
    build = old_build.tree(PREVIOUS)
    old = ControllerProc(namespace, "old", controller_kubeconfig, build=build)
    new: ControllerProc | None = None
    try:
        wait_until("the old build is ready", lambda: old.get("/readyz")[0] == 200, timeout=60)
        # it runs the earlier tree, not this checkout (imports resolve from its folder first)
        assert Path(os.readlink(f"/proc/{old.proc.pid}/cwd")) == build
        apply(kube, namespace, *example(namespace, **knobs))
        wait_until("the trainer runs", lambda: _trainer_running(kube, namespace), timeout=120)
        assert [w["metadata"]["name"] for w in workflows(kube, namespace)] == ["ft"]
        old.stop(signal.SIGTERM)  # a rollout: the old pod releases its Lease on SIGTERM
        assert old.proc.returncode == 0, old.log.read_text()[-3000:]

        new = ControllerProc(namespace, "new", controller_kubeconfig)
        tj = wait_condition(kube, namespace, state, timeout=300)
        cond = condition(tj, state)
        assert cond is not None and cond["reason"] == reason, cond
        assert sorted(w["metadata"]["name"] for w in workflows(kube, namespace)) == wfs
        if state == "Complete":
            quota = json.loads(tj["metadata"]["annotations"]["trainweave.io/quota"])
            steps = {s["step"] for s in quota["steps"]}
            assert steps == {"dataset-initializer", "model-initializer", "node", "model-exporter"}
            jobs = {j["name"]: j for j in tj["status"]["jobsStatus"]}
            assert jobs["node"]["succeeded"] == 1 and jobs["model-exporter"]["succeeded"] == 1
        else:
            assert tj["metadata"]["annotations"]["trainweave.io/attempts"] == "2"
        assert new.metric("trainweave_reconciles_total") >= 1
    finally:
        old.stop(signal.SIGKILL)
        if new is not None:
            new.stop(signal.SIGKILL)
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(namespace, SA_NAMESPACE)
        except client.ApiException as e:
            if e.status != 404:
                raise
