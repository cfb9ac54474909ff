"""GPU admission: upstream (Kubeflow Trainer + JobSet + Kueue) against trainweave, same trace.

    make bench-admission                      # the three traces, 24 TrainJobs each
    .venv/bin/python benchmarks/admission.py --trace init-heavy --trainjobs 4

Needs the local control plane (`make cluster-up`; the make target starts it if needed). For each
trace (seeded), the same TrainJobs, shaped like examples/llm-finetune (two 4-CPU initializers, a
trainer of 2 nodes x 8 GPUs, an 8-CPU exporter; kwok pods run for the trace's durations), run twice
on the same engines and Kueue:

- upstream: `hack/cluster.py upstream on` (Trainer v2.3.0's controller, JobSet, Kueue's TrainJob
  integration): one Workload per TrainJob on one ClusterQueue holding CPU and GPU quota;
- trainweave: its controller; steps on a CPU and a GPU ClusterQueue with the same totals.

GPU quota fits two trainers (32 GPUs). Traces: `init-heavy` (initializers 30-40 s, trainer
8-12 s), `init-light` (initializers 2-3 s, trainer 25-35 s), both submitted at once, and
`poisson` (init-heavy durations, arrivals every 8 s on average). Watches record every Workload
and pod as the cluster writes them; what is submitted comes from benchmarks/admission_trace.py,
the figures from benchmarks/admission_metrics.py. Prints machine, versions and engine settings,
writes docs/admission-<trace>.png (the GPU timeline of both runs side by side) and the last
lines `bench-admission: trace=NAME makespan-ratio=R held-idle-gpu-s trainweave=X upstream=Y`.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import importlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, config, watch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from admission_metrics import Hold, Span, TrainJobTimes, summary
from admission_trace import GPU, GPU_QUOTA, Job, Json, queues, runtime, trace, trainjob

ROOT = Path(__file__).resolve().parents[1]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
KUEUE = ("kueue.x-k8s.io", "v1beta2")


class Recorder:
    """Every Workload and pod of a namespace as last seen (watches), by uid."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.core, self.custom, self.ns = client.CoreV1Api(api), client.CustomObjectsApi(api), ns
        self.workloads: dict[str, Json] = {}
        self.pods: dict[str, Json] = {}
        self.deleted: dict[str, float] = {}
        self.stop = threading.Event()
        self.api = api

    def _loop(self, kind: str) -> None:
        while not self.stop.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            if kind == "pods":
                stream = w.stream(self.core.list_namespaced_pod, self.ns, timeout_seconds=30)  # type: ignore[no-untyped-call]
            else:
                stream = w.stream(self.custom.list_namespaced_custom_object, *KUEUE, self.ns,  # type: ignore[no-untyped-call]
                                  "workloads", timeout_seconds=30)  # fmt: skip
            store = self.pods if kind == "pods" else self.workloads
            for ev in stream:
                obj = ev["object"]
                if kind == "pods":
                    obj = self.api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
                uid = obj["metadata"]["uid"]
                store[uid] = obj
                if ev["type"] == "DELETED":
                    self.deleted.setdefault(uid, time.time())
                if self.stop.is_set():
                    w.stop()  # type: ignore[no-untyped-call]
                    break

    def start(self) -> None:
        for kind in ("pods", "workloads"):
            threading.Thread(target=self._loop, args=(kind,), daemon=True).start()


def stamp(text: str | None) -> float | None:
    """RFC 3339 (second precision, as the API server writes conditions) -> epoch seconds."""
    if not text:
        return None
    return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


def condition_time(obj: Json, ctype: str, status: str = "True") -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype and c["status"] == status:
            return stamp(c.get("lastTransitionTime"))
    return None


