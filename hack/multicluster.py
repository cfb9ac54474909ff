#!/usr/bin/env python3
"""Three control planes on loopback for MultiKueue (issue 21): up | down | status | env | with |
lose NAME | return NAME (a member's kube-apiserver stopped, started again; the manager's Kueue
with it: a manager restart) | pods-ready NAME TIMEOUT|default (its Kueue's waitForPodsReady).

A manager and two workers, each a whole `hack/cluster.py up` (etcd, kube-apiserver, kcm,
scheduler, kwok and its fake nodes, the pinned CRDs incl. Trainer v2.3.0's, Kueue, Argo) in its
own state dir ``${XDG_CACHE_HOME:-~/.cache}/trainweave/multicluster/<name>`` (its own kwokctl
cluster name and free ports: the shared ``trainweave/cluster`` is never touched). Then each
Kueue is started again (hack/control_plane.py start_kueue, run by hack/multicluster_member.py
inside the member's state dir) with the JobSet and TrainJob integrations, the manager's also
with a ``multiKueue`` section; and the manager gets what Kueue's own wiring gives it
(sigs.k8s.io/kueue v0.19.2 test/integration/multikueue/suite_test.go): a Secret per worker
holding a kubeconfig with a token of the ServiceAccount deploy/multikueue-worker-rbac.yaml
gives each worker (least privilege, not the worker's admin), a MultiKueueCluster per worker, a MultiKueueConfig, an AdmissionCheck
(controllerName kueue.x-k8s.io/multikueue) and the dispatch ClusterQueue that uses it. Each
worker gets the same dispatch ClusterQueue (where the MultiKueue copy of the Workload is
admitted) and a step ClusterQueue (trainweave's step pod groups). docs/multicluster.md.

Argo's workflow-controller serves /healthz on the hard-wired :6060 (argo-workflows v4.0.7
cmd/workflow-controller/main.go), so only one Argo on this machine answers there; the workers'
controllers log the failed bind and run on.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common
import yaml
from cluster_with import run_with_cluster
from multicluster_docs import manager_docs, token_kubeconfig, worker_docs, worker_rbac

BASE = common.CACHE / "multicluster"
MANAGER = "manager"
WORKERS = ("worker-1", "worker-2")
MEMBERS = (MANAGER, *WORKERS)
CLUSTER_PY = common.HACK / "cluster.py"
MEMBER_PY = common.HACK / "multicluster_member.py"  # what runs in one member's state dir
# Short enough for the worker-lost test; Kueue's default is 15m (configuration_types.go).
MULTIKUEUE = {"gcInterval": "10s", "origin": "trainweave-manager", "workerLostTimeout": "60s"}
TOKEN_TTL = "8760h"  # kubectl create token --duration (TokenRequest expirationSeconds)


def state_dir(name: str) -> Path:
    return BASE / name


def kubeconfig(name: str) -> Path:
    return state_dir(name) / "kubeconfig"


def member_env(name: str) -> dict[str, str]:
    return {**os.environ, "TRAINWEAVE_STATE_DIR": str(state_dir(name))}


def cluster_py(name: str, *args: str) -> int:
    """`hack/cluster.py ARGS` on one member's state dir; its exit code."""
    return subprocess.run(
        [sys.executable, str(CLUSTER_PY), *args], env=member_env(name), check=False
    ).returncode


def kubectl(name: str) -> list[str]:
    eng = common.engines_dir()
    return [str(eng / "bin" / "kubectl"), "--kubeconfig", str(kubeconfig(name))]


def apply_docs(name: str, docs: list[dict[str, Any]]) -> None:
    """Server-side apply of docs on one member, retried while Kueue's webhooks start."""
    f = state_dir(name) / "multicluster.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    argv = [
        *kubectl(name),
        "apply",
        "--server-side",
        "--field-manager=trainweave-e2e",
        "-f",
        str(f),
    ]
    common.wait_for(
        f"{name}: multicluster objects accepted",
        lambda: common.run(*argv, check=False, capture=True).returncode == 0,
        90,
        1,
    )


# ---------------------------------------------------------------------------------------------
# commands


def all_up() -> bool:
    return all(
        subprocess.run(
            [sys.executable, str(CLUSTER_PY), "status", "--strict"],
            env=member_env(n),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        ).returncode
        == 0
        for n in MEMBERS
    )


def active_clusters() -> dict[str, str]:
    """Each MultiKueueCluster's Active condition on the manager (status and reason)."""
    r = common.run(
        *kubectl(MANAGER), "get", "multikueueclusters", "-o", "json", check=False, capture=True
    )
    if r.returncode != 0:
        return {}
    out = {}
    for item in json.loads(r.stdout)["items"]:
        for c in item.get("status", {}).get("conditions") or []:
            if c["type"] == "Active":
                out[item["metadata"]["name"]] = f"{c['status']} ({c.get('reason', '')})"
    return out


def worker_kubeconfig(worker: str) -> str:
    """The kubeconfig the manager gets for ``worker``: a token of deploy/multikueue-worker-rbac.yaml's
    ServiceAccount (TokenRequest via `kubectl create token`), server and CA as the admin one's."""
    _, ns, sa = worker_rbac()
    argv = [*kubectl(worker), "create", "token", sa, "-n", ns, f"--duration={TOKEN_TTL}"]
    token = common.run(*argv, capture=True).stdout.strip()
    return token_kubeconfig(kubeconfig(worker).read_text(), token)


