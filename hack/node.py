#!/usr/bin/env python3
"""A real node for the local control plane: up | down | status | prepare.

kwok fakes every node of the e2e tier, so no container ever runs there. This joins ONE real node
to the same control plane (hack/cluster.py up first), on this machine, without Docker or a
registry:

- containerd, runc and the CNI plugins from Debian's packages (apt-get, if missing);
- the kubelet of KUBERNETES_VERSION and CoreDNS of COREDNS_VERSION from hack/build.sh node;
- the images from hack/images.py (pause, argoexec, the workload image), imported into containerd;
- a CNI bridge (10.88.0.0/16) for pod-to-pod traffic, CoreDNS on the node IP as cluster DNS
  (Services and headless Services' pod hostnames, from the control plane's EndpointSlices);
- no kube-proxy: the one ClusterIP pods need, the `kubernetes` Service (argoexec and the Kueue
  pod integration's clients talk to the API), is a DNAT rule to the loopback kube-apiserver;
  headless Services need no proxy.

The node is tainted `trainweave.io/real-node=true:NoSchedule` and labelled
`trainweave.io/node=real`; a ResourceFlavor that carries both (examples/real/queues.yaml) sends
the pods Kueue admits on it there, and no kwok pod lands on it. docs/real-containers.md explains it.

Everything lives under /var/lib/trainweave-node (containerd's image store is kept across `down`,
so images are imported once) and /run/trainweave-node; state in <cluster state>/node.json.
What the node is given (containerd, CNI, kubelet and CoreDNS configuration) is built in
hack/node_config.py; paths, processes and certificates are hack/common.py's. `up` runs its
phases in order: packages, build, containerd, images, the API route, CoreDNS, the kubelet.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import common
import yaml
from common import HACK, KUBECONFIG, STATE
from node_config import (
    BRIDGE,
    DNAT_COMMENT,
    LIB,
    NODE_LABEL,
    NODE_NAME,
    NODE_SUBJECT,
    RUN,
    SOCK,
    cni_config,
    containerd_config,
    corefile,
    dnat_rule,
    kubelet_config,
    node_kubeconfig,
)

# containerd..conntrack: the node; debootstrap and libc6-dev (static glibc for pause.c): hack/images.py
DEBIAN_PACKAGES = (
    "containerd",
    "runc",
    "containernetworking-plugins",
    "iptables",
    "conntrack",
    "debootstrap",
    "libc6-dev",
)


def state_path() -> Path:
    return STATE / "node.json"


def load() -> dict[str, Any] | None:
    return common.read_json(state_path())


def save(state: dict[str, Any]) -> None:
    common.write_json(state_path(), state)


def node_ip() -> str:
    """The address of the interface of the default route (what the kubelet reports)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
        ip: str = s.getsockname()[0]
    return ip


def ensure_packages() -> None:
    missing = [p for p in DEBIAN_PACKAGES if not _installed(p)]
    if not missing:
        return
    common.log(f"installing Debian packages: {' '.join(missing)}")
    t0 = time.monotonic()
    common.run(
        "apt-get",
        "-o",
        "DPkg::Lock::Timeout=300",
        "install",
        "-y",
        "-q",
        "--no-install-recommends",
        *missing,
        env={"DEBIAN_FRONTEND": "noninteractive"},
        capture=True,
    )
    common.log(f"installed in {time.monotonic() - t0:.1f}s")


def _installed(package: str) -> bool:
    r = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    )
    return r.returncode == 0 and "install ok installed" in r.stdout


def kwok_pki() -> Path:
    return common.kwok_cluster_dir() / "pki"


def apiserver_server() -> str:
    kc = yaml.safe_load(KUBECONFIG.read_text())
    server: str = kc["clusters"][0]["cluster"]["server"]
    return server


def _drop_dnat_rules() -> None:
    """Delete every nat PREROUTING rule node.py added (found by its comment)."""
    listed = common.run("iptables", "-t", "nat", "-S", "PREROUTING", capture=True).stdout
    for line in listed.splitlines():
        if line.startswith("-A PREROUTING") and DNAT_COMMENT in line:
            spec = shlex.split(line)[2:]  # after "-A PREROUTING"
            common.run("iptables", "-t", "nat", "-D", "PREROUTING", *spec, check=False)


def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    bin_dir = common.engines_dir() / "bin"
    return common.run(
        bin_dir / "kubectl", f"--kubeconfig={KUBECONFIG}", *args, check=check, capture=True
    )


# ---------------------------------------------------------------------------------------------
# up, phase by phase


def load_images() -> None:
    """hack/images.py load: builds what is stale, imports every image into containerd."""
    common.run(sys.executable, HACK / "images.py", "load", "--address", str(SOCK))


def reload_if_up() -> bool:
    """True when the node already runs (its kubelet is alive): images whose inputs changed since
    (examples/real, say) are rebuilt and imported again, the others only re-imported (a second
    or two)."""
    state = load()
    if not state or not common.pid_alive(int(state["pids"].get("kubelet", 0) or 0)):
        return False
    load_images()
    common.log(f"node {NODE_NAME} already up; images loaded")
    return True