def gpus_of(wl: Json) -> float:
    """GPUs a Workload reserves (its admission's resourceUsage, else its pod sets' requests)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    total = 0.0
    for psa in admission.get("podSetAssignments") or []:
        total += float(str((psa.get("resourceUsage") or {}).get(GPU, "0")))
    if total:
        return total
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        for c in ps["template"]["spec"].get("containers") or []:
            res = c.get("resources") or {}
            value = (res.get("requests") or {}).get(GPU) or (res.get("limits") or {}).get(GPU)
            total += float(str(value or 0)) * int(ps.get("count", 1))
    return total


def trainjob_of(obj: Json) -> str:
    """The TrainJob a Workload or pod belongs to: its owner (upstream) or its labels."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "TrainJob":
            return str(ref["name"])
    labels = dict(meta.get("labels") or {})
    for ps in (obj.get("spec") or {}).get("podSets") or []:
        labels.update((ps.get("template") or {}).get("metadata", {}).get("labels") or {})
    return str(
        labels.get("trainweave.io/trainjob") or labels.get("jobset.sigs.k8s.io/jobset-name") or ""
    )


def holds(rec: Recorder, t0: float, end: float) -> list[Hold]:
    # a pod group's Workload (trainweave) is owned by its pods: their labels name the TrainJob
    groups = {
        (p["metadata"].get("labels") or {}).get("kueue.x-k8s.io/pod-group-name"): trainjob_of(p)
        for p in rec.pods.values()
    }
    out = []
    for uid, wl in rec.workloads.items():
        start = condition_time(wl, "QuotaReserved")
        if start is None:
            continue
        stop = (
            condition_time(wl, "Finished")
            or condition_time(wl, "QuotaReserved", "False")
            or rec.deleted.get(uid)
            or end
        )
        created = stamp(wl["metadata"].get("creationTimestamp")) or start
        out.append(
            Hold(
                trainjob_of(wl) or groups.get(wl["metadata"]["name"], ""),
                wl["metadata"]["name"],
                gpus_of(wl),
                created - t0,
                start - t0,
                max(start, stop) - t0,
            )
        )
    return out


def spans(rec: Recorder, t0: float, end: float) -> list[Span]:
    """Trainer pods (replicatedJob ``node``) from their container start to its finish."""
    out = []
    for pod in rec.pods.values():
        labels = pod["metadata"].get("labels") or {}
        if labels.get("jobset.sigs.k8s.io/replicatedjob-name") != "node":
            continue
        status = pod.get("status") or {}
        start = stamp(status.get("startTime"))
        if start is None:
            continue
        finish = None
        for cs in status.get("containerStatuses") or []:
            if cs["name"] in ("wait", "main") and len(status["containerStatuses"]) > 1:
                continue
            term = (cs.get("state") or {}).get("terminated")
            if term:
                start = stamp(term.get("startedAt")) or start
                finish = stamp(term.get("finishedAt"))
        gpus = sum(
            float(str(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0)))
            for c in pod["spec"]["containers"]
        )
        out.append(Span(trainjob_of(pod), start - t0, (finish or end) - t0, gpus))
    return out


