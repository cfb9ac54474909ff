"""`hack/cluster.py restart NAME [--env K=V] [--arg=--FLAG=V]`: crash one engine of the local control
plane (SIGKILL) and start it again exactly as it ran (plus ``--env`` and ``--arg``, kept for later
restarts), waited for
healthy: the chaos tests' fault (docs/reliability.md) and the benchmarks' engine-setting A/B.

Kueue, Argo's workflow-controller, Trainer and JobSet are started by common.start_process,
which keeps how (pids/<name>.json). kube-apiserver is started by kwokctl: its command line, environment and
folder are read from /proc before the kill, and kwokctl's pid file is pointed at the new process
so `down` still stops it. A kube-apiserver restart breaks every watch: clients resume with their
last resourceVersion and relist on 410 Gone.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import common

ENGINES = ["kueue", "workflow-controller", "trainer", "jobset", "kube-apiserver"]
KWOKCTL_STARTED = {"kube-apiserver"}


def health_url(name: str, state: dict[str, Any]) -> str:
    """Where `up` waits for ``name`` to be healthy."""
    if name == "workflow-controller":
        return "http://127.0.0.1:6060/healthz"
    return f"http://127.0.0.1:{state['ports'][f'{name}/health']}/readyz"


def _launch_from_proc(pid: int) -> dict[str, Any]:
    """argv, environment and folder of a running process, to start it again the same way."""
    argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    env = dict(
        e.decode().split("=", 1)
        for e in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if b"=" in e
    )
    return {"argv": argv, "env": env, "cwd": os.readlink(f"/proc/{pid}/cwd")}


def _kill(name: str, pid: int, ports: list[int], group: bool) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL) if group else os.kill(pid, signal.SIGKILL)
    common.wait_for(f"{name} (pid {pid}) gone", lambda: not common.pid_alive(pid), 30)
    # its listening ports too: the new process binds the same ones (a run saw Kueue's health
    # port still taken when the old pid already read as gone)
    common.wait_for(
        f"{name}'s ports {ports} free", lambda: not any(common.tcp_open(p) for p in ports), 30
    )


def with_flags(argv: list[str], flags: dict[str, str]) -> list[str]:
    """``argv`` with each ``--FLAG=VALUE`` of ``flags`` in place of the same flag's (``--FLAG=..``
    or ``--FLAG ..``), else appended."""
    out: list[str] = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a.split("=", 1)[0] in flags:
            skip = "=" not in a and i + 1 < len(argv) and not argv[i + 1].startswith("-")
            continue
        out.append(a)
    return out + [f"{k}={v}" for k, v in flags.items()]


def cmd_restart(args: argparse.Namespace) -> None:
    state = common.load_state()
    name: str = args.name
    if not state:
        common.die("the local control plane is down")
    ports = [port for key, port in state.get("ports", {}).items() if key.startswith(f"{name}/")]
    extra = dict(kv.split("=", 1) for kv in args.env)
    flags = dict(flag.split("=", 1) for flag in args.arg)
    if any(not f.startswith("--") for f in flags):
        common.die(f"--arg takes --FLAG=VALUE, got {args.arg}")
    if name in KWOKCTL_STARTED:
        if extra or flags:
            common.die(f"--env and --arg are for the engines trainweave starts, not {name}")
        _restart_kwokctl_component(name, state, ports)
        return
    if name not in state.get("pids", {}):
        common.die(f"{name} is not running under this cluster")
    pid = int(state["pids"][name])
    _kill(name, pid, [6060] if name == "workflow-controller" else ports, group=True)
    launch = json.loads((common.STATE / "pids" / f"{name}.json").read_text())
    launch["env"] = {**launch["env"], **extra}
    launch["argv"] = with_flags(launch["argv"], flags)
    # the benchmarks print these settings (an A/B of an engine setting names what it ran with)
    state["settings"] = {
        **state.get("settings", {}),
        **{f"{name} {k}": v for k, v in {**extra, **flags}.items()},
    }
    url = health_url(name, state)
    for _ in range(3):  # a port may still be in the kernel's hands: start again if it exits
        state["pids"][name] = common.start_process(
            name, launch["argv"], launch["env"], Path(launch["cwd"])
        )
        common.save_state(state)
        new = int(state["pids"][name])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and common.pid_alive(new):
            with contextlib.suppress(OSError):
                if common.http_ok(url):
                    return
            time.sleep(0.5)
        common.log(f"{name} (pid {new}) did not become healthy; starting it again")
    common.die(f"{name} did not come back healthy after a restart")


def _restart_kwokctl_component(name: str, state: dict[str, Any], ports: list[int]) -> None:
    pid_file = common.kwok_cluster_dir() / "pids" / f"{name}.pid"
    pid = int(pid_file.read_text().strip())
    launch = _launch_from_proc(pid)
    _kill(name, pid, ports, group=False)
    kubectl = Path(state["engines"]) / "bin" / "kubectl"
    for _ in range(3):
        new = common.start_process(name, launch["argv"], launch["env"], Path(launch["cwd"]))
        pid_file.write_text(str(new))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and common.pid_alive(new):
            if common.apiserver_ready(kubectl):
                return
            time.sleep(0.5)
        common.log(f"{name} (pid {new}) did not become ready; starting it again")
    common.die(f"{name} did not come back ready after a restart")
