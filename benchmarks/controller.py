"""Controller benchmark on the real control plane (`make cluster-up` first).

    .venv/bin/python benchmarks/controller.py --trainjobs 100 [--kubeconfig PATH]

Creates N TrainJobs (2 short steps each: a CPU initializer, then a 1-GPU trainer; kwok pods run
1 s) in a fresh namespace, runs `trainweave controller` as a subprocess scoped to it, and
measures, from one watcher on this side:
- latency Workflow finished -> TrainJob condition (the time between this watcher seeing the
  Workflow terminal and seeing Complete/Failed on the TrainJob), p50/p99;
- API requests per TrainJob, reads vs writes (the controller's own counter at its send() edge,
  Lease traffic excluded; watches counted apart);
- controller CPU seconds and peak RSS (/proc of the subprocess).
Prints the machine and engine versions. No sleeps as synchronisation: waits poll with deadlines.
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
from kubernetes import client, config, watch

ROOT = Path(__file__).resolve().parents[1]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
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


class Watcher:
    """Local receive times of terminal Workflows and finished TrainJobs."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.ns = ns
        self.wf_done: dict[str, float] = {}
        self.tj_done: dict[str, float] = {}
        self.outcome: dict[str, str] = {}
        self.status_seen: dict[str, str] = {}
        self.status_changes: dict[str, int] = {}
        self.stop = threading.Event()

    def _loop(self, group: str, version: str, plural: str, fn: Any) -> None:
        while not self.stop.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            for ev in w.stream(self.custom.list_namespaced_custom_object, group, version,  # type: ignore[no-untyped-call]
                               self.ns, plural, timeout_seconds=60):  # fmt: skip
                fn(ev["object"], time.monotonic())
                if self.stop.is_set():
                    w.stop()  # type: ignore[no-untyped-call]
                    break

    def on_wf(self, obj: Json, t: float) -> None:
        tj = obj["metadata"].get("labels", {}).get("trainweave.io/trainjob")
        if tj and (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error"):
            self.wf_done.setdefault(tj, t)

    def on_tj(self, obj: Json, t: float) -> None:
        name = obj["metadata"]["name"]
        status = json.dumps(obj.get("status") or {}, sort_keys=True)
        if status != self.status_seen.get(name, "{}"):
            self.status_changes[name] = self.status_changes.get(name, 0) + 1
            self.status_seen[name] = status
        for c in (obj.get("status") or {}).get("conditions") or []:
            if c["type"] in ("Complete", "Failed") and c["status"] == "True":
                self.tj_done.setdefault(obj["metadata"]["name"], t)
                self.outcome.setdefault(obj["metadata"]["name"], f"{c['type']}/{c['reason']}")

    def start(self) -> None:
        for args in (("argoproj.io", "v1alpha1", "workflows", self.on_wf),
                     (*TRAINER, "trainjobs", self.on_tj)):  # fmt: skip
            threading.Thread(target=self._loop, args=args, daemon=True).start()


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
    return out


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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trainjobs", type=int, default=100)
    ap.add_argument("--kubeconfig", default=os.environ.get("TRAINWEAVE_KUBECONFIG") or str(
        Path.home() / ".cache/trainweave/cluster/kubeconfig"))  # fmt: skip
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--workers", type=int, default=2)
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
    ctl = subprocess.Popen(
        [sys.executable, "-m", "trainweave.cli", "controller", "--kubeconfig", args.kubeconfig,
         "--namespace", ns, "--lease-namespace", ns, "--bind", f"127.0.0.1:{port}",
         "--workers", str(args.workers), "--log-level", "WARNING"],
    )  # fmt: skip
    watcher = Watcher(api, ns)
    watcher.start()
    started = time.monotonic()
    for i in range(n):
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
    reads = reqs.get("get", 0) + reqs.get("list", 0)
    writes = sum(v for k, v in reqs.items() if k in ("post", "patch", "put", "delete"))
    result = {
        "trainjobs": n,
        "finished": len(watcher.tj_done),
        "outcomes": {
            o: list(watcher.outcome.values()).count(o) for o in set(watcher.outcome.values())
        },
        "wall_seconds": round(wall, 1),
        "latency_p50_s": round(pct(lat, 0.5), 3) if lat else None,
        "latency_p99_s": round(pct(lat, 0.99), 3) if lat else None,
        "reads_per_trainjob": round(reads / n, 2),
        "writes_per_trainjob": round(writes / n, 2),
        # status writes vs the status changes this watcher saw (each a Trainer-visible transition:
        # a condition or a jobsStatus count); target: writes <= transitions + 2
        "status_writes_per_trainjob": round(reqs.get("patch trainjobs/status", 0) / n, 2),
        "status_transitions_per_trainjob": round(sum(watcher.status_changes.values()) / n, 2),
        "watch_requests": reqs.get("watch", 0),
        "requests_per_trainjob_by_kind": {
            k: round(v / n, 2) for k, v in sorted(reqs.items()) if " " in k and "watch" not in k
        },
        "controller_cpu_seconds": round(cpu, 2),
        "controller_peak_rss_mib": round(rss / 2**20, 1),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
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
