#!/usr/bin/env python3
"""A real node for the local control plane: up | down | status.

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
"""

from __future__ import annotations

import argparse
import contextlib
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

import cluster
import yaml

HACK = cluster.HACK

NODE_NAME = "trainweave-node-0"
LIB = Path("/var/lib/trainweave-node")
RUN = Path("/run/trainweave-node")
SOCK = RUN / "containerd.sock"
POD_CIDR = "10.88.0.0/16"
BRIDGE = "tw0"
TAINT_KEY = "trainweave.io/real-node"
NODE_LABEL = "trainweave.io/node"
# The `kubernetes` Service's ClusterIP: the first address of kwokctl's service range
# (its certificate names it too: engine_config.kwokctl_config kubeApiserverCertSANs).
APISERVER_CLUSTER_IP = "10.0.0.1"
DNAT_COMMENT = "trainweave-node: kubernetes Service"
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
CNI_BIN = Path("/usr/lib/cni")
# pause image the CRI runs every pod sandbox from (hack/images.py builds it)
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10.2"  # kubeadm v1.36's PauseVersion


def state_path() -> Path:
    return cluster.STATE / "node.json"


def load() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(state_path().read_text())
        return data
    except (OSError, ValueError):
        return None


def save(state: dict[str, Any]) -> None:
    state_path().write_text(json.dumps(state, indent=2, sort_keys=True))


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
    cluster.log(f"installing Debian packages: {' '.join(missing)}")
    t0 = time.monotonic()
    cluster.run(
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
    cluster.log(f"installed in {time.monotonic() - t0:.1f}s")


def _installed(package: str) -> bool:
    r = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    )
    return r.returncode == 0 and "install ok installed" in r.stdout


def containerd_config() -> str:
    """containerd 1.6 (Debian bookworm) config: CRI with runc (through hack/node/runc-wrapper,
    which fits each spec to this machine's capabilities), cgroupfs, our CNI dir."""
    return f"""version = 2
root = "{LIB / "containerd"}"
state = "{RUN / "containerd"}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{SOCK}"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "{HACK / "node" / "runc-wrapper"}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{LIB / "cni"}"
"""


def cni_config() -> dict[str, Any]:
    """One bridge for every pod of the node, host-local IPAM, masquerade out."""
    return {
        "cniVersion": "0.4.0",
        "name": "trainweave",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": True,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(LIB / "ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def kubelet_config(dns_ip: str, ca: Path, port: int, healthz: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # this machine has cgroup v1 only; Kubernetes 1.35+ refuses it unless told not to
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "containerRuntimeEndpoint": f"unix://{SOCK}",
        "clusterDNS": [dns_ip],
        "clusterDomain": "cluster.local",
        "failSwapOn": False,
        "address": "0.0.0.0",
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": healthz,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca)},
        },
        "authorization": {"mode": "Webhook"},
        "registerWithTaints": [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}],
        # the images were imported, not pulled: a garbage-collected one cannot come back
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {
            "memory.available": "200Mi",
            "nodefs.available": "2%",
            "imagefs.available": "2%",
        },
        "serializeImagePulls": False,
        "resolvConf": "/etc/resolv.conf",
        "maxPods": 110,
    }


def corefile(bind_ip: str, kubeconfig: Path, health: int, ready: int) -> str:
    return f""".:53 {{
    bind {bind_ip}
    errors
    health 127.0.0.1:{health}
    ready 127.0.0.1:{ready}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
    forward . /etc/resolv.conf
    cache 5
}}
"""


def kwok_pki() -> Path:
    return cluster.kwok_workdir() / "clusters" / cluster.CLUSTER_NAME / "pki"