def cmd_up(args: argparse.Namespace) -> None:
    t0 = time.monotonic()
    if all_up():
        common.log("multicluster: already up")
        cmd_status(args)
        return
    for name in MEMBERS:
        common.log(f"multicluster: {name} (state {state_dir(name)})")
        if cluster_py(name, "up", "--no-build") != 0:
            common.die(f"{name}: hack/cluster.py up failed (see its output)")
        me = [sys.executable, str(MEMBER_PY), "_kueue", "--role"]
        role = MANAGER if name == MANAGER else "worker"
        if subprocess.run([*me, role], env=member_env(name), check=False).returncode != 0:
            common.die(f"{name}: Kueue restart failed")
    for w in WORKERS:
        apply_docs(w, [*worker_rbac()[0], *worker_docs()])
    apply_docs(MANAGER, manager_docs({w: worker_kubeconfig(w) for w in WORKERS}))
    common.wait_for(
        "every MultiKueueCluster Active",
        lambda: (
            all(v.startswith("True") for v in active_clusters().values())
            and len(active_clusters()) == len(WORKERS)
        ),
        120,
        1,
    )
    common.log(f"multicluster: up in {time.monotonic() - t0:.1f}s")
    cmd_status(args)


def cmd_down(args: argparse.Namespace) -> None:
    bad = [n for n in reversed(MEMBERS) if cluster_py(n, "down") != 0]
    if bad:
        common.die(f"down failed for {bad}")


def cmd_status(args: argparse.Namespace) -> None:
    strict = ["--strict"] if getattr(args, "strict", False) else []
    codes = [cluster_py(n, "status", *strict) for n in MEMBERS]
    for name, cond in sorted(active_clusters().items()):
        print(f"multicluster: MultiKueueCluster {name} Active={cond}")
    if any(codes):
        sys.exit(1)


def cmd_member(args: argparse.Namespace) -> None:
    """``lose NAME`` / ``return NAME``: a member's kube-apiserver stopped (for a worker: the
    manager loses it, everything else of the worker runs on) or started again as it ran. The
    manager's Kueue goes with it: stopped first on ``lose``, started again (its Configuration
    as ``up`` wrote it) after the kube-apiserver on ``return``: a manager restart."""
    me = [sys.executable, str(MEMBER_PY)]
    kueue = [*me, "_kueue", "--role", MANAGER]
    steps = [[*me, "_apiserver", "--stop" if args.cmd == "lose" else "--start"]]
    if args.name == MANAGER:
        back = [*kueue, "--if-down"]
        steps = [[*kueue, "--stop"], *steps] if args.cmd == "lose" else [*steps, back]
    for argv in steps:
        if subprocess.run(argv, env=member_env(args.name), check=False).returncode != 0:
            common.die(f"{args.cmd} {args.name} failed")


def cmd_pods_ready(args: argparse.Namespace) -> None:
    """``pods-ready NAME TIMEOUT|default``: that member's Kueue restarted with waitForPodsReady
    at TIMEOUT (hack/kueue_config.py pods_ready, backoff base 5 s), or the local default."""
    role = MANAGER if args.name == MANAGER else "worker"
    argv = [sys.executable, str(MEMBER_PY), "_kueue", "--role", role]
    argv += ["--pods-ready", args.timeout]
    if subprocess.run(argv, env=member_env(args.name), check=False).returncode != 0:
        common.die(f"pods-ready {args.name} failed")


def cmd_env(args: argparse.Namespace) -> None:
    for k, v in env_vars().items():
        print(f"export {k}={v}")


def env_vars() -> dict[str, str]:
    """What `with` exports: each member's kubeconfig (TRAINWEAVE_MC_<NAME>_KUBECONFIG)."""
    out = {"TRAINWEAVE_KUBECONFIG": str(kubeconfig(MANAGER))}
    for n in MEMBERS:
        out[f"TRAINWEAVE_MC_{n.upper().replace('-', '_')}_KUBECONFIG"] = str(kubeconfig(n))
    return out


def cmd_with(args: argparse.Namespace) -> None:
    """`with -- CMD`: CMD with every member's kubeconfig exported, on the running three or on
    three started for it and stopped after (hack/cluster_with.py decides)."""
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        common.die("with: no command given (hack/multicluster.py with -- CMD ARGS...)")
    me = [sys.executable, str(Path(__file__).resolve())]

    def call(argv: Sequence[str], env: dict[str, str] | None = None) -> int:
        return subprocess.run(argv, env=env, check=False).returncode

    sys.exit(
        run_with_cluster(
            command,
            is_up=all_up,
            up=lambda: call([*me, "up"]),
            down=lambda: call([*me, "down"]),
            run=lambda cmd: call(cmd, {**os.environ, **env_vars()}),
            log=common.log,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="start the manager and two workers, wire MultiKueue")
    sub.add_parser("down", help="stop all three, delete their state")
    st = sub.add_parser("status", help="each member's processes and the MultiKueueClusters")
    st.add_argument("--strict", action="store_true", help="exit 1 unless everything runs")
    sub.add_parser("env", help="print the members' kubeconfig exports")
    wi = sub.add_parser("with", help="with -- CMD ARGS...: CMD with the kubeconfigs exported")
    wi.add_argument("command", nargs=argparse.REMAINDER)
    for verb, what in (("lose", "stop"), ("return", "start again")):
        w = sub.add_parser(verb, help=f"{what} a member's kube-apiserver (the manager's Kueue too)")
        w.add_argument("name", choices=MEMBERS)
    pr = sub.add_parser("pods-ready", help="restart a member's Kueue with this waitForPodsReady")
    pr.add_argument("name", choices=MEMBERS)
    pr.add_argument("timeout", help="e.g. 20s, or `default` (hack/engine_config.py)")
    args = ap.parse_args()
    commands = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env}
    commands["with"] = cmd_with
    commands.update({"lose": cmd_member, "return": cmd_member, "pods-ready": cmd_pods_ready})
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
