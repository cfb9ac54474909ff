"""The local control plane's processes, one function per engine as `hack/cluster.py up` starts
them: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok by `kwokctl
--runtime binary`; the fake nodes and the pinned CRDs (the ProvisioningRequest one before Kueue
starts); the Kueue manager (also restarted by
upstream.py and kueue_config.py), Argo's workflow-controller and `argo server` as plain
processes with pid files; the ResourceFlavors. What each is given is built in engine_config.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import yaml
from common import (
    CLUSTER_NAME,
    KUBECONFIG,
    STATE,
    apiserver_ready,
    die,
    free_port,
    go_module,
    http_ok,
    kwok_cluster_dir,
    kwok_workdir,
    log,
    make_certs,
    run,
    save_state,
    start_process,
    tcp_open,
    wait_for,
)
from engine_config import (
    AUTOSCALER_APIS,
    KUEUE_FRAMEWORKS,
    NODE_COUNT,
    flavor_manifests,
    kueue_config,
    kueue_webhooks,
    kwokctl_config,
    node_manifests,
)


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
    pki = kwok_cluster_dir() / "pki"
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
    kwok_cfg = (kwok_cluster_dir() / "kwok.yaml").read_text()
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


def provisioning_crd(sources: dict[str, str]) -> Path:
    """The ProvisioningRequest CRD of the module k8s.io/autoscaler/cluster-autoscaler/apis at the
    version Kueue's go.mod requires (docs/provisioning.md): hack/build.sh's AUTOSCALER_APIS_DIR,
    else downloaded now (a sources.env written before it named that module)."""
    folder = sources.get("AUTOSCALER_APIS_DIR")
    if not folder:
        gomod = (Path(sources["KUEUE_DIR"]) / "go.mod").read_text().split()
        version = gomod[gomod.index(AUTOSCALER_APIS) + 1]
        folder = str(go_module(f"{AUTOSCALER_APIS}@{version}")["Dir"])
    return Path(folder) / "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"


def apply_crds(kubectl_args: list[str], apply: list[str], crds: list[Path]) -> None:
    """CRD files server-side applied (Argo's Workflow CRD is 2.8 MB), waited for Established."""
    run(*apply, *[a for f in crds for a in ("-f", str(f))], capture=True)
    run(
        *kubectl_args,
        "wait",
        "--for=condition=Established",
        "--timeout=120s",
        *[f"crd/{yaml.safe_load(f.read_text())['metadata']['name']}" for f in crds],
        capture=True,
    )


def install_crds(kubectl_args: list[str], apply: list[str], sources: dict[str, str]) -> None:
    """CRDs from the pinned modules, waited for Established; then the kueue-system and argo
    namespaces. The ProvisioningRequest CRD is among them: Kueue sets its provisioning admission
    check controller up only when the API serves ProvisioningRequests at its start
    (cmd/kueue/main.go:512-526), and it is idle until a ClusterQueue uses such a check."""
    kueue_dir, argo_dir = Path(sources["KUEUE_DIR"]), Path(sources["ARGO_DIR"])
    trainer_dir, jobset_dir = Path(sources["TRAINER_DIR"]), Path(sources["JOBSET_DIR"])
    crds = sorted((kueue_dir / "config/components/crd/bases").glob("*.yaml"))
    crds += sorted((argo_dir / "manifests/base/crds/full").glob("argoproj.io_*.yaml"))
    crds += sorted((trainer_dir / "manifests/base/crds").glob("trainer.kubeflow.org_*.yaml"))
    crds += sorted((jobset_dir / "config/components/crd/bases").glob("jobset.x-k8s.io_*.yaml"))
    crds.append(provisioning_crd(sources))
    log(f"installing {len(crds)} CRDs")
    apply_crds(kubectl_args, apply, crds)
    run(*kubectl_args, "create", "namespace", "kueue-system", capture=True)
    run(*kubectl_args, "create", "namespace", "argo", capture=True)


def start_kueue(
    bin_dir: Path,
    kueue_dir: Path,
    apply: list[str],
    state: dict[str, Any],
    frameworks: list[str] = KUEUE_FRAMEWORKS,
    extra: dict[str, Any] | None = None,
) -> None:
    """The Kueue manager with its webhooks on https://127.0.0.1:<free port> (own CA), waited for
    healthy; then its webhook configurations pointing at that URL. waitForPodsReady is the default
    unless state["kueue_pods_ready"] says otherwise (hack/kueue_config.py); ``extra``: more
    top-level Configuration fields (a MultiKueue manager's ``multiKueue``)."""
    kdir = STATE / "kueue"
    cert_dir = kdir / "certs"
    ca = make_certs(cert_dir)
    wport, hport = free_port(), free_port()
    config = kueue_config(wport, hport, cert_dir, frameworks, state.get("kueue_pods_ready"))
    config.update(extra or {})
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


# Argo processes a Workflow at most once per DEFAULT_REQUEUE_TIME (default 10s; every pod event
# goes through AddRateLimited on a fixed-interval limiter: argo-workflows
# workflow/controller/rate_limiters.go, controller.go enqueueWfFromPodLabel), so each step
# transition waits up to that long. The same file puts the floor at 1s (below it the informer is
# unlikely to be up to date); the e2e tier's steps run for seconds, so it uses that floor: the
# hand-off's Argo part p50 1.86 -> 1.09 s (docs/benchmarks.md, docs/admins.md).
ARGO_REQUEUE_TIME = "1s"


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


def ready_nodes(kubectl_args: list[str]) -> int:
    out = run(*kubectl_args, "get", "nodes", "-o", "json", capture=True).stdout
    n = 0
    for node in json.loads(out)["items"]:
        for c in node.get("status", {}).get("conditions") or []:
            if c["type"] == "Ready" and c["status"] == "True":
                n += 1
    return n
