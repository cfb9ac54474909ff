"""What the real node (hack/node.py) is given: containerd's config, the CNI bridge, the
kubelet's configuration and kubeconfig, CoreDNS's Corefile and the DNAT rule for the
`kubernetes` Service. Pure builders (no I/O), as engine_config.py is for the control plane;
tests/unit/test_hack_configs.py renders them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import HACK

NODE_NAME = "trainweave-node-0"
LIB = Path("/var/lib/trainweave-node")
RUN = Path("/run/trainweave-node")
SOCK = RUN / "containerd.sock"
POD_CIDR = "10.88.0.0/16"
BRIDGE = "tw0"
TAINT_KEY = "trainweave.io/real-node"
NODE_LABEL = "trainweave.io/node"
# the kubelet's client certificate: user system:node:<name> in group system:nodes (Node authorizer)
NODE_SUBJECT = f"/O=system:nodes/CN=system:node:{NODE_NAME}"
# The `kubernetes` Service's ClusterIP: the first address of kwokctl's service range
# (its certificate names it too: engine_config.kwokctl_config kubeApiserverCertSANs).
APISERVER_CLUSTER_IP = "10.0.0.1"
DNAT_COMMENT = "trainweave-node: kubernetes Service"
CNI_BIN = Path("/usr/lib/cni")
# pause image the CRI runs every pod sandbox from (hack/images.py builds it)
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10.2"  # kubeadm v1.36's PauseVersion


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


def node_kubeconfig(server: str, ca: Path, crt: Path, key: Path) -> dict[str, Any]:
    """The kubelet's kubeconfig: a client certificate for system:node:<name> (group
    system:nodes), so the kubelet runs under the Node authorizer, not as an admin."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}
        ],
        "users": [
            {"name": "node", "user": {"client-certificate": str(crt), "client-key": str(key)}}
        ],
        "contexts": [{"name": "node", "context": {"cluster": "local", "user": "node"}}],
        "current-context": "node",
    }


def dnat_rule(server: str) -> list[str]:
    """The nat PREROUTING rule (after -A/-D) sending the `kubernetes` Service's ClusterIP:443 to
    the loopback kube-apiserver of ``server``, tagged with DNAT_COMMENT so `down` finds it."""
    port = server.rsplit(":", 1)[1]
    return [
        "PREROUTING", "-t", "nat", "-d", f"{APISERVER_CLUSTER_IP}/32", "-p", "tcp", "--dport",
        "443", "-j", "DNAT", "--to-destination", f"127.0.0.1:{port}",
        "-m", "comment", "--comment", DNAT_COMMENT,
    ]  # fmt: skip
