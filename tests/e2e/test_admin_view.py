"""The Kueue admin's view of trainweave's pipelines on the real control plane (issue 10 item 5):
Kueue's own ``kueuectl list workload``, ``trainweave queues`` (table and ``-o json``), and a real
Prometheus (Debian's package) scraping the controller's /metrics with deploy/prometheus-rules.yaml.

Two TrainJobs share a GPU ClusterQueue of 2 GPUs: ``ft``'s trainer (2 pods x 1 GPU) holds all of
it, ``ft2``'s trainer waits. Each test prints what the admin sees (docs/admins.md shows it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from . import prometheus
from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition_is, default_kubeconfig, parse_time, wait_until
from .pipelines import ROOT, apply, example, wait_condition

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
INITS = ("dataset-initializer", "model-initializer")
WAIT_OVER = 5  # seconds: the test's stand-in for the rule's 15 minutes


def _pending(wl: Json) -> bool:
    return condition_is(wl, "QuotaReserved", "False")


def _admitted(wl: Json) -> bool:
    return condition_is(wl, "Admitted")


def _finished(wl: Json) -> bool:
    return condition_is(wl, "Finished")


def _cq_counts(kube: Kube, name: str) -> tuple[int, int]:
    status = (kube.get(KUEUE, "clusterqueues", name) or {}).get("status") or {}
    return int(status.get("admittedWorkloads") or 0), int(status.get("pendingWorkloads") or 0)


def _one_holds_one_waits(kube: Kube, ns: str) -> None:
    """ft's trainer admitted on all of <ns>-gpu, then ft2 applied; its trainer waits."""
    apply(kube, ns, *example(ns, "ft", durations={"node": "600s"}))
    kube.wait_workload(ns, "ft-node-a0", _admitted, "Admitted", timeout=60)
    apply(kube, ns, example(ns, "ft2", durations={"node": "600s"})[0], None)
    kube.wait_workload(ns, "ft2-node-a0", _pending, "QuotaReserved=False", timeout=60)
    for tj in ("ft", "ft2"):
        for step in INITS:
            kube.wait_workload(ns, f"{tj}-{step}-a0", _finished, "Finished", timeout=30)
    want = {f"{ns}-gpu": (1, 1), f"{ns}-cpu": (0, 0)}
    wait_until(
        f"ClusterQueue counts {want}",
        lambda: all(_cq_counts(kube, cq) == n for cq, n in want.items()),
        timeout=30,
    )


