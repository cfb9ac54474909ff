"""What `hack/cluster.py up` and `hack/node.py up` give the engines, rendered without starting
anything: versions.env, the kwokctl configuration and Stages, Kueue's Configuration (the
default, another waitForPodsReady, the in-cluster one for kind), the real node's containerd,
CNI, kubelet and CoreDNS configuration; and every command line still parses its arguments."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.hack_scripts import HACK, load

common = load("common")
engine_config = load("engine_config")
kueue_config_cmd = load("kueue_config")
node_config = load("node_config")
restart = load("restart")


def test_read_env(tmp_path: Path) -> None:
    env = tmp_path / "versions.env"
    env.write_text("# pinned\n\nA=1\n B = two=2 \n#C=3\n")
    assert common.read_env(env) == {"A": "1", "B": "two=2"}


def test_versions_are_the_pinned_file() -> None:
    pins = common.versions()
    assert {"KUBERNETES_VERSION", "KUEUE_VERSION", "ARGO_WORKFLOWS_VERSION"} <= pins.keys()
    assert all(v and not v.startswith("#") for v in pins.values())


def test_certificates(tmp_path: Path) -> None:
    """The serving certificate names 127.0.0.1 and localhost and chains to its CA; a client
    certificate signed by that CA carries the subject asked for (the real node's)."""
    ca = common.make_certs(tmp_path / "serving")
    assert ca.startswith(b"-----BEGIN CERTIFICATE-----")
    serving = tmp_path / "serving" / "tls.crt"
    text = _openssl("x509", "-in", serving, "-noout", "-ext", "subjectAltName")
    assert "IP Address:127.0.0.1" in text and "DNS:localhost" in text
    ca_file = tmp_path / "serving" / "ca.crt"
    assert _openssl("verify", "-CAfile", ca_file, serving).strip().endswith("OK")
    subject = "/O=system:nodes/CN=system:node:example"
    key, crt = common.client_cert(tmp_path / "serving", subject, tmp_path, "node")
    assert key.exists() and _openssl("verify", "-CAfile", ca_file, crt).strip().endswith("OK")
    subject_line = _openssl("x509", "-in", crt, "-noout", "-subject", "-nameopt", "compat")
    assert subject_line.strip() == f"subject={subject}"


def _openssl(*args: str | Path) -> str:
    r = subprocess.run(["openssl", *map(str, args)], capture_output=True, text=True, check=True)
    return r.stdout


def test_kwokctl_config(tmp_path: Path) -> None:
    """kwokctl's configuration on loopback with the pinned Kubernetes and etcd, then the kwok
    module's node and pod-ready Stages (here stand-ins) and the e2e tier's pod Stages."""
    kwok = tmp_path / "kwok"
    for rel in (
        "kustomize/stage/node/fast/node-initialize.yaml",
        "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "kustomize/stage/pod/fast/pod-ready.yaml",
    ):
        (kwok / rel).parent.mkdir(parents=True, exist_ok=True)
        (kwok / rel).write_text(f"kind: Stage\nmetadata:\n  name: {Path(rel).stem}\n")
    pins = common.versions()
    text = engine_config.kwokctl_config(tmp_path / "bin", pins, kwok, tmp_path / "pki")
    docs = [d for d in yaml.safe_load_all(text) if d]
    options = docs[0]["options"]
    assert docs[0]["kind"] == "KwokctlConfiguration"
    assert options["bindAddress"] == "127.0.0.1" and options["runtime"] == "binary"
    assert options["kubeVersion"] == pins["KUBERNETES_VERSION"]
    assert options["etcdVersion"] == pins["ETCD_VERSION"].lstrip("v")
    assert options["kubeApiserverBinary"] == str(tmp_path / "bin" / "kube-apiserver")
    assert [d["metadata"]["name"] for d in docs[1:4]] == [
        "node-initialize",
        "node-heartbeat-with-lease",
        "pod-ready",
    ]
    assert len(docs) > 4 and {d["kind"] for d in docs[1:]} == {"Stage"}


def test_kueue_config_default(tmp_path: Path) -> None:
    cfg: dict[str, Any] = engine_config.kueue_config(9443, 8081, tmp_path)
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 9443, "certDir": str(tmp_path)}
    assert cfg["health"] == {"healthProbeBindAddress": "127.0.0.1:8081"}
    assert cfg["waitForPodsReady"] == engine_config.WAIT_FOR_PODS_READY
    assert cfg["integrations"]["frameworks"] == engine_config.KUEUE_FRAMEWORKS
    assert cfg["internalCertManagement"] == {"enable": False}


def test_kueue_config_with_another_pods_ready_timeout(tmp_path: Path) -> None:
    """`hack/cluster.py kueue-config --pods-ready-timeout 20s`: only the timeout and the
    requeuing backoff base change."""
    wanted = kueue_config_cmd.pods_ready("20s", 1)
    cfg = engine_config.kueue_config(1, 2, tmp_path, pods_ready=wanted)
    default = engine_config.WAIT_FOR_PODS_READY
    assert cfg["waitForPodsReady"] == {
        **default,
        "timeout": "20s",
        "requeuingStrategy": {**default["requeuingStrategy"], "backoffBaseSeconds": 1},
    }