def node_kubeconfig(server: str, out: Path) -> None:
    """A client certificate for system:node:<name> (group system:nodes), signed by the control
    plane's CA, so the kubelet runs under the Node authorizer, not as an admin."""
    pki = kwok_pki()
    key, csr, crt = out.parent / "node.key", out.parent / "node.csr", out.parent / "node.crt"
    cluster.run("openssl", "genrsa", "-out", key, "2048", capture=True)
    subj = f"/O=system:nodes/CN=system:node:{NODE_NAME}"
    cluster.run("openssl", "req", "-new", "-key", key, "-subj", subj, "-out", csr, capture=True)
    cluster.run(
        "openssl", "x509", "-req", "-in", csr, "-CA", pki / "ca.crt", "-CAkey", pki / "ca.key",
        "-CAcreateserial", "-days", "30", "-out", crt, capture=True,
    )  # fmt: skip
    kc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server, "certificate-authority": str(pki / "ca.crt")},
            }
        ],
        "users": [
            {"name": "node", "user": {"client-certificate": str(crt), "client-key": str(key)}}
        ],
        "contexts": [{"name": "node", "context": {"cluster": "local", "user": "node"}}],
        "current-context": "node",
    }
    out.write_text(yaml.safe_dump(kc))
    out.chmod(0o600)


def apiserver_server() -> str:
    kc = yaml.safe_load(cluster.KUBECONFIG.read_text())
    server: str = kc["clusters"][0]["cluster"]["server"]
    return server


def dnat_rule(server: str) -> list[str]:
    port = server.rsplit(":", 1)[1]
    return [
        "PREROUTING", "-t", "nat", "-d", f"{APISERVER_CLUSTER_IP}/32", "-p", "tcp", "--dport",
        "443", "-j", "DNAT", "--to-destination", f"127.0.0.1:{port}",
        "-m", "comment", "--comment", DNAT_COMMENT,
    ]  # fmt: skip


def _drop_dnat_rules() -> None:
    """Delete every nat PREROUTING rule node.py added (found by its comment)."""
    listed = cluster.run("iptables", "-t", "nat", "-S", "PREROUTING", capture=True).stdout
    for line in listed.splitlines():
        if line.startswith("-A PREROUTING") and DNAT_COMMENT in line:
            spec = shlex.split(line)[2:]  # after "-A PREROUTING"
            cluster.run("iptables", "-t", "nat", "-D", "PREROUTING", *spec, check=False)


