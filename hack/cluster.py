#!/usr/bin/env python3
"""The e2e control plane on this machine, without Docker: up | down | status | env | with |
upstream | restart | kueue-config | render.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok are started by
`kwokctl --runtime binary` (loopback only, free ports, own PKI); the Kueue manager, Argo's
workflow-controller and `argo server` are started here, as plain processes with pid files. Every
binary comes from hack/build.sh, every CRD and webhook manifest from the same pinned Go modules
(hack/versions.env).

What the engines are given (nodes, kwok Stages, Kueue config, webhooks, flavors) is built in
hack/engine_config.py; `upstream on|off` (Trainer + JobSet) is in hack/upstream.py, `restart`
in hack/restart.py, `kueue-config` (another waitForPodsReady) in hack/kueue_config.py, and
whether `with -- CMD` (make e2e, bench-admission) starts and stops the cluster around CMD in
hack/cluster_with.py. State (kubeconfig, pids, logs, certs) lives in
$TRAINWEAVE_STATE_DIR, by default ${XDG_CACHE_HOME:-~/.cache}/trainweave/cluster.
docs/local-control-plane.md explains it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml
from engine_config import (
    KUEUE_FRAMEWORKS,
    NODE_COUNT,
    flavor_manifests,
    kueue_config,
    kueue_webhooks,
    kwokctl_config,
    node_manifests,
)

ROOT = Path(__file__).resolve().parent.parent
HACK = ROOT / "hack"

CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"
STATE = Path(os.environ.get("TRAINWEAVE_STATE_DIR") or CACHE / "cluster")
KUBECONFIG = STATE / "kubeconfig"
# A second state dir (TRAINWEAVE_STATE_DIR) gets its own kwokctl cluster name, so two can coexist.
CLUSTER_NAME = (
    "trainweave-e2e"
    if "TRAINWEAVE_STATE_DIR" not in os.environ
    else "trainweave-e2e-" + hashlib.sha256(str(STATE).encode()).hexdigest()[:8]
)
LAST_LOGS = CACHE / "cluster-last-logs"


def log(msg: str) -> None:
    print(f"cluster: {msg}", flush=True)


def die(msg: str) -> NoReturn:
    print(f"cluster: ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def read_env(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def engines_dir() -> Path:
    out = subprocess.run(
        ["bash", str(HACK / "build.sh"), "--print-dir"], check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip())


def run(
    *args: str | Path, check: bool = True, capture: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [str(a) for a in args]
    r = subprocess.run(argv, text=True, capture_output=capture, env={**os.environ, **(env or {})})
    if check and r.returncode != 0:
        if capture:
            sys.stderr.write(f"$ {' '.join(argv)[:300]}\n{r.stdout[-4000:]}{r.stderr[-4000:]}\n")
        raise subprocess.CalledProcessError(r.returncode, argv[:3])
    return r


def wait_for(what: str, fn: Any, timeout: float, interval: float = 0.5) -> Any:
    """Poll fn() until it returns a truthy value, with a deadline."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except Exception as e:
            last = e
        time.sleep(interval)
    die(f"timed out after {timeout:.0f}s waiting for {what} (last error: {last})")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours counts as dead
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_pid(pid: int, name: str, grace: float = 15.0) -> None:
    """SIGTERM one process we started (by id), then SIGKILL after a grace period."""
    if not pid_alive(pid):
        return
    log(f"stopping {name} (pid {pid})")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.2)
    log(f"{name} (pid {pid}) ignored SIGTERM; SIGKILL")
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


# ---------------------------------------------------------------------------------------------
# state


def state_file() -> Path:
    return STATE / "cluster.json"


def load_state() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(state_file().read_text())
        return data
    except (OSError, ValueError):
        return None


def save_state(state: dict[str, Any]) -> None:
    STATE.mkdir(parents=True, exist_ok=True)
    tmp = state_file().with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(state_file())


def kwok_workdir() -> Path:
    return STATE / "kwok"


def kwok_pids() -> dict[str, int]:
    out: dict[str, int] = {}
    pids = kwok_workdir() / "clusters" / CLUSTER_NAME / "pids"
    for f in sorted(pids.glob("*.pid")) if pids.is_dir() else []:
        try:
            out[f.stem] = int(f.read_text().strip())
        except ValueError:
            continue
    return out


