"""GPU admission: upstream (Kubeflow Trainer + JobSet + Kueue) against trainweave, same trace.

    make bench-admission                      # the six traces, 24 TrainJobs each
    .venv/bin/python benchmarks/admission.py --trace init-heavy --trainjobs 4
    .venv/bin/python benchmarks/admission.py --trace sustained --dump runs.jsonl
    .venv/bin/python benchmarks/admission.py --from-dump runs.jsonl   # figures again, no cluster

Needs the local control plane (`make cluster-up`; the make target starts it if needed). For each
trace (seeded), the same TrainJobs, shaped like examples/llm-finetune (two 4-CPU initializers, a
trainer of 2 nodes x 8 GPUs, an 8-CPU exporter; kwok pods run for the trace's durations), run twice
on the same engines and Kueue:

- upstream: `hack/cluster.py upstream on` (Trainer v2.3.0's controller, JobSet, Kueue's TrainJob
  integration): one Workload per TrainJob on one ClusterQueue holding CPU and GPU quota;
- trainweave: its controller; steps on a CPU and a GPU ClusterQueue with the same totals.

GPU quota fits two trainers (32 GPUs). Traces: `init-heavy` (initializers 30-40 s, trainer
8-12 s), `init-light` (initializers 2-3 s, trainer 25-35 s), both submitted at once,
`poisson` (init-heavy durations, arrivals every 8 s on average) and `sustained` (init-heavy,
then a GPU evaluator of 1 x 8 GPUs for 4-6 s after the trainer; arrivals every 6.5 s on
average: 0.96 of the GPU quota offered). `sustained` (and every trace with --kept) runs a third
setup, trainweave-kept: the controller with --kept-position.

Watches (benchmarks/admission_record.py) record every Workload, pod and Workflow as the
cluster writes them, and when each state was first seen; what is submitted comes from
benchmarks/admission_trace.py, the figures from benchmarks/admission_metrics.py, the host's
API write counter and CPU seconds from benchmarks/admission_host.py; a run's records and its
JSON lines are benchmarks/admission_report.py's. Prints
machine, versions and engine settings, a JSON line of figures per run and, for trainweave runs,
`{"handoff": ...}` (p50/p99 of each part of a step hand-off) and `{"quota": ...}` (where the GPU
quota's seconds went: held before a step's pods existed, until they ran, while they ran, after
they succeeded; free while a ready step would have fit, while none fit, while none was ready),
`{"api_writes_per_trainjob_top": ...}` (the API server's writes by resource and verb),
`{"cpu_s": ...}` (CPU seconds of each engine process, the trainweave controller and the
benchmark's own watches over the run), writes docs/admission-<trace>.png (the GPU timelines side by side) and the last lines, one per
trace:
`bench-admission: trace=NAME makespan-ratio=R held-idle-gpu-s trainweave=X upstream=Y
inversions trainweave=I upstream=J jct-p99-ratio=Q` (trainweave: with kept position where it
ran; the run without it follows as nokept-* fields).

The provisioning traces (issue 40), `prov-init-heavy` (init-heavy's TrainJobs) and
`prov-long-init` (initializers of 140-160 s, longer than the booking and the scale-down after
it), run both setups behind Kueue's ProvisioningRequest check on a GPU flavor no node has until
the stand-in for cluster-autoscaler (hack/provisioner.py) makes one, each run from zero GPU
nodes (benchmarks/admission_capacity.py); a run also stops when nothing new was seen for longer
than the trace's longest pod runs (a trainer stranded), and waits for its nodes' scale-down.
Figures (benchmarks/admission_provisioning.py): GPU node-seconds, idle GPU node-seconds,
bookings expired, requests per TrainJob, trainer start delay, stranded trainers; the picture
docs/provisioning-<trace>.png (each GPU node's life); the line
`bench-provisioning: trace=NAME idle-gpu-node-s trainweave=X upstream=Y expired trainweave=A
upstream=B node-s trainweave=P upstream=Q makespan-ratio=R ...` (R `<...` when upstream did not
finish: its run's length bounds its makespan).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kubernetes import client, config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from admission_capacity import Capacity, CapacityRecorder, records
from admission_capacity import plot as plot_nodes
from admission_host import apiserver_writes, cpu_seconds, engines_cpu, own_cpu
from admission_metrics import (
    TrainJobTimes,
    summary,
)
from admission_provisioning import figures as provisioning_figures
from admission_provisioning import line as provisioning_line
from admission_record import KUEUE, Recorder, Steps, condition_time, holds, spans, stamp
from admission_report import Run, from_dump, handoff_line, last_line, report
from admission_trace import (
    GPU_QUOTA,
    PROVISIONING,
    TRACES,
    Job,
    Json,
    offered_gpus,
    queues,
    runtime,
    trace,
    trainjob,
)

ROOT = Path(__file__).resolve().parents[1]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")


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

    def run(
        self, setup: str, jobs: list[Job], timeout: float, capacity: Capacity | None = None
    ) -> Run:
        """``setup``: upstream, trainweave, or trainweave-kept (controller --kept-position).
        ``capacity``: behind the ProvisioningRequest check (the provisioning traces); the run
        also stops when nothing moves, and waits for its GPU nodes' scale-down."""
        upstream = setup == "upstream"
        ns = f"bench-{setup}-{uuid.uuid4().hex[:5]}"
        labels = {"trainweave.test/e2e": "true"}
        if upstream:
            labels["trainweave.test/upstream"] = "true"
        self.core.create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=ns, labels=labels))
        )
        made = capacity.queues(ns, upstream) if capacity else queues(ns, upstream)
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
                 "--bind", f"127.0.0.1:{port}", "--log-level", "WARNING",
                 *(["--kept-position"] if setup == "trainweave-kept" else [])],
            )  # fmt: skip
        rec = capacity.recorder(self.api, ns) if capacity else Recorder(self.api, ns)
        rec.start()
        writes0 = apiserver_writes(self.kubectl)
        cpu0, own0 = engines_cpu(), own_cpu()
        t0 = time.time()
        submitted: dict[str, float] = {}  # sub-second, for the order of creation
        for job in jobs:  # a trace's arrivals: pacing, not synchronisation
            time.sleep(max(0.0, t0 + job.arrival - time.time()))
            submitted[job.name] = time.time() - t0
            self.create_trainjob(ns, trainjob(ns, job, upstream))
        done: dict[str, TrainJobTimes] = {}
        deadline = time.time() + timeout
        while len(done) < len(jobs) and time.time() < deadline:
            if capacity and capacity.stalled(rec):
                break
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
        if capacity:
            capacity.settle(rec)
        settled = time.time()
        by_kind = {
            k: v - writes0.get(k, 0.0)
            for k, v in apiserver_writes(self.kubectl).items()
            if v > writes0.get(k, 0.0)
        }
        writes = sum(by_kind.values())
        cpu = {k: v - cpu0.get(k, 0.0) for k, v in engines_cpu().items()}
        cpu["benchmark (watches)"] = own_cpu() - own0
        if ctl is not None:
            cpu["trainweave controller"] = cpu_seconds(ctl.pid)
        rec.stop.set()
        if ctl is not None:
            ctl.terminate()
            ctl.wait(30)
        deps = {
            rj["name"]: [d["name"] for d in rj.get("dependsOn") or []]
            for rj in runtime(ns, jobs[0], upstream)["spec"]["template"]["spec"]["replicatedJobs"]
        }
        steps = Steps(rec, deps, t0)
        run = Run(setup, sorted(done.values(), key=lambda j: j.name), holds(rec, t0, end),
                  spans(rec, t0, end), [] if upstream else steps.starts())  # fmt: skip
        run.gpu_steps = steps.gpu_steps(upstream, submitted)
        run.cpu = {k: round(v, 1) for k, v in sorted(cpu.items(), key=lambda kv: -kv[1])}
        run.quota_holds = [] if upstream else steps.quota_holds()
        run.figures = summary(run.jobs, run.holds, run.spans, GPU_QUOTA, run.gpu_steps)
        run.figures["api_writes"] = writes
        run.figures["api_writes_per_trainjob"] = writes / len(jobs)
        if isinstance(rec, CapacityRecorder):
            names = [j.name for j in jobs]
            run.capacity = records(rec, steps, names, t0, end, settled)
            run.figures |= provisioning_figures(run.capacity)
        top = sorted(by_kind.items(), key=lambda kv: -kv[1])[:12]
        run.writes = {k: round(v / len(jobs), 2) for k, v in top}
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
    """Per TrainJob, GPUs reserved (light) and reserved while its GPU pods run (dark), the setups
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
    axes[0].set_ylabel(f"TrainJob ({trace_name}); light: GPUs reserved, dark: GPU pods running")
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
        # the pin, or the supported one `make bench-admission ARGO_VERSION=...` brought up
        "argo": os.environ.get("ARGO_VERSION") or env["ARGO_WORKFLOWS_VERSION"],
        "trainer": env["TRAINER_VERSION"],
        "jobset": "v0.12.0 (Trainer's go.mod)", "kwok": env["KWOK_VERSION"],
        "python": platform.python_version(),
    }  # fmt: skip


def requeue_time(kubeconfig: str, value: str | None) -> str:
    """Argo's ``DEFAULT_REQUEUE_TIME`` for the next runs: the workflow-controller restarted with
    ``value`` (``hack/cluster.py restart``); the cluster's setting when None. Returns it."""
    if value is not None:
        subprocess.run([sys.executable, str(ROOT / "hack/cluster.py"), "restart",
                        "workflow-controller", "--env", f"DEFAULT_REQUEUE_TIME={value}"],
                       check=True)  # fmt: skip
    state = Path(kubeconfig).parent / "cluster.json"
    settings: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError, KeyError):
        settings = json.loads(state.read_text())["settings"]
    return (
        settings.get("workflow-controller DEFAULT_REQUEUE_TIME")
        or settings.get("argo DEFAULT_REQUEUE_TIME")
        or "10s"  # Argo's own default
    )