def new_state(ndir: Path) -> dict[str, Any]:
    """The node's folders (containerd's store and the kubelet's root under LIB) and a fresh
    node.json."""
    for d in (LIB / "cni", LIB / "ipam", LIB / "kubelet", RUN, ndir):
        d.mkdir(parents=True, exist_ok=True)
    state: dict[str, Any] = {"pids": {}, "node": NODE_NAME}
    save(state)
    return state


def start_containerd(ndir: Path, state: dict[str, Any]) -> None:
    """containerd with the CRI config and the CNI bridge, waited for its socket."""
    (ndir / "containerd.toml").write_text(containerd_config())
    (LIB / "cni" / "10-trainweave.conflist").write_text(json.dumps(cni_config(), indent=2))
    state["pids"]["containerd"] = common.start_process(
        "containerd", ["containerd", "--config", str(ndir / "containerd.toml")]
    )
    save(state)
    common.wait_for("containerd", lambda: SOCK.exists() and _ctr("version").returncode == 0, 60)


def route_apiserver(server: str) -> None:
    """Pods reach the API at https://10.0.0.1:443 (in-cluster config): DNAT it to the loopback
    kube-apiserver; route_localnet lets a packet from the bridge be routed to 127.0.0.1."""
    common.run("sysctl", "-q", "-w", "net.ipv4.conf.all.route_localnet=1")
    common.run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
    _drop_dnat_rules()  # one an earlier control plane left points at its port
    common.run("iptables", "-A", *dnat_rule(server))


def start_coredns(bin_dir: Path, ndir: Path, ip: str, state: dict[str, Any]) -> None:
    """CoreDNS on the node IP (the cluster DNS the kubelet hands to pods), waited for /ready."""
    health, ready = common.free_port(), common.free_port()
    (ndir / "Corefile").write_text(corefile(ip, KUBECONFIG, health, ready))
    state["pids"]["coredns"] = common.start_process(
        "coredns", [str(bin_dir / "coredns"), "-conf", str(ndir / "Corefile")], cwd=ndir
    )
    state["dns"] = ready
    save(state)
    common.wait_for("CoreDNS /ready", lambda: common.http_ok(f"http://127.0.0.1:{ready}/ready"), 60)


def start_kubelet(bin_dir: Path, ndir: Path, server: str, ip: str, state: dict[str, Any]) -> None:
    """The kubelet, registered as NODE_NAME with its own client certificate (node_kubeconfig),
    on port 10250 when free."""
    key, crt = common.client_cert(kwok_pki(), NODE_SUBJECT, ndir, "node")
    kubeconfig = ndir / "kubelet.kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(node_kubeconfig(server, kwok_pki() / "ca.crt", crt, key)))
    kubeconfig.chmod(0o600)
    kport = 10250 if not common.tcp_open(10250) else common.free_port()
    khealth = common.free_port()
    cfg = kubelet_config(ip, kwok_pki() / "ca.crt", kport, khealth)
    (ndir / "kubelet.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    state["pids"]["kubelet"] = common.start_process(
        "kubelet",
        [
            str(bin_dir / "kubelet"),
            f"--config={ndir / 'kubelet.yaml'}",
            f"--kubeconfig={kubeconfig}",
            f"--root-dir={LIB / 'kubelet'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={ip}",
            f"--node-labels={NODE_LABEL}=real",
            "--v=1",
        ],
    )
    state.update({"ip": ip, "kubelet_port": kport, "healthz": khealth})
    save(state)


def timed(timings: dict[str, float], name: str, phase: Any, *args: Any) -> Any:
    """phase(*args), its seconds recorded in timings[name]."""
    t0 = time.monotonic()
    try:
        return phase(*args)
    finally:
        timings[name] = time.monotonic() - t0


def cmd_up(args: argparse.Namespace) -> None:
    """One `up` at a time (e2e workers may ask at once): the next finds the node up."""
    if not common.load_state() or not KUBECONFIG.exists():
        common.die("the local control plane is down: run `hack/cluster.py up` first")
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "node-up.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _up()


def _up() -> None:
    if reload_if_up():
        return
    t_start = time.monotonic()
    timings: dict[str, float] = {}
    ensure_packages()
    timed(timings, "build", common.run, "bash", HACK / "build.sh", "node")
    bin_dir = common.engines_dir() / "bin"
    ndir = STATE / "node"
    state = new_state(ndir)
    start_containerd(ndir, state)
    timed(timings, "images", load_images)
    server, ip = apiserver_server(), node_ip()
    route_apiserver(server)
    start_coredns(bin_dir, ndir, ip, state)
    start_kubelet(bin_dir, ndir, server, ip, state)
    wait = f"node {NODE_NAME} Ready"
    timed(timings, "node-ready", common.wait_for, wait, _node_ready, 180, 1)
    state["timings"] = {k: round(v, 1) for k, v in timings.items()}
    state["timings"]["total"] = round(time.monotonic() - t_start, 1)
    save(state)
    common.log(
        f"node {NODE_NAME} Ready ({ip}); up in {state['timings']['total']}s "
        f"(build {timings['build']:.0f}s, images {timings['images']:.0f}s, "
        f"kubelet to Ready {timings['node-ready']:.0f}s)"
    )