def all_pids(state: dict[str, Any] | None) -> dict[str, int]:
    pids = kwok_pids()
    for name, pid in ((state or {}).get("pids") or {}).items():
        pids[name] = int(pid)
    return pids


def apiserver_ready(kubectl: Path) -> bool:
    r = run(
        kubectl, "--kubeconfig", KUBECONFIG, "get", "--raw", "/readyz", check=False, capture=True
    )
    return r.returncode == 0 and r.stdout.strip() == "ok"


# ---------------------------------------------------------------------------------------------
# pieces


def make_certs(cert_dir: Path) -> bytes:
    """A CA and a serving cert for 127.0.0.1/localhost (Kueue webhooks and its metrics server)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    ca_key, ca_crt = cert_dir / "ca.key", cert_dir / "ca.crt"
    key, csr, crt = cert_dir / "tls.key", cert_dir / "tls.csr", cert_dir / "tls.crt"
    ext = cert_dir / "ext.cnf"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
    )
    run(
        "openssl",
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "30",
        "-subj",
        "/CN=trainweave-e2e-ca",
        "-keyout",
        ca_key,
        "-out",
        ca_crt,
        capture=True,
    )
    run(
        "openssl",
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=127.0.0.1",
        "-keyout",
        key,
        "-out",
        csr,
        capture=True,
    )
    run(
        "openssl",
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca_crt,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-days",
        "30",
        "-extfile",
        ext,
        "-out",
        crt,
        capture=True,
    )
    return ca_crt.read_bytes()


def start_process(
    name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> int:
    logf = STATE / "logs" / f"{name}.log"
    logf.parent.mkdir(parents=True, exist_ok=True)
    with open(logf, "ab") as out:
        p = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            cwd=str(cwd or STATE),
            start_new_session=True,
        )
    (STATE / "pids").mkdir(exist_ok=True)
    (STATE / "pids" / f"{name}.pid").write_text(str(p.pid))
    launch = {"argv": argv, "env": env or {}, "cwd": str(cwd or STATE)}
    (STATE / "pids" / f"{name}.json").write_text(json.dumps(launch))  # for `restart`
    log(f"started {name} (pid {p.pid}), log {logf}")
    return p.pid


def http_ok(url: str) -> bool:
    """GET url answers 200 (plain http: the engines' health endpoints)."""
    with urllib.request.urlopen(url, timeout=2) as r:
        return bool(r.status == 200)


def tcp_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def kubectl_commands(bin_dir: Path) -> tuple[list[str], list[str]]:
    """``kubectl`` on this cluster's kubeconfig, and its server-side ``apply`` (field manager
    trainweave-e2e, conflicts forced)."""
    kubectl = [str(bin_dir / "kubectl"), "--kubeconfig", str(KUBECONFIG)]
    apply = [
        *kubectl,
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=trainweave-e2e",
    ]
    return kubectl, apply


def ready_nodes(kubectl_args: list[str]) -> int:
    out = run(*kubectl_args, "get", "nodes", "-o", "json", capture=True).stdout
    n = 0
    for node in json.loads(out)["items"]:
        for c in node.get("status", {}).get("conditions") or []:
            if c["type"] == "Ready" and c["status"] == "True":
                n += 1
    return n


def kueue_wrap(argv: list[str], cert_dir: Path, kdir: Path) -> list[str]:
    """Kueue v0.19.2 with internalCertManagement off always loads its metrics serving cert from
    the hard-wired /etc/kueue/metrics/certs (cmd/kueue/main.go), even with metrics off. Rather than
    write to /etc, run it in a private mount namespace where an overlay on /etc adds that folder."""
    fixed = Path("/etc/kueue/metrics/certs")
    if (fixed / "tls.crt").exists() and (fixed / "tls.key").exists():
        return argv
    if not shutil.which("unshare"):
        die("Kueue needs /etc/kueue/metrics/certs/tls.{crt,key}; util-linux `unshare` is missing")
    upper, work = kdir / "etc-upper", kdir / "etc-work"
    for d in (upper / "kueue/metrics/certs", work):
        d.mkdir(parents=True, exist_ok=True)
    shutil.copy(cert_dir / "tls.crt", upper / "kueue/metrics/certs/tls.crt")
    shutil.copy(cert_dir / "tls.key", upper / "kueue/metrics/certs/tls.key")
    script = (
        f'mount -t overlay overlay -o "lowerdir=/etc,upperdir={upper},workdir={work}" /etc '
        '&& exec "$@"'
    )
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return [
        "unshare",
        *userns,
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        *argv,
    ]


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


def start_kube(
    bin_dir: Path, versions: dict[str, str], kwok_dir: Path, state: dict[str, Any]
) -> None:
    """etcd + kube-apiserver + kcm + scheduler + kwok, by kwokctl on loopback; writes the
    kubeconfig, waits for /readyz and records the components' ports."""
    kenv = {
        "KWOK_WORKDIR": str(kwok_workdir()),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    cfg = STATE / "kwokctl.yaml"
    pki = kwok_workdir() / "clusters" / CLUSTER_NAME / "pki"
    cfg.write_text(kwokctl_config(bin_dir, versions, kwok_dir, pki))
    log("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (kwokctl)")
    run(
        bin_dir / "kwokctl",
        "create",
        "cluster",
        "--name",
        CLUSTER_NAME,
        "--config",
        cfg,
        "--kubeconfig",
        STATE / "kwokctl-merged.kubeconfig",
        "--wait",
        "2m",
        env=kenv,
        capture=True,
    )
    kc = run(
        bin_dir / "kwokctl", "get", "kubeconfig", "--name", CLUSTER_NAME, env=kenv, capture=True
    )
    KUBECONFIG.write_text(kc.stdout)
    KUBECONFIG.chmod(0o600)
    wait_for("kube-apiserver /readyz", lambda: apiserver_ready(bin_dir / "kubectl"), 120)
    kwok_cfg = (kwok_workdir() / "clusters" / CLUSTER_NAME / "kwok.yaml").read_text()
    comps = next(
        d for d in yaml.safe_load_all(kwok_cfg) if d and d.get("kind") == "KwokctlConfiguration"
    )
    for c in comps.get("components") or []:
        for p in c.get("ports") or []:
            if p.get("hostPort") or p.get("port"):
                state["ports"][f"{c['name']}/{p.get('name', 'port')}"] = (
                    p.get("hostPort") or p["port"]
                )
    save_state(state)


def create_nodes(kubectl_args: list[str]) -> None:
    """The fake nodes (engine_config.node_manifests), kept Ready by kwok."""
    nodes = STATE / "nodes.yaml"
    nodes.write_text(yaml.safe_dump_all(node_manifests()))
    run(*kubectl_args, "create", "-f", nodes, capture=True)


def install_crds(kubectl_args: list[str], apply: list[str], sources: dict[str, str]) -> None:
    """CRDs from the pinned modules, server-side applied (Argo's Workflow CRD is 2.8 MB) and
    waited for Established; then the kueue-system and argo namespaces."""
    kueue_dir, argo_dir = Path(sources["KUEUE_DIR"]), Path(sources["ARGO_DIR"])
    trainer_dir, jobset_dir = Path(sources["TRAINER_DIR"]), Path(sources["JOBSET_DIR"])
    crds = sorted((kueue_dir / "config/components/crd/bases").glob("*.yaml"))
    crds += sorted((argo_dir / "manifests/base/crds/full").glob("argoproj.io_*.yaml"))
    crds += sorted((trainer_dir / "manifests/base/crds").glob("trainer.kubeflow.org_*.yaml"))
    crds += sorted((jobset_dir / "config/components/crd/bases").glob("jobset.x-k8s.io_*.yaml"))
    log(f"installing {len(crds)} CRDs")
    run(*apply, *[a for f in crds for a in ("-f", str(f))], capture=True)
    run(
        *kubectl_args,
        "wait",
        "--for=condition=Established",
        "--timeout=120s",
        *[f"crd/{yaml.safe_load(f.read_text())['metadata']['name']}" for f in crds],
        capture=True,
    )
    run(*kubectl_args, "create", "namespace", "kueue-system", capture=True)
    run(*kubectl_args, "create", "namespace", "argo", capture=True)


def start_kueue(
    bin_dir: Path,
    kueue_dir: Path,
    apply: list[str],
    state: dict[str, Any],
    frameworks: list[str] = KUEUE_FRAMEWORKS,
) -> None:
    """The Kueue manager with its webhooks on https://127.0.0.1:<free port> (own CA), waited for
    healthy; then its webhook configurations pointing at that URL. waitForPodsReady is the default
    unless state["kueue_pods_ready"] says otherwise (hack/kueue_config.py)."""
    kdir = STATE / "kueue"
    cert_dir = kdir / "certs"
    ca = make_certs(cert_dir)
    wport, hport = free_port(), free_port()
    config = kueue_config(wport, hport, cert_dir, frameworks, state.get("kueue_pods_ready"))
    (kdir / "config.yaml").write_text(yaml.safe_dump(config))
    state["ports"].update({"kueue/webhook": wport, "kueue/health": hport})
    kueue_argv = [
        str(bin_dir / "kueue"),
        f"--config={kdir / 'config.yaml'}",
        f"--kubeconfig={KUBECONFIG}",
        "--zap-log-level=info",
    ]
    state["pids"]["kueue"] = start_process(
        "kueue", kueue_wrap(kueue_argv, cert_dir, kdir), cwd=kdir
    )
    save_state(state)
    wait_for("Kueue health", lambda: http_ok(f"http://127.0.0.1:{hport}/readyz"), 120)
    wait_for("Kueue webhook TLS", lambda: tcp_open(wport), 60)
    webhooks = kdir / "webhooks.yaml"
    webhooks.write_text(yaml.safe_dump_all(kueue_webhooks(kueue_dir, wport, ca)))
    run(*apply, "-f", webhooks, capture=True)


# Argo processes a Workflow at most once per DEFAULT_REQUEUE_TIME (default 10s; every pod event
# goes through AddRateLimited on a fixed-interval limiter: argo-workflows
# workflow/controller/rate_limiters.go, controller.go enqueueWfFromPodLabel), so each step
# transition waits up to that long. Argo's own comment suggests as low as 2s for workflows of
# short steps; the e2e tier's steps run for seconds, so it uses 2s (docs/admins.md).
ARGO_REQUEUE_TIME = "2s"


def start_argo(bin_dir: Path, kubectl_args: list[str], state: dict[str, Any]) -> None:
    """Argo's workflow-controller (namespace argo, no leader election) and its ConfigMap, waited
    for healthy."""
    # one-line values are joined as `key: value`, so a nested value needs a trailing newline
    # (argo-workflows config/controller.go parseConfigMap)
    argo_cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "workflow-controller-configmap", "namespace": "argo"},
        "data": {"metricsConfig": "enabled: false\n", "telemetryConfig": "enabled: false\n"},
    }
    (STATE / "argo-configmap.yaml").write_text(yaml.safe_dump(argo_cm))
    run(*kubectl_args, "create", "-f", STATE / "argo-configmap.yaml", capture=True)
    adir = STATE / "argo"
    adir.mkdir(exist_ok=True)
    state["pids"]["workflow-controller"] = start_process(
        "workflow-controller",
        [
            str(bin_dir / "workflow-controller"),
            f"--kubeconfig={KUBECONFIG}",
            "--namespace=argo",
            "--configmap=workflow-controller-configmap",
            "--loglevel=info",
        ],
        env={"LEADER_ELECTION_DISABLE": "true", "DEFAULT_REQUEUE_TIME": ARGO_REQUEUE_TIME},
        cwd=adir,
    )
    state["settings"] = {
        **state.get("settings", {}),
        "argo DEFAULT_REQUEUE_TIME": ARGO_REQUEUE_TIME,
    }
    state["ports"]["workflow-controller/pprof (all interfaces, upstream hard-wired)"] = 6060
    save_state(state)
    wait_for(
        "Argo workflow-controller /healthz",
        lambda: http_ok("http://127.0.0.1:6060/healthz"),
        120,
    )


