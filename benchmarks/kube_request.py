"""CPU per API request of the controller's client, urllib3 pool against the kept-alive
``http.client`` connection, on the real API server (`make cluster-up` first).

    .venv/bin/python benchmarks/kube_request.py [--requests 500] [--rounds 5] [--kubeconfig PATH]

Both paths of ``KubeClient.send`` (``integrations/cluster/kube.py``) in the same process,
rounds interleaved so that load on the machine weighs on both alike: a GET of a namespace and a
merge PATCH of a ConfigMap's annotation (a write, as the controller's status and quota writes
are). The figure is this thread's CPU time (``time.thread_time``) per request, median over the
rounds. Prints the machine and versions; the last line is machine-readable.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from trainweave.integrations.cluster.kube import KubeClient, load_configuration
from trainweave.integrations.views.requests import api

sys.path.insert(0, str(Path(__file__).resolve().parent))
from controller import versions

NAMESPACE = "default"
NAME = "trainweave-kube-request-bench"


def cpu_per_request(send: Callable[[api.Request], object], reqs: list[api.Request]) -> float:
    """Thread CPU seconds per request over ``reqs``."""
    start = time.thread_time()
    for req in reqs:
        send(req)
    return (time.thread_time() - start) / len(reqs)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--kubeconfig", default=os.environ.get("TRAINWEAVE_KUBECONFIG") or str(
        Path.home() / ".cache/trainweave/cluster/kubeconfig"))  # fmt: skip
    args = ap.parse_args()
    cfg = load_configuration(args.kubeconfig)
    direct = KubeClient(cfg)
    pooled = KubeClient(cfg)
    pooled.direct = None  # the urllib3 path, as a configuration with a proxy takes
    assert direct.direct is not None, "this configuration takes the urllib3 path anyway"
    cm_path = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    try:
        direct.send(api.Request("DELETE", f"{cm_path}/{NAME}"))
    except api.ApiError as err:
        if err.status != 404:
            raise
    direct.send(api.Request("POST", cm_path, body={"metadata": {"name": NAME}, "data": {"a": "b"}}))
    get = [api.Request("GET", f"/api/v1/namespaces/{NAMESPACE}")] * args.requests
    patch = [
        api.Request(
            "PATCH",
            f"{cm_path}/{NAME}",
            body={"metadata": {"annotations": {"n": str(i)}}},
            content_type=api.MERGE_PATCH,
        )
        for i in range(args.requests)
    ]
    figures: dict[str, dict[str, list[float]]] = {
        "urllib3": {"get": [], "patch": []},
        "direct": {"get": [], "patch": []},
    }
    try:
        for _ in range(args.rounds):
            for path, client in (("urllib3", pooled), ("direct", direct)):
                figures[path]["get"].append(cpu_per_request(client.send, get))
                figures[path]["patch"].append(cpu_per_request(client.send, patch))
    finally:
        direct.send(api.Request("DELETE", f"{cm_path}/{NAME}"))
    us = {
        path: {verb: round(statistics.median(v) * 1e6) for verb, v in by_verb.items()}
        for path, by_verb in figures.items()
    }
    print(json.dumps({
        "requests_per_round": args.requests,
        "rounds": args.rounds,
        "cpu_us_per_request_median": us,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average": os.getloadavg(),
        "versions": versions(),
    }, indent=2))  # fmt: skip
    print(
        "kube-request: cpu-us-per-request"
        f" get urllib3={us['urllib3']['get']} direct={us['direct']['get']}"
        f" patch urllib3={us['urllib3']['patch']} direct={us['direct']['patch']}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