def apiserver_writes(kubectl: list[str]) -> float:
    """kube-apiserver's own count of mutating requests (all clients)."""
    text = subprocess.run([*kubectl, "get", "--raw", "/metrics"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    total = 0.0
    for line in text.splitlines():
        if line.startswith("apiserver_request_total{") and re.search(
            r'verb="(POST|PUT|PATCH|DELETE|APPLY)"', line
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total


@dataclass
class Run:
    """One trace under one setup: what was recorded, and the figures."""

    setup: str
    jobs: list[TrainJobTimes] = field(default_factory=list)
    holds: list[Hold] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)


class Cluster:
    """The local control plane, as hack/cluster.py left it."""

    def __init__(self, kubeconfig: str) -> None:
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
        self.api = client.ApiClient(cfg)
        self.core, self.custom = client.CoreV1Api(self.api), client.CustomObjectsApi(self.api)
        self.kubeconfig = kubeconfig
        engines = subprocess.run(["bash", str(ROOT / "hack/build.sh"), "--print-dir"],
                                 capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        self.kubectl = [str(Path(engines) / "bin" / "kubectl"), "--kubeconfig", kubeconfig]

    def upstream(self, on: bool) -> None:
        subprocess.run([sys.executable, str(ROOT / "hack/cluster.py"), "upstream",
                        "on" if on else "off"], check=True, capture_output=True)  # fmt: skip

    def create_trainjob(self, ns: str, tj: Json) -> None:
        """Create ``tj``; while Kueue's TrainJob webhook (upstream phase) answers that its runtime
        is not found (its informer cache lags the runtime's creation), ask again (30 s at most)."""
        deadline = time.time() + 30
        while True:
            try:
                self.custom.create_namespaced_custom_object(*TRAINER, ns, "trainjobs", tj)
                return
            except client.ApiException as err:
                if err.status != 403 or "not found" not in str(err.body) or time.time() > deadline:
                    raise
            time.sleep(0.2)

    def run(self, setup: str, jobs: list[Job], timeout: float) -> Run:
        upstream = setup == "upstream"
        ns = f"bench-{setup}-{uuid.uuid4().hex[:5]}"
        labels = {"trainweave.test/e2e": "true"}
        if upstream:
            labels["trainweave.test/upstream"] = "true"
        self.core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=ns, labels=labels))
        )
        made = queues(ns, upstream)
        for q in made:
            if q["kind"] == "ClusterQueue":
                self.custom.create_cluster_custom_object(*KUEUE, "clusterqueues", q)
            else:
                self.custom.create_namespaced_custom_object(*KUEUE, ns, "localqueues", q)
        for job in jobs:
            self.custom.create_namespaced_custom_object(*TRAINER, ns, "trainingruntimes",
                                                        runtime(ns, job, upstream))  # fmt: skip
        ctl = None
        if not upstream:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            ctl = subprocess.Popen(
                [sys.executable, "-m", "trainweave.cli", "controller", "--kubeconfig",
                 self.kubeconfig, "--namespace", ns, "--lease-namespace", ns,
                 "--bind", f"127.0.0.1:{port}", "--log-level", "WARNING"],
            )  # fmt: skip
        rec = Recorder(self.api, ns)
        rec.start()
        writes0 = apiserver_writes(self.kubectl)
        t0 = time.time()
        for job in jobs:  # a trace's arrivals: pacing, not synchronisation
            time.sleep(max(0.0, t0 + job.arrival - time.time()))
            self.create_trainjob(ns, trainjob(ns, job, upstream))
        done: dict[str, TrainJobTimes] = {}
        deadline = time.time() + timeout
        while len(done) < len(jobs) and time.time() < deadline:
            listed: Json = self.custom.list_namespaced_custom_object(*TRAINER, ns, "trainjobs")  # type: ignore[assignment]
            for tj in listed["items"]:
                for outcome in ("Complete", "Failed"):
                    finished = condition_time(tj, outcome)
                    if finished is not None and tj["metadata"]["name"] not in done:
                        created = stamp(tj["metadata"]["creationTimestamp"]) or t0
                        done[tj["metadata"]["name"]] = TrainJobTimes(
                            tj["metadata"]["name"], created - t0, finished - t0, outcome
                        )
            rec.stop.wait(2.0)
        end = time.time()
        writes = apiserver_writes(self.kubectl) - writes0
        rec.stop.set()
        if ctl is not None:
            ctl.terminate()
            ctl.wait(30)
        run = Run(setup, sorted(done.values(), key=lambda j: j.name), holds(rec, t0, end),
                  spans(rec, t0, end))  # fmt: skip
        run.figures = summary(run.jobs, run.holds, run.spans, GPU_QUOTA)
        run.figures["api_writes"] = writes
        run.figures["api_writes_per_trainjob"] = writes / len(jobs)
        with contextlib.suppress(client.ApiException):
            self.core.delete_namespace(ns)
        for q in made:
            if q["kind"] == "ClusterQueue":
                with contextlib.suppress(client.ApiException):
                    self.custom.delete_cluster_custom_object(
                        *KUEUE, "clusterqueues", q["metadata"]["name"]
                    )
        return run


