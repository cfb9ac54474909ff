#!/usr/bin/env python3
"""The e2e control plane on this machine, without Docker: up | down | status | env | with |
upstream | restart | kueue-config | provisioner | render.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok are started by
`kwokctl --runtime binary` (loopback only, free ports, own PKI); the Kueue manager, Argo's
workflow-controller and `argo server` are started as plain processes with pid files. Every
binary comes from hack/build.sh, every CRD and webhook manifest from the same pinned Go modules
(hack/versions.env).

This file is the command line and `up`'s order of phases; it is imported by no other script.
Each engine's start is in hack/control_plane.py, what the engines are given (nodes, kwok
Stages, Kueue config, webhooks, flavors) in hack/engine_config.py, paths, state, processes and
certificates in hack/common.py; `upstream on|off` (Trainer + JobSet) is in hack/upstream.py,
`restart` in hack/restart.py, `kueue-config` (another waitForPodsReady) in
hack/kueue_config.py, `provisioner on|off` (the ProvisioningRequest stand-in as a cluster
process) in hack/provisioning.py, and whether `with -- CMD` (make e2e, bench-admission) starts
and stops the cluster around CMD in hack/cluster_with.py. State (kubeconfig, pids, logs, certs) lives in
$TRAINWEAVE_STATE_DIR, by default ${XDG_CACHE_HOME:-~/.cache}/trainweave/cluster.
docs/local-control-plane.md explains it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import kueue_config
import provisioning
import restart
import upstream
import yaml
from cluster_with import run_with_cluster
from common import (
    CLUSTER_NAME,
    HACK,
    KUBECONFIG,
    LAST_LOGS,
    STATE,
    all_pids,
    apiserver_ready,
    die,
    engines_dir,
    kubectl_commands,
    kwok_cluster_dir,
    kwok_pids,
    kwok_workdir,
    load_state,
    log,
    pid_alive,
    read_env,
    run,
    save_state,
    stop_pid,
    versions,
)
from control_plane import (
    create_flavors,
    create_nodes,
    install_crds,
    start_argo,
    start_argo_server,
    start_kube,
    start_kueue,
    wait_nodes_ready,
)
from engine_config import flavor_manifests, in_cluster_kueue_config, kwokctl_config, node_manifests

# ---------------------------------------------------------------------------------------------
# up, step by step


def reuse_or_clean(args: argparse.Namespace, state: dict[str, Any] | None, kubectl: Path) -> bool:
    """True when this state dir's cluster is already up and healthy (nothing to do). Refuses
    (dies) when some of its processes run but it is not healthy; removes state no process uses."""
    alive = state and all(pid_alive(p) for p in all_pids(state).values())
    if state and state.get("complete") and alive and apiserver_ready(kubectl):
        return True
    if state and any(pid_alive(p) for p in all_pids(state).values()):
        # Possibly another `up` in progress (or another session's cluster): never stop it here.
        die(
            f"a cluster from {STATE} is running but not (yet) healthy: see `make cluster-status`, "
            "stop it with `make cluster-down`, or use another TRAINWEAVE_STATE_DIR"
        )
    if state or STATE.exists():
        log("stale state found (no process alive): cleaning it up first")
        cmd_down(args)
    return False


def build_engines(eng: Path, no_build: bool) -> tuple[dict[str, str], dict[str, str]]:
    """hack/build.sh core (what the cluster runs; a no-op when built; skipped with --no-build),
    then the pinned versions (hack/versions.env) and the module folders holding CRDs and
    manifests (sources.env). Upstream's controllers, kueuectl and the node's binaries are built
    by their users (`upstream on`, test_admin_view, hack/node.py)."""
    if not no_build:
        run("bash", HACK / "build.sh", "core")
    return versions(), read_env(eng / "sources.env")


def new_state(eng: Path) -> dict[str, Any]:
    """A fresh cluster.json: the engines used, the kubeconfig, no pids or ports yet."""
    STATE.mkdir(parents=True, exist_ok=True)
    state: dict[str, Any] = {
        "engines": str(eng),
        "kubeconfig": str(KUBECONFIG),
        "pids": {},
        "ports": {},
    }
    save_state(state)
    return state


def mark_complete(state: dict[str, Any], t0: float) -> None:
    """Records the cluster as up (what `status --strict` and a second `up` rely on)."""
    state["up_seconds"] = round(time.monotonic() - t0, 1)
    state["complete"] = True
    save_state(state)
    log(f"up in {state['up_seconds']}s")


# ---------------------------------------------------------------------------------------------
# commands


def cmd_up(args: argparse.Namespace, started: dict[str, bool] | None = None) -> None:
    """Start every engine (unless this state dir's cluster is already up), then print status.
    Sets started["ours"] once it begins creating state, so a failure can be cleaned up."""
    t0 = time.monotonic()
    eng = engines_dir()
    bin_dir = eng / "bin"
    if reuse_or_clean(args, load_state(), bin_dir / "kubectl"):
        log("already up")
        cmd_status(args)
        return
    pins, sources = build_engines(eng, args.no_build)
    if started is not None:
        started["ours"] = True
    state = new_state(eng)
    kubectl_args, apply = kubectl_commands(bin_dir)

    start_kube(bin_dir, pins, Path(sources["KWOK_DIR"]), state)
    create_nodes(kubectl_args)
    install_crds(kubectl_args, apply, sources)
    start_kueue(bin_dir, Path(sources["KUEUE_DIR"]), apply, state)
    start_argo(bin_dir, kubectl_args, state)
    start_argo_server(bin_dir, state)
    create_flavors(apply)
    wait_nodes_ready(kubectl_args)

    mark_complete(state, t0)
    cmd_status(args)


def cmd_up_or_clean(args: argparse.Namespace) -> None:
    """`up`, and on failure `down` (no process left behind) unless --keep-on-failure."""
    started = {"ours": False}
    try:
        cmd_up(args, started)
    except (Exception, SystemExit) as e:
        if isinstance(e, SystemExit) and not e.code:
            raise
        if started["ours"] and not args.keep_on_failure:
            for f in sorted((STATE / "logs").glob("*.log")) if (STATE / "logs").exists() else []:
                tail = f.read_text(errors="replace").splitlines()[-15:]
                sys.stderr.write(f"--- last lines of {f}\n" + "\n".join(tail) + "\n")
            log("up failed: stopping what was started")
            cmd_down(args)
        raise


def cmd_down(args: argparse.Namespace) -> None:
    state = load_state()
    if (STATE / "node.json").exists():  # the real node (hack/node.py) first: it talks to the API
        run(sys.executable, HACK / "node.py", "down", check=False)
    for name in ("provisioner", "trainer", "jobset", "argo-server", "workflow-controller", "kueue"):
        pid = ((state or {}).get("pids") or {}).get(name)
        if pid:
            stop_pid(int(pid), name)
    try:
        eng = Path(state["engines"]) if state else engines_dir()
    except (subprocess.CalledProcessError, KeyError):
        eng = engines_dir()
    kwokctl = eng / "bin" / "kwokctl"
    leftover = kwok_pids()
    if kwok_cluster_dir().exists() and kwokctl.exists():
        log("deleting the kwokctl cluster")
        run(
            kwokctl,
            "delete",
            "cluster",
            "--name",
            CLUSTER_NAME,
            "--kubeconfig",
            STATE / "kwokctl-merged.kubeconfig",
            env={"KWOK_WORKDIR": str(kwok_workdir())},
            check=False,
            capture=True,
        )
    for name, pid in leftover.items():  # kwokctl kills them; make sure, by id
        stop_pid(pid, name, grace=5)
    bad = {n: p for n, p in all_pids(state).items() if pid_alive(p)}
    bad.update({n: p for n, p in leftover.items() if pid_alive(p)})
    if STATE.exists():
        if (STATE / "logs").exists() or (kwok_cluster_dir() / "logs").exists():
            shutil.rmtree(LAST_LOGS, ignore_errors=True)
            LAST_LOGS.mkdir(parents=True, exist_ok=True)
            for src in (STATE / "logs", kwok_cluster_dir() / "logs"):
                if src.exists():
                    for f in src.glob("*.log"):
                        shutil.copy(f, LAST_LOGS / f.name)
        shutil.rmtree(STATE, ignore_errors=True)
    if bad:
        die(f"processes still alive after down: {bad}")
    log(f"down (logs of the last run kept in {LAST_LOGS})")


def cmd_status(args: argparse.Namespace) -> None:
    state = load_state()
    if not state:
        print(f"cluster: down (no state in {STATE})")
        if getattr(args, "strict", False):
            sys.exit(1)
        return
    pids = all_pids(state)
    print(f"cluster: state dir   {STATE}")
    print(f"cluster: kubeconfig  {state['kubeconfig']}")
    print(f"cluster: engines     {state['engines']}")
    for name, pid in sorted(pids.items()):
        print(f"cluster: {'running' if pid_alive(pid) else 'DEAD   '}  {name:<26} pid {pid}")
    for name, port in sorted(state.get("ports", {}).items()):
        print(f"cluster: port {port:<6} {name}")
    for name, value in sorted(state.get("settings", {}).items()):
        print(f"cluster: setting {name}={value}")
    kubectl = Path(state["engines"]) / "bin" / "kubectl"
    ready = kubectl.exists() and KUBECONFIG.exists() and apiserver_ready(kubectl)
    print(f"cluster: kube-apiserver {'ready' if ready else 'NOT ready'}")
    if getattr(args, "strict", False) and not (ready and all(pid_alive(p) for p in pids.values())):
        sys.exit(1)


def cmd_render(args: argparse.Namespace) -> None:
    """Write the shared pieces for another cluster (hack/kind-up.sh): nodes, kwok Stages,
    ResourceFlavors and an in-cluster Kueue configuration, the same ones `up` uses here."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = read_env(engines_dir() / "sources.env")
    (out / "nodes.yaml").write_text(yaml.safe_dump_all(node_manifests()))
    stages = kwokctl_config(Path("/unused"), versions(), Path(sources["KWOK_DIR"]), Path("/unused"))
    (out / "stages.yaml").write_text("---\n".join(stages.split("---\n")[1:]))
    (out / "flavors.yaml").write_text(yaml.safe_dump_all(flavor_manifests()))
    cfg = in_cluster_kueue_config()
    (out / "kueue-config.yaml").write_text(yaml.safe_dump(cfg))
    log(f"wrote nodes.yaml stages.yaml flavors.yaml kueue-config.yaml to {out}")


def cmd_env(args: argparse.Namespace) -> None:
    print(f"export TRAINWEAVE_KUBECONFIG={KUBECONFIG}")
    print(f"export KUBECONFIG={KUBECONFIG}")
    print(f"export PATH={engines_dir() / 'bin'}:$PATH")


def wait_child(argv: Sequence[str | Path], quiet: bool = False, **kw: Any) -> int:
    """Run argv to its end and return its code. Ctrl-C reaches the child too (same process
    group), so it is not a reason to stop waiting: the child decides, and what follows (down)
    still runs, as it did when make's shell ran these steps."""
    out = subprocess.DEVNULL if quiet else None
    with subprocess.Popen([str(a) for a in argv], stdout=out, stderr=out, **kw) as p:
        while True:
            try:
                return p.wait()
            except KeyboardInterrupt:
                continue


def cmd_with(args: argparse.Namespace) -> None:
    """`with -- CMD ARGS...`: CMD with TRAINWEAVE_KUBECONFIG exported (as `env` prints it), on
    the running cluster or on one started for it and stopped after (hack/cluster_with.py). Exits
    with CMD's code; 1 if the down after it fails; up's code if up fails."""
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        die("with: no command given (hack/cluster.py with -- CMD ARGS...)")
    me = [sys.executable, str(Path(__file__).resolve())]
    env = {**os.environ, "TRAINWEAVE_KUBECONFIG": str(KUBECONFIG)}
    sys.exit(
        run_with_cluster(
            command,
            is_up=lambda: wait_child([*me, "status", "--strict"], quiet=True) == 0,
            up=lambda: wait_child([*me, "up"]),
            down=lambda: wait_child([*me, "down"]),
            run=lambda cmd: wait_child(cmd, env=env),
            log=log,
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="build if needed, start everything, print status")
    up.add_argument("--no-build", action="store_true", help="do not run hack/build.sh")
    up.add_argument("--keep-on-failure", action="store_true", help="leave processes for debugging")
    sub.add_parser("down", help="stop every process started by up, delete the state")
    st = sub.add_parser("status", help="what runs: pids, ports, kubeconfig")
    st.add_argument("--strict", action="store_true", help="exit 1 unless everything runs")
    sub.add_parser("env", help="print shell exports for the kubeconfig and binaries")
    us = sub.add_parser(
        "upstream",
        help="switch Kubeflow Trainer + JobSet (and Kueue's TrainJob integration) on or off",
    )
    us.add_argument("state", choices=["on", "off"])
    rs = sub.add_parser("restart", help="crash an engine (SIGKILL) and start it again")
    rs.add_argument("name", choices=restart.ENGINES)
    rs.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="start it again with this environment variable too (kept for later restarts; "
        "not for kube-apiserver), e.g. workflow-controller --env INFORMER_WRITE_BACK=true",
    )
    rs.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="--FLAG=VALUE",
        help="start it again with this command-line flag (replacing the same flag; kept for "
        "later restarts; not for kube-apiserver), e.g. workflow-controller --arg=--qps=50",
    )
    kueue_config.add_parser(sub)
    provisioning.add_parser(sub)
    rd = sub.add_parser("render", help="write nodes/Stages/flavors/Kueue config for kind-up")
    rd.add_argument("--out", required=True)
    wi = sub.add_parser(
        "with",
        help="run a command with TRAINWEAVE_KUBECONFIG set, starting the cluster if none runs "
        "and stopping it after if it did: with -- CMD ARGS...",
    )
    wi.add_argument("command", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    args = ap.parse_args()
    commands = {"up": cmd_up_or_clean, "down": cmd_down, "status": cmd_status, "env": cmd_env}
    commands["render"] = cmd_render
    commands["upstream"] = upstream.cmd_upstream
    commands["with"] = cmd_with
    commands["restart"] = restart.cmd_restart
    commands["kueue-config"] = kueue_config.cmd_kueue_config
    commands["provisioner"] = provisioning.cmd_provisioner
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