def test_in_cluster_kueue_config() -> None:
    """`hack/cluster.py render` for kind: Kueue's own certificates, leader election, all
    interfaces, the default feature gates; the same waitForPodsReady and integrations."""
    cfg = engine_config.in_cluster_kueue_config()
    assert cfg["internalCertManagement"] == {"enable": True}
    assert cfg["leaderElection"]["leaderElect"] is True
    assert cfg["webhook"] == {"port": 9443} and "featureGates" not in cfg
    assert cfg["waitForPodsReady"] == engine_config.WAIT_FOR_PODS_READY


def test_containerd_config() -> None:
    cfg = tomllib.loads(node_config.containerd_config())
    cri = cfg["plugins"]["io.containerd.grpc.v1.cri"]
    runc = cri["containerd"]["runtimes"]["runc"]
    assert cfg["grpc"]["address"] == str(node_config.SOCK)
    assert cri["sandbox_image"] == node_config.SANDBOX_IMAGE
    assert Path(runc["options"]["BinaryName"]).is_file()  # hack/node/runc-wrapper
    assert cri["cni"]["conf_dir"] == str(node_config.LIB / "cni")


def test_cni_config() -> None:
    bridge = node_config.cni_config()["plugins"][0]
    assert bridge["bridge"] == node_config.BRIDGE
    assert bridge["ipam"]["ranges"] == [[{"subnet": node_config.POD_CIDR}]]


def test_kubelet_config(tmp_path: Path) -> None:
    cfg = node_config.kubelet_config("192.0.2.7", tmp_path / "ca.crt", 10250, 10248)
    assert cfg["clusterDNS"] == ["192.0.2.7"] and cfg["port"] == 10250
    assert cfg["containerRuntimeEndpoint"] == f"unix://{node_config.SOCK}"
    assert cfg["registerWithTaints"] == [
        {"key": node_config.TAINT_KEY, "value": "true", "effect": "NoSchedule"}
    ]
    assert cfg["authentication"]["x509"] == {"clientCAFile": str(tmp_path / "ca.crt")}


def test_corefile(tmp_path: Path) -> None:
    text = node_config.corefile("192.0.2.7", tmp_path / "kubeconfig", 8080, 8181)
    assert "bind 192.0.2.7\n" in text and "health 127.0.0.1:8080\n" in text
    assert f"kubeconfig {tmp_path / 'kubeconfig'}\n" in text


def test_node_kubeconfig(tmp_path: Path) -> None:
    kc = node_config.node_kubeconfig(
        "https://127.0.0.1:6443", tmp_path / "ca.crt", tmp_path / "n.crt", tmp_path / "n.key"
    )
    assert kc["clusters"][0]["cluster"] == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority": str(tmp_path / "ca.crt"),
    }
    assert kc["users"][0]["user"]["client-certificate"] == str(tmp_path / "n.crt")
    assert node_config.NODE_SUBJECT.endswith(f"CN=system:node:{node_config.NODE_NAME}")


def test_dnat_rule() -> None:
    rule = node_config.dnat_rule("https://127.0.0.1:34567")
    assert rule[:1] == ["PREROUTING"] and rule[-1] == node_config.DNAT_COMMENT
    assert rule[rule.index("-d") + 1] == f"{node_config.APISERVER_CLUSTER_IP}/32"
    assert rule[rule.index("--to-destination") + 1] == "127.0.0.1:34567"


SUBCOMMANDS = ("up", "down", "status", "env", "upstream", "restart", "kueue-config")
CLI = [
    pytest.param("cluster.py", [sub, "-h"], id=f"cluster-{sub}")
    for sub in (*SUBCOMMANDS, "provisioner", "render")
] + [
    pytest.param("cluster.py", ["with", "-h"], id="cluster-with"),
    pytest.param("images.py", ["build", "-h"], id="images-build"),
    pytest.param("images.py", ["load", "-h"], id="images-load"),
]


@pytest.mark.parametrize(("script", "argv"), CLI)
def test_command_lines_parse(script: str, argv: list[str]) -> None:
    """Each subcommand loads and answers -h (the scripts import their phases at load time)."""
    r = subprocess.run(
        [sys.executable, str(HACK / script), *argv], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:")


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["wc", "--qps=20", "--loglevel=info"], ["wc", "--loglevel=info", "--qps=50"]),
        (["wc", "--qps", "20", "-v"], ["wc", "-v", "--qps=50"]),
        (["wc", "--loglevel=info"], ["wc", "--loglevel=info", "--qps=50"]),
    ],
    ids=["replaced", "replaced-with-its-value", "appended"],
)
def test_restart_with_a_flag_replaces_the_same_flag(argv: list[str], want: list[str]) -> None:
    """`hack/cluster.py restart NAME --arg=--qps=50`: the engine's command line it starts again."""
    assert restart.with_flags(argv, {"--qps": "50"}) == want