def kueuectl() -> Path:
    eng = subprocess.run(
        ["bash", str(ROOT / "hack" / "build.sh"), "--print-dir"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    path = Path(eng.stdout.strip()) / "bin" / "kueuectl"
    assert path.exists(), f"{path} missing: run `make engines` (hack/build.sh builds kueuectl)"
    return path


def table(text: str) -> list[dict[str, str]]:
    """Rows of a kubectl-style table, cut at the header's column starts (cells may be empty)."""
    header, *lines = text.splitlines()
    titles = re.findall(r"\S+(?: \S+)*", header)
    starts = [header.index(t) for t in titles]
    ends: list[int | None] = [*starts[1:], None]
    return [
        {t: line[a:b].strip() for t, a, b in zip(titles, starts, ends, strict=True)}
        for line in lines
    ]


def _queues_cli(ns: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "queues", "-n", ns,
         "--kubeconfig", str(default_kubeconfig()), *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout


def test_kueuectl_and_queues(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """kueuectl lists the step Workloads; trainweave queues shows who holds and who waits."""
    ns = namespace
    queues(gpu_quota=2)
    _one_holds_one_waits(kube, ns)

    # Kueue's own CLI: one Workload per step, named <trainjob>-<step>-a<attempt> (the pod group),
    # owned by the step's pods (Kueue's pod integration makes every pod of a group an owner).
    out = subprocess.run(
        [str(kueuectl()), "list", "workload", "-n", ns, "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    print(f"$ kueuectl list workload -n {ns}\n{out}")
    rows = {r["NAME"]: r for r in table(out)}
    for tj in ("ft", "ft2"):
        for step in INITS:
            row = rows[f"{tj}-{step}-a0"]
            assert (row["LOCALQUEUE"], row["CLUSTERQUEUE"], row["STATUS"]) == (
                "cpu", f"{ns}-cpu", "FINISHED"
            ), row  # fmt: skip
    for name, status in (("ft-node-a0", "ADMITTED"), ("ft2-node-a0", "PENDING")):
        row = rows[name]
        assert (row["LOCALQUEUE"], row["CLUSTERQUEUE"], row["STATUS"]) == (
            "gpu",
            f"{ns}-gpu",
            status,
        )
        pods = {p.metadata.name for p in kube.group_pods(ns, name)}
        assert len(pods) == 2 and all(p.startswith(name.split("-node")[0] + "-") for p in pods)
        assert row["JOB TYPE"] == "pod", row
        assert set(row["JOB NAME"].split(", ")) == pods, (row, pods)
    assert rows["ft-node-a0"]["EXEC TIME"] and not rows["ft2-node-a0"]["EXEC TIME"]

    # trainweave's view: per ClusterQueue, the pipeline holding it and the one waiting.
    text = _queues_cli(ns)
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

    doc = json.loads(_queues_cli(ns, "-o", "json"))
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


def test_prometheus_scrapes_the_controller(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc, tmp_path: Path
) -> None:
    """GPU-hours per ClusterQueue and steps waiting longer than WAIT_OVER, from the recording
    rules of deploy/prometheus-rules.yaml (evaluated every second here) over real scrapes."""
    ns = namespace
    rules = {r.get("record"): r for g in prometheus.rules([])["groups"] for r in g["rules"]}
    over_15m = rules["namespace_queue:trainweave_steps_waiting_over_15m:count"]["expr"]
    assert "15 * 60" in over_15m
    over_n = f"namespace_queue:trainweave_steps_waiting_over_{WAIT_OVER}s:count"
    extra = [{"record": over_n, "expr": over_15m.replace("15 * 60", str(WAIT_OVER))}]
    prom = prometheus.Prometheus(tmp_path, f"127.0.0.1:{controller.port}", extra)
    try:
        queues(gpu_quota=2)
        # ft's trainer runs 20 s on both GPUs; ft2's trainer wants 3 GPUs: it waits all along.
        apply(kube, ns, *example(ns, "ft", durations={"node": "20s"}))
        apply(kube, ns, example(ns, "ft2", nodes=3)[0], None)
        wl = kube.wait_workload(ns, "ft2-node-a0", _pending, "QuotaReserved=False", timeout=60)
        assert prom.query('up{job="trainweave"}')[0]["value"][1] == "1"  # a real scrape

        sel = f'{{namespace="{ns}"}}'
        got = wait_until(f"{over_n} = 1", lambda: prom.query(over_n + sel), timeout=30)
        print(f"{over_n}{sel} -> {got}")
        assert [(r["metric"]["queue"], r["value"][1]) for r in got] == [("gpu", "1")]
        assert prom.query(f"namespace_queue:trainweave_steps_waiting_over_15m:count{sel}") == []
        (wait,) = prom.query(f"trainweave:step_wait_seconds{sel}")
        assert (wait["metric"]["trainjob"], wait["metric"]["step"]) == ("ft2", "node")
        waited = (
            float(wait["value"][0]) - parse_time(wl["metadata"]["creationTimestamp"]).timestamp()
        )
        assert float(wait["value"][1]) == pytest.approx(waited, abs=3)

        tj = wait_condition(kube, ns, "Complete", name="ft", timeout=90)
        steps = json.loads(tj["metadata"]["annotations"]["trainweave.io/quota"])["steps"]
        node = next(s for s in steps if s["step"] == "node")
        want = node["resourceSeconds"]["nvidia.com/gpu"] / 3600  # 2 GPUs x ~20 s
        query = f'cluster_queue:trainweave_gpu_hours:increase1h{{cluster_queue="{ns}-gpu"}}'

        def gpu_hours() -> float | None:
            res = prom.query(query)
            return float(res[0]["value"][1]) if res and float(res[0]["value"][1]) > 0 else None

        started = time.monotonic()
        hours = wait_until(f"{query} > 0", gpu_hours, timeout=30)
        print(f"{query} -> {hours} (annotation: {want}, after {time.monotonic() - started:.1f}s)")
        # increase() extrapolates to the evaluation time: at most one scrape interval more
        assert want <= hours <= want * 1.1, (hours, want)
        cpu_cq = f'cluster_queue:trainweave_gpu_hours:increase1h{{cluster_queue="{ns}-cpu"}}'
        assert prom.query(cpu_cq) == []  # the initializers' CPU-seconds are no GPU-hours
    finally:
        prom.stop()
