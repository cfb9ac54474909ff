"""``trainweave status NAME --timeline`` on the real control plane (issue 23 item 2).

Two TrainJobs share a GPU ClusterQueue of 2 GPUs: ``ft``'s trainer (2 pods x 1 GPU) holds all of
it for a while, ``ft2``'s trainer waits for it (Kueue: ``QuotaReserved=False``, reason
``Pending``), then is admitted, runs and finishes. ft2's timeline shows that story, as text and as
``-o json``, and still does once its Workflow, pods and Workloads are gone (the
``trainweave.io/quota`` annotation and Kueue's Events). docs/where-is-my-job.md shows the output.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .controller_proc import ControllerProc
from .kube import ARGO, Kube, condition_is, default_kubeconfig, wait_until
from .pipelines import apply, example, wait_condition

pytestmark = pytest.mark.e2e
Json = dict[str, Any]


def _run(ns: str, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", name, "-n", ns, "--timeline",
         "--kubeconfig", str(default_kubeconfig()), *args],
        capture_output=True, text=True,
    )  # fmt: skip


def _status(ns: str, name: str, *args: str) -> str:
    out = _run(ns, name, *args)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _node(doc: Json) -> Json:
    (node,) = (s for s in doc["steps"] if s["step"] == "node")
    return dict(node)


def _check_waited(doc: Json, ns: str) -> Json:
    node = _node(doc)
    assert (node["queue"], node["clusterQueue"], node["role"]) == ("gpu", f"{ns}-gpu", "trainer")
    assert (node["workload"], node["attempt"], node["gpus"]) == ("ft2-node-a0", 0, 2)
    # Kueue's reason (scheduler.go requeueAndUpdate): no GPU left in the ClusterQueue
    assert node["reason"] == "Pending", node
    assert "insufficient unused quota" in node["message"] and "nvidia.com/gpu" in node["message"]
    assert node["waitedSeconds"] >= 5, node  # ft's trainer ran 15 s on both GPUs
    assert node["phases"][0]["phase"] == "waiting"
    assert node["created"] <= node["quotaReserved"] <= node["ended"]
    held = node["heldSeconds"]
    assert node["gpuSecondsHeld"] == pytest.approx(2 * held, abs=0.01)
    return node


def test_second_pipeline_waits_for_gpus_then_runs(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc, tmp_path: Path
) -> None:
    ns = namespace
    queues(gpu_quota=2)
    apply(kube, ns, *example(ns, "ft", durations={"node": "15s"}))
    kube.wait_workload(ns, "ft-node-a0", lambda w: condition_is(w, "Admitted"), "Admitted")
    apply(kube, ns, example(ns, "ft2")[0], None)  # ft's runtime: its trainer runs 15 s too
    kube.wait_workload(
        ns, "ft2-node-a0", lambda w: condition_is(w, "QuotaReserved", "False"), "pending"
    )
    # while it waits: one waiting phase up to now, Kueue's reason from the condition, the GPUs
    # it asks for (status.resourceRequests); its gated pods' Argo nodes are no running time
    waiting = _node(json.loads(_status(ns, "ft2", "-o", "json")))
    print(json.dumps(waiting, indent=2))
    assert (waiting["state"], waiting["reason"], waiting["gpus"]) == ("Pending", "Pending", 2)
    assert [p["phase"] for p in waiting["phases"]] == ["waiting"]
    assert waiting["phases"][0]["end"] >= waiting["created"] and waiting["quotaReserved"] is None
    assert (waiting["gpuSecondsHeld"], waiting["gpuSecondsUsed"]) == (0, 0)
    for name in ("ft", "ft2"):
        wait_condition(kube, ns, "Complete", name=name, timeout=120)
    wait_until(  # the controller records the Finished Workload in the annotation
        "ft2's quota annotation says node Finished",
        lambda: (
            '"state":"Finished","step":"node"'
            in (kube.get(("trainer.kubeflow.org", "v1alpha1"), "trainjobs", "ft2", ns) or {})
            .get("metadata", {})
            .get("annotations", {})
            .get("trainweave.io/quota", "")
        ),
        timeout=30,
    )

    text = _status(ns, "ft2")
    print(f"$ trainweave status ft2 -n {ns} --timeline\n{text}")
    lines = text.splitlines()
    assert lines[0] == f"TrainJob {ns}/ft2  state: Complete"
    bars = {ln.split(" |")[0].strip(): ln for ln in lines if ln.endswith("|")}
    steps = ("dataset-initializer", "model-initializer", "node", "model-exporter")
    assert set(bars) == {f"{s} a0" for s in steps}
    assert all(len(b) <= 100 for b in bars.values())
    node_bar = bars["node a0"].split("|")[1]
    assert "." in node_bar and "#" in node_bar and node_bar.index(".") < node_bar.index("#")
    assert any(
        ln.startswith("node a0 waited ") and f"in gpu (ClusterQueue {ns}-gpu): Pending: " in ln
        for ln in lines
    ), text

    doc = json.loads(_status(ns, "ft2", "-o", "json"))
    print(json.dumps(_node(doc), indent=2))
    node = _check_waited(doc, ns)
    assert node["state"] == "Finished"
    assert 0 < node["gpuSecondsUsed"] <= node["gpuSecondsHeld"]
    assert node["runningSeconds"] > 0
    phases = [p["phase"] for p in node["phases"]]
    assert phases[0] == "waiting" and "running" in phases and set(phases[1:]) <= {"held", "running"}
    inits = [s for s in doc["steps"] if s["role"] == "initializer"]
    assert {s["queue"] for s in inits} == {"cpu"} and all(s["gpus"] == 0 for s in inits)

    # The same as a PNG: with matplotlib (optional) a picture, without it one line, exit 2.
    png = tmp_path / "ft2-timeline.png"
    out = _run(ns, "ft2", "--timeline-png", str(png))
    if importlib.util.find_spec("matplotlib") is not None:
        assert out.returncode == 0 and out.stdout == text, out.stderr
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        print(f"PNG: {png}")
    else:
        assert (out.returncode, out.stdout, out.stderr) == (2, "", "error: (command line): "
            "--timeline-png: needs matplotlib, which is not installed: pip install matplotlib\n")  # fmt: skip

    # The Workflow (and with it the pods, and with them their Workloads) gone: what is left is
    # the annotation (times, queues, GPUs) and Kueue's Events (the reason).
    kube.delete(ARGO, "workflows", "ft2", ns)
    wait_until(
        "ft2's Workloads gone",
        lambda: all(kube.workload(ns, f"ft2-{s}-a0") is None for s in steps),
        timeout=60,
    )
    after = json.loads(_status(ns, "ft2", "-o", "json"))
    print(f"$ trainweave status ft2 -n {ns} --timeline   # Workflow, pods, Workloads gone")
    print(_status(ns, "ft2"))
    gone = _check_waited(after, ns)
    for key in ("created", "quotaReserved", "waitedSeconds", "heldSeconds", "gpuSecondsHeld"):
        assert gone[key] == node[key], key
    assert gone["gpuSecondsUsed"] == 0  # no pod times left