def plot(trace_name: str, runs: list[Run], out: Path) -> None:
    """Per TrainJob, GPUs reserved (light) and reserved while its trainer runs (dark), both setups
    side by side (matplotlib, installed by `make bench-admission`)."""
    plt: Any = importlib.import_module("matplotlib.pyplot")
    importlib.import_module("matplotlib").use("Agg")
    fig, axes = plt.subplots(1, len(runs), figsize=(7 * len(runs), 0.3 * len(runs[0].jobs) + 2),
                             sharex=True, sharey=True)  # fmt: skip
    names = sorted({j.name for r in runs for j in r.jobs})
    for ax, run in zip(axes, runs, strict=True):
        for y, name in enumerate(names):
            for h in (h for h in run.holds if h.trainjob == name and h.gpus > 0):
                ax.barh(y, h.end - h.start, left=h.start, height=0.8, color="#f4a582")
            for s in (s for s in run.spans if s.trainjob == name):
                ax.barh(y, s.end - s.start, left=s.start, height=0.4, color="#2166ac")
        held = run.figures["held_idle_gpu_s"]
        ax.set_title(f"{run.setup}: makespan {run.figures['makespan_s']:.0f} s, "
                     f"held-idle {held:.0f} GPU-s")  # fmt: skip
        ax.set_xlabel("seconds since submission")
        ax.set_yticks(range(len(names)), names, fontsize=7)
    axes[0].set_ylabel(f"TrainJob ({trace_name}); light: GPUs reserved, dark: trainer running")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


def versions() -> dict[str, str]:
    env = dict(
        line.split("=", 1)
        for line in (ROOT / "hack/versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    return {
        "kubernetes": env["KUBERNETES_VERSION"], "kueue": env["KUEUE_VERSION"],
        "argo": env["ARGO_WORKFLOWS_VERSION"], "trainer": env["TRAINER_VERSION"],
        "jobset": "v0.12.0 (Trainer's go.mod)", "kwok": env["KWOK_VERSION"],
        "python": platform.python_version(),
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", action="append", choices=["init-heavy", "init-light", "poisson"])
    ap.add_argument("--trainjobs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="durations and gaps times this")
    ap.add_argument("--timeout", type=float, default=2400)
    ap.add_argument("--png-dir", default=str(ROOT / "docs"))
    ap.add_argument("--kubeconfig", default=os.environ.get("TRAINWEAVE_KUBECONFIG") or str(
        Path.home() / ".cache/trainweave/cluster/kubeconfig"))  # fmt: skip
    args = ap.parse_args()
    cluster = Cluster(args.kubeconfig)
    settings: dict[str, str] = {}
    state = (
        Path(args.kubeconfig).parent / "cluster.json"
    )  # hack/cluster.py's, if it made the cluster
    with contextlib.suppress(OSError, ValueError, KeyError):
        settings = json.loads(state.read_text())["settings"]
    print(json.dumps({"machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
                      "versions": versions(), "settings": settings, "trainjobs": args.trainjobs,
                      "scale": args.scale, "seed": args.seed}))  # fmt: skip
    lines = []
    for name in args.trace or ["init-heavy", "init-light", "poisson"]:
        jobs = trace(name, args.trainjobs, args.seed, args.scale)
        cluster.upstream(True)
        try:
            up = cluster.run("upstream", jobs, args.timeout)
        finally:
            cluster.upstream(False)
        tw = cluster.run("trainweave", jobs, args.timeout)
        for run in (up, tw):
            print(json.dumps({"trace": name, "setup": run.setup,
                              **{k: round(v, 2) for k, v in run.figures.items()}}))  # fmt: skip
        with contextlib.suppress(ModuleNotFoundError):
            plot(name, [up, tw], Path(args.png_dir) / f"admission-{name}.png")
        ratio = (
            tw.figures["makespan_s"] / up.figures["makespan_s"] if up.figures["makespan_s"] else 0
        )
        lines.append(
            f"bench-admission: trace={name} makespan-ratio={ratio:.2f} held-idle-gpu-s "
            f"trainweave={tw.figures['held_idle_gpu_s']:.0f} upstream={up.figures['held_idle_gpu_s']:.0f}"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