def start_argo_server(bin_dir: Path, state: dict[str, Any]) -> None:
    """`argo server` (the Argo CLI of the same module) for Hera's WorkflowsService, plain http on a
    free port, waited for ready (GET / as upstream's readinessProbe). It listens on all interfaces
    (server/apiserver/argoserver.go: `address := fmt.Sprintf(":%d", port)`, no bind flag), so
    `--auth-mode=client`: every API call needs a Kubernetes bearer token and runs with its rights."""
    port = free_port()
    state["pids"]["argo-server"] = start_process(
        "argo-server",
        [
            str(bin_dir / "argo"),
            "server",
            f"--kubeconfig={KUBECONFIG}",
            "--namespace=argo",
            "--configmap=workflow-controller-configmap",
            f"--port={port}",
            "--secure=false",
            "--auth-mode=client",
            "--loglevel=info",
        ],
        # client mode builds each caller's REST config from the default loading rules, not from
        # --kubeconfig (util/kubeconfig/kubeconfig.go DefaultRestConfig): host and CA from here
        env={"KUBECONFIG": str(KUBECONFIG)},
        cwd=STATE / "argo",
    )
    state["ports"]["argo-server (all interfaces, upstream hard-wired; auth-mode=client)"] = port
    state["argo_server"] = f"http://127.0.0.1:{port}"
    save_state(state)
    wait_for("argo server ready", lambda: http_ok(f"http://127.0.0.1:{port}/"), 120)


