"""The Kueue admin's view of trainweave's pipelines on the real control plane (issue 10 item 5):
a real Prometheus (Debian's package) scraping the controller's /metrics with
deploy/prometheus-rules.yaml; the helpers for Kueue's own ``kueuectl list workload`` and
``trainweave queues`` (table and ``-o json``), which tests/e2e/test_timeline.py runs on its
scenario (one pipeline holds the GPUs, a second waits). Each test prints what the admin sees
(docs/admins.md shows it).
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


def cq_counts(kube: Kube, name: str) -> tuple[int, int]:
    status = (kube.get(KUEUE, "clusterqueues", name) or {}).get("status") or {}
    return int(status.get("admittedWorkloads") or 0), int(status.get("pendingWorkloads") or 0)


def kueuectl() -> Path:
    """Kueue's CLI of the pin: hack/build.sh builds it (`hack/cluster.py up` builds only the
    engines it runs; a no-op when built, a wait when the background build is making it)."""
    build = ["bash", str(ROOT / "hack" / "build.sh")]
    subprocess.run([*build, "kueuectl"], check=True, capture_output=True, text=True)
    eng = subprocess.run([*build, "--print-dir"], check=True, capture_output=True, text=True)
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


def queues_cli(ns: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "queues", "-n", ns,
         "--kubeconfig", str(default_kubeconfig()), *args],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout


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
