"""Controller benchmark on the real control plane (`make cluster-up` first).

    .venv/bin/python benchmarks/controller.py --trainjobs 100 [--rate R] [--kubeconfig PATH]
        [--profile FILE] [--controller-arg ARG ...]

Creates N TrainJobs (2 short steps each: a CPU initializer, then a 1-GPU trainer; kwok pods run
1 s) in a fresh namespace, all at once or R per second (``--rate``: the controller's caches grow
to N while the engines keep up, which 2 cores cannot for thousands at once), runs `trainweave
controller` as a subprocess scoped to it, and
measures, from watches on this side (Workflows, the TrainJobs' pods, TrainJobs):
- terminal latency, Workflow finished -> TrainJob condition (this side seeing the Workflow
  terminal, then Complete/Failed on the TrainJob), p50/p99;
- every status transition's latency. A transition is one kind of the TrainJob's status
  (``condition.<type>=<status>``, ``jobsStatus.<replicatedJob>.<count>``) taking a new value on
  the TrainJob watch. Its cause is the engine event (a Workflow -- its nodes' phases -- or a pod
  of the TrainJob changing on this side's watches) from which the engines' objects imply that
  value: after each engine event this side folds the TrainJob with its Workflows and pods as
  the controller does (``rollup``, pure) and records when each kind's implied value began. The
  latency is the time from the start of the latest run of the engines implying the value to the
  TrainJob showing it; a value no engine state implied before (the controller's watch ran ahead
  of this one) is counted as unmatched, not measured. p50/p99 per kind and overall;
- start latency, TrainJob created (this side's create call) -> its Workflow seen on this side's
  watch, p50/p99; and the time the API server took to judge each start (``--no-judge-first``
  off: the controller's ``trainweave_judge_seconds`` histogram, quantiles interpolated within
  its buckets as Prometheus' ``histogram_quantile`` does);
- API requests per TrainJob, reads vs writes, and by verb/resource (the controller's own counter
  at its send() edge, Lease traffic excluded; watches counted apart);
- controller CPU seconds (also per TrainJob) and peak RSS (/proc of the subprocess).
``--profile FILE`` runs the controller under cProfile in every thread (pstats FILE; CPU figures
of such a run include the profiler). Prints the machine, load average and engine versions. No
sleeps as synchronisation: waits poll with deadlines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from controller_watch import TRAINER, Watcher

ROOT = Path(__file__).resolve().parents[1]
Json = dict[str, Any]


def runtime(ns: str) -> Json:
    def job(name: str, ancestor: str, queue: str, depends: list[str]) -> Json:
        rj: Json = {
            "name": name,
            "template": {
                "metadata": {
                    "labels": {
                        "trainer.kubeflow.org/trainjob-ancestor-step": ancestor,
                        "kueue.x-k8s.io/queue-name": queue,
                    }
                },
                "spec": {
                    "template": {
                        "metadata": {"annotations": {"trainweave.test/duration": "1s"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": name,
                                    "image": "registry.invalid/bench:1",
                                    "command": ["true"],
                                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                                    "volumeMounts": [
                                        {"name": "initializer", "mountPath": "/workspace"}
                                    ],
                                }
                            ],
                            "volumes": [{"name": "initializer", "emptyDir": {}}],
                        },
                    }
                },
            },
        }
        if depends:
            rj["dependsOn"] = [{"name": d, "status": "Complete"} for d in depends]
        return rj

    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "bench", "namespace": ns},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        job("dataset-initializer", "dataset-initializer", "cpu", []),
                        job("node", "trainer", "gpu", ["dataset-initializer"]),
                    ]
                }
            },
        },
    }


def trainjob(ns: str, name: str) -> Json:
    gpu = {"nvidia.com/gpu": "1"}
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "runtimeRef": {"name": "bench", "kind": "TrainingRuntime"},
            "initializer": {"dataset": {"storageUri": "hf://bench/data"}},
            "trainer": {
                "numNodes": 1,
                "resourcesPerNode": {"requests": {"cpu": "10m", **gpu}, "limits": gpu},
            },
        },
    }


def queues(ns: str, n: int) -> list[Json]:
    text = (ROOT / "tests/e2e/manifests/queues.yaml").read_text()
    text = text.replace("${NS}", ns).replace("${GPU_QUOTA}", str(max(64, n)))
    return [d for d in yaml.safe_load_all(text) if d]


def proc_stats(pid: int) -> tuple[float, int]:
    """CPU seconds (user+sys) and peak RSS bytes of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    hwm = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) * 1024
    return cpu, hwm


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("trainweave_api_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            verb = labels.split('verb="')[1].split('"')[0]
            resource = labels.split('resource="')[1].split('"')[0]
            sub = labels.split('subresource="')[1].split('"')[0]
            if resource == "leases":
                continue
            out[verb] = out.get(verb, 0.0) + float(value)
            key = f"{verb} {resource}/{sub}" if sub else f"{verb} {resource}"
            out[key] = out.get(key, 0.0) + float(value)
        elif line.startswith("trainweave_judge_seconds_bucket{"):
            labels, value = line.rsplit(" ", 1)
            le = labels.split('le="')[1].split('"')[0]
            out[f"judge_bucket {le}"] = float(value)
        elif line.startswith("trainweave_reconciles_total{"):
            out["reconciles"] = out.get("reconciles", 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def bucket_quantile(reqs: dict[str, float], q: float) -> float | None:
    """The q-quantile of the judge histogram's cumulative buckets (``judge_bucket LE``), linear
    within the bucket it falls in (Prometheus' ``histogram_quantile``); None when empty."""
    buckets = sorted(
        (float(k.split(" ", 1)[1]), v) for k, v in reqs.items() if k.startswith("judge_bucket ")
    )
    total = buckets[-1][1] if buckets else 0.0
    if total == 0:
        return None
    rank, low, below = q * total, 0.0, 0.0
    for le, count in buckets:
        if count >= rank:
            if le == float("inf"):
                return low  # above the largest finite bucket: its bound, as Prometheus does
            return low + (le - low) * (rank - below) / max(count - below, 1e-9)
        low, below = le, count
    return low


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def versions() -> dict[str, str]:
    env = dict(
        line.split("=", 1)
        for line in (ROOT / "hack/versions.env").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    import kubernetes

    return {
        "kubernetes": env.get("KUBERNETES_VERSION", "?"),
        "kueue": env.get("KUEUE_VERSION", "?"),
        "argo": env.get("ARGO_WORKFLOWS_VERSION", "?"),
        "kwok": env.get("KWOK_VERSION", "?"),
        "python": platform.python_version(),
        "kubernetes-client": kubernetes.__version__,
    }


def profiled(out: str, argv: list[str]) -> int:
    """Run `trainweave.cli` with argv under cProfile in EVERY thread; write merged stats to out.

    `python -m cProfile` profiles only the main thread, and the controller reconciles in worker
    threads: threading.setprofile enables one cProfile.Profile per thread as it starts. Each
    counts its thread's CPU time (time.thread_time), so time blocked on a socket or lock is not
    charged to the caller.
    """
    import cProfile
    import pstats

    from trainweave import cli

    profiles: list[cProfile.Profile] = []

    def start(*_: object) -> None:
        prof = cProfile.Profile(time.thread_time)
        profiles.append(prof)
        prof.enable()  # replaces this hook for the thread

    threading.setprofile(start)
    main_prof = cProfile.Profile(time.thread_time)
    profiles.append(main_prof)
    main_prof.enable()
    try:
        rc = cli.main(argv)
    finally:
        threading.setprofile(None)
        for prof in profiles:
            prof.create_stats()
        stats = pstats.Stats(profiles[0])
        for prof in profiles[1:]:
            stats.add(prof)
        stats.dump_stats(out)
    return rc


def main() -> int:
    if sys.argv[1:2] == ["--profiled-child"]:
        return profiled(sys.argv[2], sys.argv[3:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainjobs", type=int, default=100)
    ap.add_argument("--kubeconfig", default=os.environ.get("TRAINWEAVE_KUBECONFIG") or str(
        Path.home() / ".cache/trainweave/cluster/kubeconfig"))  # fmt: skip
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rate", type=float, default=0.0,
                    help="create TrainJobs at this many per second (default: all at once)")  # fmt: skip
    ap.add_argument("--profile", metavar="FILE",
                    help="run the controller under cProfile (all threads), pstats to FILE")  # fmt: skip
    ap.add_argument("--controller-arg", action="append", default=[], metavar="ARG",
                    help="pass ARG to `trainweave controller` (repeatable), e.g. --settle-ms=0")  # fmt: skip
    args = ap.parse_args()
    n = args.trainjobs
    cfg = client.Configuration()
    config.load_kube_config(config_file=args.kubeconfig, client_configuration=cfg)  # type: ignore[no-untyped-call]
    api = client.ApiClient(cfg)
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    ns = f"bench-{uuid.uuid4().hex[:6]}"
    labels = {"trainweave.test/e2e": "true"}
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns, labels=labels)))
    for q in queues(ns, n):
        plural = "clusterqueues" if q["kind"] == "ClusterQueue" else "localqueues"
        if q["kind"] == "ClusterQueue":
            custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", plural, q)
        else:
            custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", ns, plural, q)
    custom.create_namespaced_custom_object(*TRAINER, ns, "trainingruntimes", runtime(ns))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    prog = [sys.executable, "-m", "trainweave.cli"]
    if args.profile:
        prog = [sys.executable, __file__, "--profiled-child", str(Path(args.profile).resolve())]
    ctl = subprocess.Popen(
        [*prog, "controller", "--kubeconfig", args.kubeconfig,
         "--namespace", ns, "--lease-namespace", ns, "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--log-level", "WARNING", *args.controller_arg],
    )  # fmt: skip
    load_start = list(os.getloadavg())
    watcher = Watcher(api, ns)
    watcher.start()
    started = time.monotonic()
    created: dict[str, float] = {}
    for i in range(n):
        if args.rate > 0:  # paced arrivals: the i-th TrainJob at i / rate seconds
            watcher.stop.wait(max(0.0, started + i / args.rate - time.monotonic()))
        created[f"tj-{i}"] = time.monotonic()
        custom.create_namespaced_custom_object(*TRAINER, ns, "trainjobs", trainjob(ns, f"tj-{i}"))
    deadline = started + args.timeout
    reqs: dict[str, float] = {}
    cpu, rss = 0.0, 0
    while len(watcher.tj_done) < n and time.monotonic() < deadline and ctl.poll() is None:
        watcher.stop.wait(2.0)
        # keep the last good sample: the controller may be gone at the end
        with contextlib.suppress(OSError):
            reqs, (cpu, rss) = scrape(port), proc_stats(ctl.pid)
    wall = time.monotonic() - started
    with contextlib.suppress(OSError):
        reqs, (cpu, rss) = scrape(port), proc_stats(ctl.pid)
    ctl.send_signal(signal.SIGTERM)
    ctl.wait(30)
    watcher.stop.set()
    lat = [watcher.tj_done[k] - watcher.wf_done[k] for k in watcher.tj_done if k in watcher.wf_done]
    every = [x for v in watcher.latency.values() for x in v]
    starts = [watcher.wf_first[k] - t for k, t in created.items() if k in watcher.wf_first]
    judge_p50, judge_p99 = bucket_quantile(reqs, 0.5), bucket_quantile(reqs, 0.99)
    reads = reqs.get("get", 0) + reqs.get("list", 0)
    writes = sum(v for k, v in reqs.items() if k in ("post", "patch", "put", "delete"))
    result = {
        "trainjobs": n,
        "rate_per_second": args.rate or None,
        "controller_args": args.controller_arg,
        "finished": len(watcher.tj_done),
        "outcomes": {
            o: list(watcher.outcome.values()).count(o) for o in set(watcher.outcome.values())
        },
        "wall_seconds": round(wall, 1),
        "latency_p50_s": round(pct(lat, 0.5), 3) if lat else None,
        "latency_p99_s": round(pct(lat, 0.99), 3) if lat else None,
        "start_latency_p50_s": round(pct(starts, 0.5), 3) if starts else None,
        "start_latency_p99_s": round(pct(starts, 0.99), 3) if starts else None,
        "judge_seconds_p50": None if judge_p50 is None else round(judge_p50, 4),
        "judge_seconds_p99": None if judge_p99 is None else round(judge_p99, 4),
        "judged_starts": reqs.get("judge_bucket +Inf", 0.0),
        "reads_per_trainjob": round(reads / n, 2),
        "writes_per_trainjob": round(writes / n, 2),
        # status writes vs the status changes this watcher saw (each a Trainer-visible transition:
        # a condition or a jobsStatus count); target: writes <= transitions + 2
        "status_writes_per_trainjob": round(reqs.get("patch trainjobs/status", 0) / n, 2),
        "status_transitions_per_trainjob": round(sum(watcher.status_changes.values()) / n, 2),
        "watch_requests": reqs.get("watch", 0),
        "reconciles_per_trainjob": round(reqs.get("reconciles", 0) / n, 2),
        "requests_per_trainjob_by_kind": {
            k: round(v / n, 2)
            for k, v in sorted(reqs.items())
            if " " in k and "watch" not in k and not k.startswith("judge_bucket")
        },
        # every status transition (module doc): per kind and overall
        "transition_latency_p50_s": round(pct(every, 0.5), 3) if every else None,
        "transition_latency_p99_s": round(pct(every, 0.99), 3) if every else None,
        "transitions_measured": len(every),
        "transitions_unmatched": dict(sorted(watcher.unmatched.items())),
        "transition_latency_by_kind": {
            k: {"n": len(v), "p50_s": round(pct(v, 0.5), 3), "p99_s": round(pct(v, 0.99), 3)}
            for k, v in sorted(watcher.latency.items())
        },
        "controller_cpu_seconds": round(cpu, 2),
        "controller_cpu_seconds_per_trainjob": round(cpu / n, 4),
        "controller_peak_rss_mib": round(rss / 2**20, 1),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average": {"start": load_start, "end": list(os.getloadavg())},
        "versions": versions(),
    }
    print(json.dumps(result, indent=2))
    core.delete_namespace(ns)
    for q in queues(ns, n):  # cluster-scoped: not taken by the namespace's deletion
        if q["kind"] == "ClusterQueue":
            with contextlib.suppress(client.ApiException):
                custom.delete_cluster_custom_object(
                    "kueue.x-k8s.io", "v1beta2", "clusterqueues", q["metadata"]["name"]
                )
    return 0 if result["outcomes"].get("Complete/AllJobsCompleted") == n else 1


if __name__ == "__main__":
    sys.exit(main())
