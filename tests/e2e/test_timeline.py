"""One scenario, every view of it: a second pipeline waits for the GPUs, then runs.

Two TrainJobs share a GPU ClusterQueue of 2 GPUs: ``ft``'s trainer (2 pods x 1 GPU) holds all of
it, ``ft2``'s trainer waits (Kueue: ``QuotaReserved=False``, reason ``Pending``). While it waits:
the controller's roll-up and Events (the trainer waits without holding GPUs, its initializers
done, ``StepWaitingForQuota``), the Kueue admin's view (Kueue's own ``kueuectl list workload``,
``trainweave queues`` as a table and ``-o json``) and ``trainweave status --timeline``. Then ``ft``
is deleted, ``ft2`` is admitted, runs and finishes, and its timeline tells the story, as text,
``-o json`` and a PNG, and still does once its Workflow, pods and Workloads are gone (the
``trainweave.io/quota`` annotation and Kueue's Events). docs/where-is-my-job.md and
docs/admins.md show the output (``-s`` prints it).

(One run for what were three tests on the same scenario: test_admin_view.py's
test_kueuectl_and_queues, test_controller.py's
test_gpu_queue_saturated_trainer_waits_without_holding_gpus and this file's timeline test.)
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from .controller_proc import ControllerProc
from .kube import ARGO, KUEUE, Kube, condition_is, default_kubeconfig, parse_time, wait_until
from .pipelines import TRAINER, apply, example, trainjob, wait_condition
from .test_admin_view import INITS, cq_counts, kueuectl, queues_cli, table

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


def _check_waited(doc: Json, ns: str, waited: float) -> Json:
    """ft2's trainer step in a timeline ``doc``; ``waited``: from its Workload's creation to the
    deletion of ft (which freed the GPUs), as the test saw it."""
    node = _node(doc)
    assert (node["queue"], node["clusterQueue"], node["role"]) == ("gpu", f"{ns}-gpu", "trainer")
    assert (node["workload"], node["attempt"], node["gpus"]) == ("ft2-node-a0", 0, 2)
    # Kueue's reason (scheduler.go requeueAndUpdate): no GPU left in the ClusterQueue
    assert node["reason"] == "Pending", node
    assert "insufficient unused quota" in node["message"] and "nvidia.com/gpu" in node["message"]
    assert node["waitedSeconds"] >= waited - 1, (node, waited)  # whole seconds on both sides
    assert node["phases"][0]["phase"] == "waiting"
    assert node["created"] <= node["quotaReserved"] <= node["ended"]
    held = node["heldSeconds"]
    assert node["gpuSecondsHeld"] == pytest.approx(2 * held, abs=0.01)
    return node


def _reserved_gpus(kube: Kube, cq: str) -> float:
    status = (kube.get(KUEUE, "clusterqueues", cq) or {}).get("status") or {}
    return sum(
        float(str(r["total"]))
        for fl in status.get("flavorsReservation") or []
        for r in fl.get("resources") or []
        if r["name"] == "nvidia.com/gpu"
    )


def test_second_pipeline_waits_for_gpus_then_runs(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc, tmp_path: Path
) -> None:
    ns = namespace
    queues(gpu_quota=2)
    apply(kube, ns, *example(ns, "ft", durations={"node": "600s"}))
    kube.wait_workload(ns, "ft-node-a0", lambda w: condition_is(w, "Admitted"), "Admitted")
    ft2, rt2 = example(ns, "ft2", runtime_name="short", durations={"node": "5s"})
    ft2["spec"]["runtimeRef"]["name"] = "short"
    apply(kube, ns, ft2, rt2)
    pending = kube.wait_workload(
        ns, "ft2-node-a0", lambda w: condition_is(w, "QuotaReserved", "False"), "pending"
    )
    for tj in ("ft", "ft2"):
        for step in INITS:
            kube.wait_workload(
                ns, f"{tj}-{step}-a0", lambda w: condition_is(w, "Finished"), "Finished", 30
            )
    want = {f"{ns}-gpu": (1, 1), f"{ns}-cpu": (0, 0)}
    wait_until(
        f"ClusterQueue counts {want}",
        lambda: all(cq_counts(kube, cq) == n for cq, n in want.items()),
        timeout=30,
    )

    # -- the controller: ft2's initializers rolled up, its trainer holds no GPU, an Event says why
    def initializers_succeeded() -> bool:
        status = trainjob(kube, ns, "ft2").get("status") or {}
        jobs = {j["name"]: j for j in status.get("jobsStatus") or []}
        return all((jobs.get(step) or {}).get("succeeded") == 1 for step in INITS)

    wait_until("ft2's initializers succeeded in jobsStatus", initializers_succeeded, timeout=30)
    assert _reserved_gpus(kube, f"{ns}-gpu") == 2  # ft's only

    def waiting_event() -> bool:
        events: list[Any] = kube.core.list_namespaced_event(
            ns, field_selector="involvedObject.name=ft2"
        ).items
        return any(e.reason == "StepWaitingForQuota" and "queue gpu" in e.message for e in events)

    wait_until("StepWaitingForQuota event", waiting_event, timeout=30)

    # -- the Kueue admin: Kueue's own CLI, one Workload per step, named
    # <trainjob>-<step>-a<attempt> (the pod group), owned by the step's pods
    listed = subprocess.run(
        [str(kueuectl()), "list", "workload", "-n", ns, "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    print(f"$ kueuectl list workload -n {ns}\n{listed}")
    rows = {r["NAME"]: r for r in table(listed)}
    for tj in ("ft", "ft2"):
        for step in INITS:
            row = rows[f"{tj}-{step}-a0"]
            assert (row["LOCALQUEUE"], row["CLUSTERQUEUE"], row["STATUS"]) == (
                "cpu", f"{ns}-cpu", "FINISHED"
            ), row  # fmt: skip
    for name, state in (("ft-node-a0", "ADMITTED"), ("ft2-node-a0", "PENDING")):
        row = rows[name]
        assert (row["LOCALQUEUE"], row["CLUSTERQUEUE"], row["STATUS"]) == (
            "gpu",
            f"{ns}-gpu",
            state,
        )
        pods = {p.metadata.name for p in kube.group_pods(ns, name)}
        assert len(pods) == 2 and all(p.startswith(name.split("-node")[0] + "-") for p in pods)
        assert row["JOB TYPE"] == "pod", row
        assert set(row["JOB NAME"].split(", ")) == pods, (row, pods)
    assert rows["ft-node-a0"]["EXEC TIME"] and not rows["ft2-node-a0"]["EXEC TIME"]

    # ... and trainweave's: per ClusterQueue, the pipeline holding it and the one waiting
    text = queues_cli(ns)
    print(f"$ trainweave queues -n {ns}\n{text}")
    lines = text.splitlines()
    assert f"ClusterQueue {ns}-gpu  cohort: -  admitted: 1  pending: 1" in lines
    assert "  gpu: cpu 2/256, memory 2Gi/2Ti, nvidia.com/gpu 2/2 reserved/nominal" in lines
    assert f"ClusterQueue {ns}-cpu  cohort: -  admitted: 0  pending: 0" in lines
    assert "  no pipeline holds or waits for this quota" in lines
    cells = [re.split(r"\s{2,}", ln.strip()) for ln in lines if ln.startswith(f"  {ns}  ")]
    assert [c[1:6] for c in cells] == [
        ["ft [Running]", "node", "trainer", "gpu", "Admitted"],
        ["ft2 [Running]", "node", "trainer", "gpu", "Pending (Pending)"],
    ], cells
    assert cells[1][7:9] == ["-", "-"]  # waiting: holds nothing
    doc = json.loads(queues_cli(ns, "-o", "json"))
    print(json.dumps(doc, indent=2))
    gpu_cq = next(c for c in doc["clusterQueues"] if c["name"] == f"{ns}-gpu")
    assert (gpu_cq["admittedWorkloads"], gpu_cq["pendingWorkloads"]) == (1, 1)
    (team,) = gpu_cq["namespaces"]
    assert (team["namespace"], team["localQueues"]) == (ns, ["gpu"])
    pipes = {p["trainjob"]: p for p in team["pipelines"]}
    (held,) = pipes["ft"]["steps"]
    (waits,) = pipes["ft2"]["steps"]
    assert (held["workload"], held["state"]) == ("ft-node-a0", "Admitted")
    assert held["usage"] == {"cpu": "2", "memory": "2147483648", "nvidia.com/gpu": "2"}
    assert held["gpuHours"] == pytest.approx(2 * held["heldSeconds"] / 3600, abs=1e-5)
    assert held["gpuHours"] > 0 and held["waitedSeconds"] >= 0
    assert pipes["ft"]["gpuHours"] >= held["gpuHours"]
    assert (waits["workload"], waits["state"], waits["reason"]) == (
        "ft2-node-a0",
        "Pending",
        "Pending",
    )
    assert waits["waitedSeconds"] > 0 and waits["heldSeconds"] == 0 and waits["usage"] == {}
    assert team["otherWorkloads"] == {"admitted": 0, "pending": 0}

    # -- the ML engineer: while it waits, one waiting phase up to now, Kueue's reason from the
    # condition, the GPUs it asks for (status.resourceRequests); its gated pods' Argo nodes are
    # no running time
    waiting = _node(json.loads(_status(ns, "ft2", "-o", "json")))
    print(json.dumps(waiting, indent=2))
    assert (waiting["state"], waiting["reason"], waiting["gpus"]) == ("Pending", "Pending", 2)
    assert [p["phase"] for p in waiting["phases"]] == ["waiting"]
    assert waiting["phases"][0]["end"] >= waiting["created"] and waiting["quotaReserved"] is None
    assert (waiting["gpuSecondsHeld"], waiting["gpuSecondsUsed"]) == (0, 0)

    # ft deleted: its GPUs go back to the queue, ft2's trainer is admitted and runs
    kube.custom.delete_namespaced_custom_object(*TRAINER, ns, "trainjobs", "ft")
    waited = (
        datetime.now(UTC) - parse_time(pending["metadata"]["creationTimestamp"])
    ).total_seconds()
    wait_condition(kube, ns, "Complete", name="ft2", timeout=120)
    wait_until(  # the controller records the Finished Workload in the annotation
        "ft2's quota annotation says node Finished",
        lambda: (
            '"state":"Finished","step":"node"'
            in (kube.get(TRAINER, "trainjobs", "ft2", ns) or {})
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
    node = _check_waited(doc, ns, waited)
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
    gone = _check_waited(after, ns, waited)
    for key in ("created", "quotaReserved", "waitedSeconds", "heldSeconds", "gpuSecondsHeld"):
        assert gone[key] == node[key], key
    assert gone["gpuSecondsUsed"] == 0  # no pod times left