def kubectl(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    bin_dir = cluster.engines_dir() / "bin"
    return cluster.run(
        bin_dir / "kubectl", f"--kubeconfig={cluster.KUBECONFIG}", *args, check=check, capture=True
    )


def cmd_up(args: argparse.Namespace) -> None:
    cstate = cluster.load_state()
    if not cstate or not cluster.KUBECONFIG.exists():
        cluster.die("the local control plane is down: run `hack/cluster.py up` first")
    if (state := load()) and cluster.pid_alive(int(state["pids"].get("kubelet", 0) or 0)):
        # up already; images whose inputs changed since (examples/real, say) are rebuilt and
        # imported again, the others are only re-imported (a second or two)
        cluster.run(sys.executable, HACK / "images.py", "load", "--address", str(SOCK))
        cluster.log(f"node {NODE_NAME} already up; images loaded")
        return
    t_start = time.monotonic()
    timings: dict[str, float] = {}
    ensure_packages()
    t0 = time.monotonic()
    cluster.run("bash", HACK / "build.sh", "node")
    timings["build"] = time.monotonic() - t0
    bin_dir = cluster.engines_dir() / "bin"
    for d in (LIB / "cni", LIB / "ipam", LIB / "kubelet", RUN, cluster.STATE / "node"):
        d.mkdir(parents=True, exist_ok=True)
    ndir = cluster.STATE / "node"
    state = {"pids": {}, "node": NODE_NAME}
    save(state)

    (ndir / "containerd.toml").write_text(containerd_config())
    (LIB / "cni" / "10-trainweave.conflist").write_text(json.dumps(cni_config(), indent=2))
    state["pids"]["containerd"] = cluster.start_process(
        "containerd", ["containerd", "--config", str(ndir / "containerd.toml")]
    )
    save(state)
    cluster.wait_for("containerd", lambda: SOCK.exists() and _ctr("version").returncode == 0, 60)

    t0 = time.monotonic()
    cluster.run(sys.executable, HACK / "images.py", "load", "--address", str(SOCK))
    timings["images"] = time.monotonic() - t0

    server = apiserver_server()
    ip = node_ip()
    # pods reach the API at https://10.0.0.1:443 (in-cluster config): DNAT it to the loopback
    # kube-apiserver; route_localnet lets a packet from the bridge be routed to 127.0.0.1.
    cluster.run("sysctl", "-q", "-w", "net.ipv4.conf.all.route_localnet=1")
    cluster.run("sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
    _drop_dnat_rules()  # one an earlier control plane left points at its port
    cluster.run("iptables", "-A", *dnat_rule(server))

    health, ready = cluster.free_port(), cluster.free_port()
    (ndir / "Corefile").write_text(corefile(ip, cluster.KUBECONFIG, health, ready))
    state["pids"]["coredns"] = cluster.start_process(
        "coredns", [str(bin_dir / "coredns"), "-conf", str(ndir / "Corefile")], cwd=ndir
    )
    save(state)
    cluster.wait_for(
        "CoreDNS /ready", lambda: cluster.http_ok(f"http://127.0.0.1:{ready}/ready"), 60
    )

    node_kubeconfig(server, ndir / "kubelet.kubeconfig")
    kport, khealth = (
        10250 if not cluster.tcp_open(10250) else cluster.free_port(),
        cluster.free_port(),
    )
    cfg = kubelet_config(ip, kwok_pki() / "ca.crt", kport, khealth)
    (ndir / "kubelet.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    state["pids"]["kubelet"] = cluster.start_process(
        "kubelet",
        [
            str(bin_dir / "kubelet"),
            f"--config={ndir / 'kubelet.yaml'}",
            f"--kubeconfig={ndir / 'kubelet.kubeconfig'}",
            f"--root-dir={LIB / 'kubelet'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={ip}",
            f"--node-labels={NODE_LABEL}=real",
            "--v=1",
        ],
    )
    state.update({"ip": ip, "kubelet_port": kport, "healthz": khealth, "dns": ready})
    save(state)
    t0 = time.monotonic()
    cluster.wait_for(f"node {NODE_NAME} Ready", _node_ready, 180, interval=1)
    timings["node-ready"] = time.monotonic() - t0
    state["timings"] = {k: round(v, 1) for k, v in timings.items()}
    state["timings"]["total"] = round(time.monotonic() - t_start, 1)
    save(state)
    cluster.log(
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
        cluster.stop_pid(int(pids["kubelet"]), "kubelet")
    if SOCK.exists():
        _remove_all_containers()
    for name in ("coredns", "containerd"):
        if pids.get(name):
            cluster.stop_pid(int(pids[name]), name)
    # containerd-shim processes outlive containerd by design; their tasks were killed above
    subprocess.run(["pkill", "-f", f"containerd-shim.*{RUN}"], check=False)
    for m in reversed(_mounts_under((LIB / "kubelet", RUN))):
        subprocess.run(["umount", "-l", m], check=False)
    shutil.rmtree(LIB / "kubelet", ignore_errors=True)
    shutil.rmtree(LIB / "ipam", ignore_errors=True)
    subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)
    if cluster.KUBECONFIG.exists():
        with contextlib.suppress(OSError, subprocess.CalledProcessError):
            kubectl("delete", "node", NODE_NAME, "--ignore-not-found", "--wait=false", check=False)
    _drop_dnat_rules()
    state_path().unlink(missing_ok=True)
    cluster.log(f"node {NODE_NAME} down")


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
        print(f"node: {name:<11} pid {pid:<8} {'up' if cluster.pid_alive(int(pid)) else 'DEAD'}")
    print(f"node: {NODE_NAME} ip {state.get('ip')} timings {state.get('timings')}")


def main() -> None:
    if os.geteuid() != 0:
        cluster.die("the real node needs root (containerd, kubelet, iptables)")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("up", help="join the real node to the running local control plane")
    sub.add_parser("down", help="stop it and delete the Node (images stay imported)")
    sub.add_parser("status")
    args = p.parse_args()
    {"up": cmd_up, "down": cmd_down, "status": cmd_status}[args.cmd](args)


if __name__ == "__main__":
    main()