def create_flavors(apply: list[str]) -> None:
    """The cluster-wide Kueue objects shared by the tests: a ResourceFlavor per node pool,
    retried until Kueue's webhooks serve."""
    flavors = STATE / "kueue" / "flavors.yaml"
    flavors.write_text(yaml.safe_dump_all(flavor_manifests()))
    wait_for(
        "ResourceFlavors accepted (Kueue webhooks serving)",
        lambda: run(*apply, "-f", flavors, check=False, capture=True).returncode == 0,
        60,
        1,
    )


def wait_nodes_ready(kubectl_args: list[str]) -> None:
    """Until all NODE_COUNT fake nodes are Ready."""
    wait_for(
        f"{NODE_COUNT} Ready nodes",
        lambda: ready_nodes(kubectl_args) == NODE_COUNT,
        120,
    )


def build_engines(eng: Path, no_build: bool) -> tuple[dict[str, str], dict[str, str]]:
    """hack/build.sh (a no-op when built; skipped with --no-build), then the pinned versions
    (hack/versions.env) and the module folders holding CRDs and manifests (sources.env)."""
    if not no_build:
        run("bash", HACK / "build.sh")
    return read_env(HACK / "versions.env"), read_env(eng / "sources.env")


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
    versions, sources = build_engines(eng, args.no_build)
    if started is not None:
        started["ours"] = True
    state = new_state(eng)
    kubectl_args, apply = kubectl_commands(bin_dir)

    start_kube(bin_dir, versions, Path(sources["KWOK_DIR"]), state)
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
    for name in ("trainer", "jobset", "argo-server", "workflow-controller", "kueue"):
        pid = ((state or {}).get("pids") or {}).get(name)
        if pid:
            stop_pid(int(pid), name)
    try:
        eng = Path(state["engines"]) if state else engines_dir()
    except (subprocess.CalledProcessError, KeyError):
        eng = engines_dir()
    kwokctl = eng / "bin" / "kwokctl"
    leftover = kwok_pids()
    if (kwok_workdir() / "clusters" / CLUSTER_NAME).exists() and kwokctl.exists():
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
        if (STATE / "logs").exists() or (
            kwok_workdir() / "clusters" / CLUSTER_NAME / "logs"
        ).exists():
            shutil.rmtree(LAST_LOGS, ignore_errors=True)
            LAST_LOGS.mkdir(parents=True, exist_ok=True)
            for src in (STATE / "logs", kwok_workdir() / "clusters" / CLUSTER_NAME / "logs"):
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
    stages = kwokctl_config(
        Path("/unused"), read_env(HACK / "versions.env"), Path(sources["KWOK_DIR"]), Path("/unused")
    )
    (out / "stages.yaml").write_text("---\n".join(stages.split("---\n")[1:]))
    (out / "flavors.yaml").write_text(yaml.safe_dump_all(flavor_manifests()))
    cfg = kueue_config(9443, 8081, Path("/tmp/k8s-webhook-server/serving-certs"))
    cfg["health"] = {"healthProbeBindAddress": ":8081"}
    cfg["metrics"] = {"bindAddress": ":8443"}
    cfg["webhook"] = {"port": 9443}
    cfg["leaderElection"] = {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    cfg["internalCertManagement"] = {"enable": True}
    del cfg["featureGates"]
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
    from cluster_with import run_with_cluster

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
    import kueue_config
    import restart
    import upstream

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
    kueue_config.add_parser(sub)
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
    commands[args.cmd](args)


if __name__ == "__main__":
    main()