def _ctr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ctr", "--address", str(SOCK), "-n", "k8s.io", *args], capture_output=True, text=True
    )


def _node_ready() -> bool:
    r = kubectl(
        "get", "node", NODE_NAME, "-o",
        "jsonpath={.status.conditions[?(@.type=='Ready')].status}", check=False,
    )  # fmt: skip
    return r.returncode == 0 and r.stdout.strip() == "True"


def cmd_down(args: argparse.Namespace) -> None:
    """Stop the kubelet first (no pod restarts), then every container, CoreDNS and containerd;
    unmount what the kubelet mounted; delete the Node. containerd's image store is kept."""
    state = load() or {"pids": {}}
    pids = state.get("pids") or {}
    if pids.get("kubelet"):
        common.stop_pid(int(pids["kubelet"]), "kubelet")
    if SOCK.exists():
        _remove_all_containers()
    for name in ("coredns", "containerd"):
        if pids.get(name):
            common.stop_pid(int(pids[name]), name)
    # containerd-shim processes outlive containerd by design; their tasks were killed above
    subprocess.run(["pkill", "-f", f"containerd-shim.*{RUN}"], check=False)
    for m in reversed(_mounts_under((LIB / "kubelet", RUN))):
        subprocess.run(["umount", "-l", m], check=False)
    shutil.rmtree(LIB / "kubelet", ignore_errors=True)
    shutil.rmtree(LIB / "ipam", ignore_errors=True)
    subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)
    if KUBECONFIG.exists():
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            kubectl("delete", "node", NODE_NAME, "--ignore-not-found", "--wait=false", check=False)
    _drop_dnat_rules()
    state_path().unlink(missing_ok=True)
    common.log(f"node {NODE_NAME} down")


def _remove_all_containers() -> None:
    tasks = _ctr("tasks", "ls", "-q").stdout.split()
    for t in tasks:
        _ctr("tasks", "kill", "-s", "SIGKILL", t)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _ctr("tasks", "ls", "-q").stdout.split():
        time.sleep(0.2)
    for t in _ctr("tasks", "ls", "-q").stdout.split():
        _ctr("tasks", "delete", "-f", t)
    for c in _ctr("containers", "ls", "-q").stdout.split():
        _ctr("containers", "delete", c)
    for ns in Path("/var/run/netns").glob("cni-*") if Path("/var/run/netns").exists() else []:
        subprocess.run(["ip", "netns", "delete", ns.name], check=False, capture_output=True)


def _mounts_under(roots: tuple[Path, ...]) -> list[str]:
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1].replace("\\040", " ")
        if any(target == str(r) or target.startswith(f"{r}/") for r in roots):
            out.append(target)
    return sorted(out, key=len)


def cmd_status(args: argparse.Namespace) -> None:
    state = load()
    if not state:
        print("node: down")
        return
    for name, pid in sorted((state.get("pids") or {}).items()):
        print(f"node: {name:<11} pid {pid:<8} {'up' if common.pid_alive(int(pid)) else 'DEAD'}")
    print(f"node: {NODE_NAME} ip {state.get('ip')} timings {state.get('timings')}")


def cmd_prepare(args: argparse.Namespace) -> None:
    """What `up` needs that needs no cluster: the Debian packages, the image archives and the
    node's binaries. `.ci/run` runs it in the background from the start, so the first real-node
    test only imports them: first what needs no Go, then the argoexec image once hack/build.sh
    has built Argo (it reuses Argo's compiled packages; built beside it they would be compiled
    twice), then the kubelet and CoreDNS (a wait for the background build's lane)."""
    t0 = time.monotonic()
    ensure_packages()
    images: list[str | Path] = [sys.executable, HACK / "images.py", "build"]
    common.run(*images, "--image", "pause", "--image", "workload", "--image", "controller")
    # the CLI first, as build.sh's lane does: Argo's packages are compiled once, not twice at once
    common.run("bash", HACK / "build.sh", "argo-cli", "argo")
    common.run(*images, "--image", "argoexec")
    common.run("bash", HACK / "build.sh", "node")
    common.log(f"node: prepared in {time.monotonic() - t0:.0f}s")


def main() -> None:
    if os.geteuid() != 0:
        common.die("the real node needs root (containerd, kubelet, iptables)")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="join the real node to the running local control plane")
    sub.add_parser("down", help="stop it and delete the Node (images stay imported)")
    sub.add_parser("status")
    sub.add_parser("prepare", help="packages, binaries and images only (no cluster needed)")
    args = p.parse_args()
    cmds = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "prepare": cmd_prepare}
    cmds[args.cmd](args)


if __name__ == "__main__":
    main()
