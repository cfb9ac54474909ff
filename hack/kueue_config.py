"""`hack/cluster.py kueue-config --pods-ready-timeout 20s | --default`: Kueue restarted with a
short waitForPodsReady timeout (tests/e2e/test_pods_ready.py), or back to the default
(hack/engine_config.py WAIT_FOR_PODS_READY), waited for healthy both ways.

Only ``timeout`` and the requeuing backoff change; ``recoveryTimeout: 0s`` and
``blockAdmission: false`` stay (docs/local-control-plane.md). Field names are Kueue v0.19.2's
``apis/config/v1beta2/configuration_types.go`` (WaitForPodsReady, RequeuingStrategy). The
choice is kept in the cluster state (``kueue_pods_ready``), so a later Kueue start (``upstream
on|off``) keeps it until ``--default``. Like ``upstream``, Kueue is stopped and started again on
new ports: its webhooks refuse pods for the few seconds in between.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import common
import control_plane
from engine_config import KUEUE_FRAMEWORKS, WAIT_FOR_PODS_READY


def pods_ready(timeout: str, backoff_base_seconds: int) -> dict[str, Any]:
    """The default waitForPodsReady with another timeout and requeuing backoff base."""
    default: dict[str, Any] = dict(WAIT_FOR_PODS_READY)
    strategy = {**default["requeuingStrategy"], "backoffBaseSeconds": backoff_base_seconds}
    return {**default, "timeout": timeout, "requeuingStrategy": strategy}


def cmd_kueue_config(args: argparse.Namespace) -> None:
    """Restart Kueue with the asked waitForPodsReady (a no-op when it already runs with it)."""
    state = common.load_state()
    if not state or not state.get("complete"):
        common.die("the cluster is not up: `make cluster-up` first")
    if state.get("upstream"):
        common.die("upstream is on: `hack/cluster.py upstream off` first")
    wanted = None if args.default else pods_ready(args.pods_ready_timeout, args.backoff_base)
    if state.get("kueue_pods_ready") == wanted:
        common.log(f"kueue already runs with waitForPodsReady {wanted or 'default'}")
        return
    eng = Path(state["engines"])
    sources = common.read_env(eng / "sources.env")
    _, apply = common.kubectl_commands(eng / "bin")
    common.stop_pid(int(state["pids"]["kueue"]), "kueue")
    state["kueue_pods_ready"] = wanted
    common.save_state(state)
    control_plane.start_kueue(
        eng / "bin", Path(sources["KUEUE_DIR"]), apply, state, KUEUE_FRAMEWORKS
    )
    common.save_state(state)
    common.log(f"kueue restarted with waitForPodsReady {wanted or WAIT_FOR_PODS_READY}")


def add_parser(sub: Any) -> None:
    """The ``kueue-config`` subcommand."""
    kc = sub.add_parser(
        "kueue-config", help="restart Kueue with a short waitForPodsReady timeout, or the default"
    )
    which = kc.add_mutually_exclusive_group(required=True)
    which.add_argument("--pods-ready-timeout", metavar="DURATION", help="e.g. 20s")
    which.add_argument("--default", action="store_true", help="back to the default config")
    kc.add_argument(
        "--backoff-base",
        type=int,
        default=1,
        metavar="SECONDS",
        help="requeuingStrategy.backoffBaseSeconds with --pods-ready-timeout (default 1)",
    )
