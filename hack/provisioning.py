"""`hack/cluster.py provisioner on [-- FLAGS] | off`: the ProvisioningRequest stand-in
(hack/provisioner.py, docs/provisioning.md) as a process of the local control plane, for the
e2e tier (tests/e2e/test_provisioning.py) and the benchmarks.

``on``: the ProvisioningRequest CRD made sure of first (`up` installs it; a cluster started
before that gets it now, and Kueue restarted, since Kueue sets its provisioning controller up
only when the CRD is served at its start: cmd/kueue/main.go:512-526); then hack/provisioner.py
started with FLAGS (its own, e.g. ``--scale 0.1 --booking 100 --label trainweave.test/pool=x``)
on this cluster's kubeconfig, its pid in the cluster state (``pids.provisioner``, stopped by
`down`), waited for until it watches. A provisioner already running is stopped first, so ``on``
again restarts it with the new flags. ``off``: the process stopped and the nodes it made deleted
(label ``provisioner.trainweave.test/node``), so the next test sees the cluster `up` made.
Nothing changes while it is off. Processes, state and logs are hack/common.py's.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import common
import control_plane
from engine_config import KUEUE_FRAMEWORKS, KUEUE_UPSTREAM_FRAMEWORKS

NAME = "provisioner"
CRD = "provisioningrequests.autoscaling.x-k8s.io"
WATCHING = "provisioner: watching ProvisioningRequests"  # hack/provisioner.py's first line


def argv_of(flags: list[str]) -> list[str]:
    """hack/provisioner.py's command line on this cluster (``--`` before the flags dropped)."""
    flags = flags[1:] if flags[:1] == ["--"] else flags
    script = common.HACK / "provisioner.py"
    return [sys.executable, str(script), "--kubeconfig", str(common.KUBECONFIG), *flags]


def _served(kubectl_args: list[str]) -> bool:
    return common.run(*kubectl_args, "get", "crd", CRD, check=False, capture=True).returncode == 0


def ensure_crd(state: dict[str, Any]) -> None:
    """The ProvisioningRequest CRD served, and Kueue started after it (restarted when the CRD
    was installed now)."""
    eng = Path(state["engines"])
    kubectl_args, apply = common.kubectl_commands(eng / "bin")
    if _served(kubectl_args):
        return
    sources = common.read_env(eng / "sources.env")
    common.log("installing the ProvisioningRequest CRD, then restarting Kueue")
    control_plane.apply_crds(kubectl_args, apply, [control_plane.provisioning_crd(sources)])
    common.stop_pid(int(state["pids"]["kueue"]), "kueue")
    frameworks = KUEUE_UPSTREAM_FRAMEWORKS if state.get("upstream") else KUEUE_FRAMEWORKS
    control_plane.start_kueue(eng / "bin", Path(sources["KUEUE_DIR"]), apply, state, frameworks)
    common.save_state(state)


def stop(state: dict[str, Any]) -> None:
    """The running provisioner stopped (by its pid), if there is one."""
    pid = state["pids"].pop(NAME, None)
    if pid:
        common.stop_pid(int(pid), NAME)
    state.pop(NAME, None)
    common.save_state(state)


def delete_nodes(state: dict[str, Any]) -> None:
    """Every node the provisioner made (its label), not waited for."""
    from provisioner_wire import NODE_LABEL

    kubectl_args, _ = common.kubectl_commands(Path(state["engines"]) / "bin")
    common.run(
        *kubectl_args, "delete", "nodes", "-l", f"{NODE_LABEL}=true",
        "--ignore-not-found", "--wait=false", capture=True,
    )  # fmt: skip


def start(state: dict[str, Any], flags: list[str]) -> None:
    """hack/provisioner.py started with ``flags``, waited for until it says it watches."""
    logf = common.STATE / "logs" / f"{NAME}.log"
    offset = logf.stat().st_size if logf.exists() else 0
    pid = common.start_process(NAME, argv_of(flags), cwd=common.STATE)
    state["pids"][NAME] = pid
    state[NAME] = argv_of(flags)[4:]
    common.save_state(state)

    def watching() -> bool:
        if not common.pid_alive(pid):
            tail = logf.read_text(errors="replace")[offset:][-2000:]
            common.die(f"the provisioner (pid {pid}) exited:\n{tail}")
        with open(logf, "rb") as f:
            f.seek(offset)
            return WATCHING in f.read().decode(errors="replace")

    common.wait_for("the provisioner watching", watching, 60)


def cmd_provisioner(args: argparse.Namespace) -> None:
    """``provisioner on [-- FLAGS] | off`` (module docstring)."""
    state = common.load_state()
    if not state or not state.get("complete"):
        common.die("the cluster is not up: `make cluster-up` first")
    stop(state)
    if args.state == "on":
        ensure_crd(state)
        start(state, list(args.flags))
        common.log(f"provisioner on: {' '.join(state[NAME]) or '(its defaults)'}")
    else:
        delete_nodes(state)
        common.log("provisioner off")


def add_parser(sub: Any) -> None:
    """The ``provisioner`` subcommand."""
    pr = sub.add_parser(
        "provisioner",
        help="run hack/provisioner.py (the ProvisioningRequest stand-in) as a cluster process, "
        "or stop it and delete the nodes it made: provisioner on -- --scale 0.1 ... | off",
    )
    pr.add_argument("state", choices=["on", "off"])
    pr.add_argument(
        "flags", nargs=argparse.REMAINDER, help="-- hack/provisioner.py's flags (with on)"
    )
