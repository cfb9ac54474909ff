#!/usr/bin/env python3
"""A stand-in for cluster-autoscaler's ProvisioningRequest support on the local control plane:
test infrastructure for the e2e tier and the benchmarks, never shipped (docs/provisioning.md).
cluster-autoscaler cannot be built here (the module proxy refuses every version), so this loop
does what it does for the classes ``check-capacity.autoscaling.x-k8s.io`` and
``best-effort-atomic-scale-up.autoscaling.x-k8s.io``, with kwok nodes for cloud VMs. The
decisions are hack/provisioner_core.py's (pure); this file reads the cluster and carries them
out.

    .venv/bin/python hack/provisioner.py [--kubeconfig PATH] [--scale 0.5] [--pool gpu] ...

Each tick (``--interval``): list the ProvisioningRequests, the PodTemplates, the nodes and the
pods that are not terminal; decide; write a request's conditions (a merge patch of its status)
and its plan annotation, create and delete kwok nodes. A 404 or 409 (gone, or there already) is
fine; another error is logged and the next tick starts again from what the cluster shows.
Durations are in seconds of cluster-autoscaler's defaults, times ``--scale``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlencode

import urllib3
from common import KUBECONFIG
from engine_config import POOLS
from provisioner_core import decide
from provisioner_fit import Taint
from provisioner_model import (
    Action,
    Config,
    CreateNode,
    DeleteNode,
    Memory,
    RecordPlan,
    SetConditions,
    World,
)
from provisioner_wire import (
    GROUP,
    PLURAL,
    VERSION,
    conditions_body,
    node_body,
    node_of,
    plan_patch,
    pod_of,
    pool_node,
    request_of,
    shape_of_template,
    template_names,
    template_node,
)

Json = dict[str, Any]
MERGE = "application/merge-patch+json"
REQUESTS = f"/apis/{GROUP}/{VERSION}"
NOT_TERMINAL = urlencode({"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"})


def log(msg: str) -> None:
    print(f"provisioner: {msg}", flush=True)


class ApiError(Exception):
    def __init__(self, status: int, what: str) -> None:
        super().__init__(f"{status}: {what}")
        self.status = status


class Api:
    """JSON over the official client's connection pool and credentials (as
    integrations/cluster/kube.py sends)."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import client, config

        cfg: Any = client.Configuration()  # typed loosely, as integrations/cluster/kube.py
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=cfg
        )
        self.host: str = cfg.host
        self.pool: urllib3.PoolManager = client.ApiClient(cfg).rest_client.pool_manager
        self.headers = {"Accept": "application/json", "User-Agent": "trainweave-provisioner"}
        for auth in cfg.auth_settings().values():
            if auth.get("in") == "header" and auth.get("value"):
                self.headers[auth["key"]] = auth["value"]

    def send(self, method: str, path: str, body: Json | None = None, ctype: str = "") -> Json:
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = ctype or "application/json"
        resp = self.pool.request(
            method,
            self.host + path,
            body=json.dumps(body).encode() if body is not None else None,
            headers=headers,
            timeout=urllib3.Timeout(connect=10.0, read=30.0),
            retries=False,
        )
        doc: Json = json.loads(resp.data) if resp.data else {}
        if not 200 <= resp.status < 300:
            raise ApiError(resp.status, f"{method} {path}: {doc.get('message', resp.reason)}")
        return doc

    def items(self, path: str) -> list[Json]:
        items: list[Json] = self.send("GET", path).get("items") or []
        return items


def read_world(api: Api) -> World:
    """Everything one decision reads, listed afresh."""
    try:
        listed = api.items(f"{REQUESTS}/{PLURAL}")
    except ApiError as err:
        if err.status != 404:
            raise
        listed = []  # the CRD is not installed: nothing to provision, nodes still scale down
    templates = {
        (t["metadata"]["namespace"], t["metadata"]["name"]): t
        for t in (api.items("/api/v1/podtemplates") if listed else [])
    }
    requests = []
    for obj in listed:
        ns = obj["metadata"]["namespace"]
        named = {name: templates.get((ns, name)) for name in template_names(obj)}
        requests.append(request_of(obj, named))
    nodes = tuple(node_of(n) for n in api.items("/api/v1/nodes"))
    pods = [pod_of(p) for p in api.items(f"/api/v1/pods?{NOT_TERMINAL}")]
    return World(tuple(requests), nodes, tuple(p for p in pods if p is not None))


