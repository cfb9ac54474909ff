"""`hack/cluster.py upstream on|off`: the upstream phase of the local control plane, for the
dynamic oracle (tests/e2e/test_upstream.py) and benchmarks/admission.py.

``on``: Kueue restarted with its JobSet and TrainJob integrations, then the JobSet controller and
Kubeflow Trainer's controller manager with their webhooks (namespaces labelled
trainweave.test/upstream=true only). ``off``: all of that undone, Kueue back to its default
integrations. trainweave's controller must not run while upstream is on (docs/upstream.md,
docs/local-control-plane.md "The upstream phase"). Its processes, state and
certificates are hack/common.py's, its Kueue start hack/control_plane.py's.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import common
import control_plane
import yaml
from common import STATE, log, run
from engine_config import (
    KUEUE_FRAMEWORKS,
    KUEUE_UPSTREAM_FRAMEWORKS,
    jobset_config,
    trainer_config,
    url_webhooks,
)

CONTROLLERS = ("trainer", "jobset")
BINARIES = {"trainer": "trainer-controller-manager", "jobset": "jobset"}


def webhook_manifests(sources: dict[str, str]) -> dict[str, Path]:
    """Each upstream controller's generated webhook configuration, in its pinned module."""
    return {
        "trainer": Path(sources["TRAINER_DIR"]) / "manifests/base/webhook/manifests.yaml",
        "jobset": Path(sources["JOBSET_DIR"]) / "config/components/webhook/manifests.yaml",
    }


def stop_controllers(kubectl_args: list[str], state: dict[str, Any]) -> None:
    """Trainer and JobSet stopped (webhooks deleted first, so nothing calls a dead port), then
    Kueue: it is started again with the other phase's integrations."""
    for name in CONTROLLERS:
        if (STATE / name / "webhooks.yaml").exists():
            run(
                *kubectl_args,
                "delete",
                "--ignore-not-found",
                "-f",
                STATE / name / "webhooks.yaml",
                capture=True,
            )
        pid = state["pids"].pop(name, None)
        if pid:
            common.stop_pid(int(pid), name)
        for key in ("webhook", "health"):
            state["ports"].pop(f"{name}/{key}", None)
    common.stop_pid(int(state["pids"]["kueue"]), "kueue")
    common.save_state(state)


def start_controller(
    name: str, argv: list[str], manifest: Path, apply: list[str], state: dict[str, Any], **kw: Any
) -> None:
    """One upstream controller (its config file already written) waited for healthy; then its
    webhooks, pointed at its loopback port."""
    wport, hport, ca = kw["webhook_port"], kw["health_port"], kw["ca"]
    state["pids"][name] = common.start_process(name, argv, env=kw.get("env"), cwd=STATE / name)
    state["ports"].update({f"{name}/webhook": wport, f"{name}/health": hport})
    common.save_state(state)
    common.wait_for(
        f"{name} health", lambda: common.http_ok(f"http://127.0.0.1:{hport}/readyz"), 120
    )
    common.wait_for(f"{name} webhook TLS", lambda: common.tcp_open(wport), 60)
    hooks = STATE / name / "webhooks.yaml"
    hooks.write_text(yaml.safe_dump_all(url_webhooks(manifest, name, wport, ca)))
    run(*apply, "-f", hooks, capture=True)


def start_controllers(
    bin_dir: Path, sources: dict[str, str], apply: list[str], state: dict[str, Any]
) -> None:
    """JobSet, then Trainer, on free loopback ports with one openssl-made serving cert."""
    hooks = webhook_manifests(sources)
    cert_dir = STATE / "upstream-certs"
    serving = cert_dir / "k8s-webhook-server" / "serving-certs"
    ca = common.make_certs(serving)
    for name in ("jobset", "trainer"):
        (STATE / name).mkdir(exist_ok=True)
        wport, hport = common.free_port(), common.free_port()
        if name == "jobset":
            config = jobset_config(wport, hport, serving)
        else:
            config = trainer_config(wport, hport)
        (STATE / name / "config.yaml").write_text(yaml.safe_dump(config))
        argv = [str(bin_dir / BINARIES[name]), f"--config={STATE / name / 'config.yaml'}"]
        start_controller(
            name,
            argv,
            hooks[name],
            apply,
            state,
            webhook_port=wport,
            health_port=hport,
            ca=ca,
            # controller-runtime's default webhook certDir is $TMPDIR/k8s-webhook-server/...
            env={"TMPDIR": str(cert_dir), "KUBECONFIG": str(common.KUBECONFIG)},
        )


def cmd_upstream(args: argparse.Namespace) -> None:
    """``upstream on|off`` (module docstring); a no-op when already in that state."""
    state = common.load_state()
    if not state or not state.get("complete"):
        common.die("the cluster is not up: `make cluster-up` first")
    on = args.state == "on"
    if bool(state.get("upstream")) == on:
        log(f"upstream already {args.state}")
        return
    eng = Path(state["engines"])
    bin_dir = eng / "bin"
    if on:  # `up` builds the core engines only: Trainer and JobSet now (a no-op when built)
        common.run("bash", common.HACK / "build.sh", "trainer", "jobset")
    sources = common.read_env(eng / "sources.env")
    kubectl_args, apply = common.kubectl_commands(bin_dir)
    stop_controllers(kubectl_args, state)
    frameworks = KUEUE_UPSTREAM_FRAMEWORKS if on else KUEUE_FRAMEWORKS
    control_plane.start_kueue(bin_dir, Path(sources["KUEUE_DIR"]), apply, state, frameworks)
    if on:
        start_controllers(bin_dir, sources, apply, state)
    state["upstream"] = on
    common.save_state(state)
    log(f"upstream {args.state}")
