#!/usr/bin/env python3
"""What hack/multicluster.py runs inside one member's state dir (TRAINWEAVE_STATE_DIR set, so
common.STATE is the member's): ``_kueue --role manager|worker [--stop] [--if-down]
[--pods-ready TIMEOUT|default]`` (its Kueue stopped and started again with the TrainJob
integration, the manager's with ``multiKueue``) and ``_apiserver --stop|--start`` (its
kube-apiserver killed or started again as it ran)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import common
import control_plane
import engine_config
import kueue_config
import restart
from multicluster import MANAGER, MULTIKUEUE


def cmd_kueue(args: argparse.Namespace) -> None:
    """Kueue of this member stopped and started again with the TrainJob integration (and, on
    the manager, the multiKueue section), as hack/kueue_config.py restarts it."""
    state = common.load_state()
    if not state or not state.get("complete"):
        common.die(f"{common.STATE} is not up")
    eng = Path(state["engines"])
    sources = common.read_env(eng / "sources.env")
    _, apply = common.kubectl_commands(eng / "bin")
    if args.if_down and common.pid_alive(int(state["pids"]["kueue"])):
        return
    common.stop_pid(int(state["pids"]["kueue"]), "kueue")
    if args.stop:
        return
    if args.pods_ready:  # kept in the state: a later restart (``return``) keeps it
        default = args.pods_ready == "default"
        state["kueue_pods_ready"] = None if default else kueue_config.pods_ready(args.pods_ready, 5)
    extra = {"multiKueue": MULTIKUEUE} if args.role == MANAGER else None
    if extra:
        state["settings"] = {**state.get("settings", {}), "kueue multiKueue": MULTIKUEUE}
    frameworks = engine_config.KUEUE_UPSTREAM_FRAMEWORKS
    state["settings"] = {**state.get("settings", {}), "kueue frameworks": frameworks}
    control_plane.start_kueue(
        eng / "bin", Path(sources["KUEUE_DIR"]), apply, state, frameworks, extra
    )
    common.save_state(state)


# kwokctl's components that exit when kube-apiserver is gone for long (leader election lost)
DEPENDENTS = ("kube-controller-manager", "kube-scheduler")


def cmd_apiserver(args: argparse.Namespace) -> None:
    """``_apiserver --stop|--start`` in a member's state dir: its kube-apiserver killed, how it
    and DEPENDENTS ran kept (launch.json), or started again from that (and any dependent that
    exited meanwhile), waited for ready, kwokctl's pid files pointed at them (hack/restart.py's
    restart in two halves)."""
    state = common.load_state() or {}
    pids = common.kwok_cluster_dir() / "pids"
    saved = common.STATE / "launch.json"
    if args.stop:
        launches = {
            n: restart._launch_from_proc(int((pids / f"{n}.pid").read_text().strip()))
            for n in ("kube-apiserver", *DEPENDENTS)
        }
        saved.write_text(json.dumps(launches))
        pid = int((pids / "kube-apiserver.pid").read_text().strip())
        ports = [p for k, p in state.get("ports", {}).items() if k.startswith("kube-apiserver/")]
        restart._kill("kube-apiserver", pid, ports, group=False)
        return
    launches = json.loads(saved.read_text())
    kubectl_bin = Path(state["engines"]) / "bin" / "kubectl"
    for name, launch in launches.items():
        if common.pid_alive(int((pids / f"{name}.pid").read_text().strip())):
            continue
        new = common.start_process(name, launch["argv"], launch["env"], Path(launch["cwd"]))
        (pids / f"{name}.pid").write_text(str(new))
        if name == "kube-apiserver":
            common.wait_for(
                "kube-apiserver ready", lambda: common.apiserver_ready(kubectl_bin), 120
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    ap_ = sub.add_parser("_apiserver")
    way = ap_.add_mutually_exclusive_group(required=True)
    way.add_argument("--stop", action="store_true")
    way.add_argument("--start", action="store_true")
    kq = sub.add_parser("_kueue")
    kq.add_argument("--role", choices=[MANAGER, "worker"], required=True)
    kq.add_argument("--stop", action="store_true", help="only stop it")
    kq.add_argument("--if-down", action="store_true", help="only if it is not running")
    kq.add_argument("--pods-ready", default="", help="waitForPodsReady timeout, or default")
    args = ap.parse_args()
    {"_kueue": cmd_kueue, "_apiserver": cmd_apiserver}[args.cmd](args)


if __name__ == "__main__":
    main()