SETUPS = ("upstream", "trainweave", "trainweave-kept")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--trace", action="append", choices=TRACES)
    ap.add_argument("--kept", action="store_true", help="a third setup, trainweave-kept, on every "
                    "trace (always on for sustained)")  # fmt: skip
    ap.add_argument("--setup", action="append", choices=SETUPS, help="only these setups (an "
                    "engine-setting A/B; without upstream, no last line or timeline)")  # fmt: skip
    ap.add_argument("--trainjobs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="durations and gaps times this")
    ap.add_argument("--timeout", type=float, default=2400)
    ap.add_argument("--png-dir", default=str(ROOT / "docs"))
    ap.add_argument("--dump", help="append each run's records (TrainJobs, holds, spans, step "
                    "starts, GPU steps, quota holds) to this file, a JSON line per run")  # fmt: skip
    ap.add_argument("--kubeconfig", default=os.environ.get("TRAINWEAVE_KUBECONFIG") or str(
        Path.home() / ".cache/trainweave/cluster/kubeconfig"))  # fmt: skip
    ap.add_argument("--from-dump", help="no cluster: print the figures of the runs a --dump "
                    "file holds, worked out again")  # fmt: skip
    ap.add_argument("--argo-requeue", action="append", metavar="DURATION", help="run every "
                    "trace with Argo's DEFAULT_REQUEUE_TIME at DURATION (repeatable, e.g. 1s "
                    "and Argo's default 10s; the workflow-controller is restarted with it)")  # fmt: skip
    args = ap.parse_args()
    if args.from_dump:
        by_trace: dict[str, list[Run]] = {}
        for text in Path(args.from_dump).read_text(encoding="utf-8").splitlines():
            name, run = from_dump(json.loads(text))
            report(name, run)
            by_trace.setdefault(name, []).append(run)
        for name, runs in by_trace.items():  # the trace lines, as the run printed them
            up = next((r for r in runs if r.setup == "upstream"), None)
            if up is not None and runs[-1] is not up and runs[-1].capacity is not None:
                print(provisioning_line(name, runs[-1].figures, up.figures))
        return 0
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
    lines, handoffs = [], []
    rounds = [(name, r) for r in (args.argo_requeue or [None]) for name in args.trace or TRACES]
    requeue = ""
    for i, (name, value) in enumerate(rounds):
        if i == 0 or value != rounds[i - 1][1]:
            requeue = requeue_time(args.kubeconfig, value)
        jobs = trace(name, args.trainjobs, args.seed, args.scale)
        if name == "sustained":
            print(json.dumps({"trace": name, "offered_gpus": round(offered_gpus(name), 2),
                              "gpu_quota": GPU_QUOTA,
                              "offered_load": round(offered_gpus(name) / GPU_QUOTA, 3)}))  # fmt: skip
        setups = ["upstream", "trainweave"]
        setups += ["trainweave-kept"] if args.kept or name == "sustained" else []
        setups = [s for s in setups if not args.setup or s in args.setup]
        runs = []
        capacity = None
        if name in PROVISIONING:
            capacity = Capacity(cluster.custom, args.scale, jobs)
            print(json.dumps({"trace": name, "provisioner": capacity.flags,
                              "stall_s": capacity.stall_s}))  # fmt: skip
        for setup in setups:  # each run's figures as soon as it ends
            if setup == "upstream":
                cluster.upstream(True)
            try:
                if capacity:  # from zero GPU nodes, a fresh provisioner
                    capacity.on()
                runs.append(cluster.run(setup, jobs, args.timeout, capacity))
            finally:
                if capacity:
                    capacity.off()
                if setup == "upstream":
                    cluster.upstream(False)
            report(name, runs[-1])
            if runs[-1].starts:
                handoffs.append(handoff_line(name, runs[-1], versions()["argo"], requeue))
                print(handoffs[-1], flush=True)
            if args.dump:
                with open(args.dump, "a", encoding="utf-8") as out:
                    out.write(json.dumps({"trace": name, **asdict(runs[-1])}) + "\n")
        if "upstream" not in setups:
            continue
        up = runs[0]
        if capacity:
            with contextlib.suppress(ModuleNotFoundError):
                plot_nodes(name, runs, Path(args.png_dir) / f"provisioning-{name}.png")
            lines.append(provisioning_line(name, runs[-1].figures, up.figures))
            continue
        with contextlib.suppress(ModuleNotFoundError):
            plot(name, runs, Path(args.png_dir) / f"admission-{name}.png")
        lines.append(last_line(name, up, runs[1:]))
    print("\n".join(handoffs + lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