def carry_out(api: Api, action: Action, template: Json) -> None:
    """One action; what is gone already, or there already, is fine."""
    try:
        match action:
            case SetConditions(namespace=ns, name=name):
                path = f"{REQUESTS}/namespaces/{ns}/{PLURAL}/{name}/status"
                api.send("PATCH", path, conditions_body(action), MERGE)
            case RecordPlan(namespace=ns, name=name):
                path = f"{REQUESTS}/namespaces/{ns}/{PLURAL}/{name}"
                api.send("PATCH", path, plan_patch(action), MERGE)
            case CreateNode():
                api.send("POST", "/api/v1/nodes", node_body(template, action))
            case DeleteNode(name=name):
                api.send("DELETE", f"/api/v1/nodes/{name}")
    except ApiError as err:
        if err.status not in (404, 409):
            raise
        log(f"  ({err})")


def describe(action: Action) -> str:
    match action:
        case SetConditions():
            conds = ", ".join(f"{c.type}={c.status}/{c.reason}" for c in action.conditions)
            return f"{action.namespace}/{action.name}: {conds}"
        case RecordPlan():
            return f"{action.namespace}/{action.name}: scale-up of {action.plan.nodes} node(s)"
        case CreateNode():
            return f"node {action.name} created for {action.owner}"
        case DeleteNode():
            return f"node {action.name} deleted"


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="provisioner.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kubeconfig", type=Path, default=KUBECONFIG)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between ticks")
    ap.add_argument("--scale", type=float, default=1.0, help="every duration times this")
    ap.add_argument("--pool", default="gpu", choices=sorted(POOLS), help="the node template")
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE on new nodes")
    ap.add_argument("--taint", action="append", default=[], help="KEY[=VALUE]:EFFECT")
    ap.add_argument("--prefix", default="provisioned", help="new nodes' name prefix")
    ap.add_argument("--max-nodes", type=int, default=16, help="the node group's maximum size")
    ap.add_argument("--booking", type=float, default=600.0, help="CA defaultReservationTime")
    ap.add_argument("--provision-delay", type=float, default=30.0, help="scale-up to nodes")
    ap.add_argument("--scale-down-unneeded", type=float, default=600.0)
    ap.add_argument("--retry-initial", type=float, default=60.0)
    ap.add_argument("--retry-max", type=float, default=600.0)
    ap.add_argument(
        "--booking-by-time-only",
        action="store_true",
        help="CA <= 1.36.1: a booking ends only by time, not when its pods are bound",
    )
    ap.add_argument(
        "--wait-for-nodes", action="store_true", help="Provisioned once the nodes are Ready"
    )
    ap.add_argument("--fail-next", type=int, default=0, help="fail the next N requests")
    ap.add_argument("--revoke", action="append", default=[], help="NAME or NS/NAME")
    ap.add_argument("--once", action="store_true", help="one tick, then exit")
    return ap.parse_args(argv)


def taint_of(text: str) -> Taint:
    kv, _, effect = text.rpartition(":")
    key, _, value = kv.partition("=")
    if not key or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
        raise SystemExit(f"--taint {text!r}: want KEY[=VALUE]:EFFECT")
    return Taint(key, value, effect)


def template_of(args: argparse.Namespace) -> Json:
    labels = dict(item.split("=", 1) for item in args.label)
    return template_node(pool_node(args.pool), labels, [taint_of(t) for t in args.taint])


def config_of(args: argparse.Namespace, template: Json) -> Config:
    s = args.scale
    return Config(
        shape_of_template(template),
        prefix=args.prefix,
        max_nodes=args.max_nodes,
        booking_seconds=args.booking * s,
        provision_delay_seconds=args.provision_delay * s,
        scale_down_unneeded_seconds=args.scale_down_unneeded * s,
        retry_initial_seconds=args.retry_initial * s,
        retry_max_seconds=args.retry_max * s,
        consumed_ends_booking=not args.booking_by_time_only,
        wait_for_nodes=args.wait_for_nodes,
    )


def tick(api: Api, memory: Memory, config: Config, template: Json) -> Memory:
    decision = decide(read_world(api), memory, config, time.time())
    for action in decision.actions:
        log(describe(action))
        carry_out(api, action, template)
    return decision.memory


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    template = template_of(args)
    config = config_of(args, template)
    memory = Memory(fail_next=args.fail_next, revoke=frozenset(args.revoke))
    api = Api(args.kubeconfig)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log(f"watching ProvisioningRequests on {api.host} (pool {args.pool}, scale {args.scale})")
    while not stop.is_set():
        try:
            memory = tick(api, memory, config, template)
        except (ApiError, urllib3.exceptions.HTTPError, KeyError, ValueError) as err:
            log(f"tick failed: {type(err).__name__}: {err}")
        if args.once:
            break
        stop.wait(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
