"""What the local control plane's engines are given: fake nodes, kwok Stages, Kueue's
configuration and webhooks, ResourceFlavors. Pure builders from pinned sources; hack/cluster.py
starts the processes with them and `hack/cluster.py render` writes them for hack/kind-up.sh.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

HACK = Path(__file__).resolve().parent

# the Go module of the ProvisioningRequest API (its CRD: config/crd/...), at the version Kueue's
# go.mod requires (hack/build.sh sources; docs/provisioning.md)
AUTOSCALER_APIS = "k8s.io/autoscaler/cluster-autoscaler/apis"
E2E_LABEL = "trainweave.test/e2e"
POOL_LABEL = "trainweave.test/pool"
# Namespaces where upstream (Kubeflow Trainer + JobSet) runs TrainJobs: their webhooks see only these.
UPSTREAM_LABEL = "trainweave.test/upstream"
KUEUE_FRAMEWORKS = ["pod", "batch/job"]
# Kueue integrations of the upstream phase: Kueue admits a TrainJob as one Workload (Trainer's
# JobSet under it), as users of Kubeflow Trainer + Kueue run it.
KUEUE_UPSTREAM_FRAMEWORKS = [
    *KUEUE_FRAMEWORKS,
    "jobset.x-k8s.io/jobset",
    "trainer.kubeflow.org/trainjob",
]

# Fake node pools (kwok): no taints, loopback InternalIP, labelled for ResourceFlavor nodeLabels.
# 6 x 8 GPUs: three e2e tests at once (hack/e2e.sh), each with a 16-GPU ClusterQueue, all fit.
POOLS: dict[str, dict[str, Any]] = {
    "cpu": {"count": 4, "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"}},
    "gpu": {
        "count": 6,
        "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
    },
}
NODE_COUNT = sum(int(pool["count"]) for pool in POOLS.values())

# Kueue's waitForPodsReady, set deliberately (docs/local-control-plane.md, docs/engines.md):
# a gang that is not all Ready 5 min after admission is evicted and requeued; recoveryTimeout 0s
# turns the v0.19.2 recovery check off, which otherwise evicts a multi-pod group in which one pod
# already Succeeded while the others still run (docs/design.md, D1).
WAIT_FOR_PODS_READY = {
    "timeout": "5m",
    "recoveryTimeout": "0s",
    "blockAdmission": False,
    "requeuingStrategy": {"timestamp": "Eviction", "backoffBaseSeconds": 10},
}


def kwokctl_config(bin_dir: Path, versions: dict[str, str], kwok_dir: Path, pki_dir: Path) -> str:
    """kwokctl's cluster: every component on loopback from bin_dir; kube-apiserver authenticates
    to a real kubelet (hack/node.py: `kubectl logs`, exec) with the admin certificate kwokctl
    generates in pki_dir."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": {
                "runtime": "binary",
                "bindAddress": "127.0.0.1",  # every component on loopback (default is 0.0.0.0)
                "kubeVersion": versions["KUBERNETES_VERSION"],
                "etcdVersion": versions["ETCD_VERSION"].lstrip("v"),
                "kubeApiserverBinary": str(bin_dir / "kube-apiserver"),
                "kubeControllerManagerBinary": str(bin_dir / "kube-controller-manager"),
                "kubeSchedulerBinary": str(bin_dir / "kube-scheduler"),
                "kubectlBinary": str(bin_dir / "kubectl"),
                "etcdBinary": str(bin_dir / "etcd"),
                "kwokControllerBinary": str(bin_dir / "kwok"),
                "nodeLeaseDurationSeconds": 40,
                # pods of the real node (hack/node.py) reach the API at the `kubernetes`
                # Service's ClusterIP, so the serving certificate must name it
                "kubeApiserverCertSANs": ["10.0.0.1"],
            },
            "componentsPatches": [
                {
                    "name": "kube-apiserver",
                    "extraArgs": [
                        {"key": "kubelet-client-certificate", "value": str(pki_dir / "admin.crt")},
                        {"key": "kubelet-client-key", "value": str(pki_dir / "admin.key")},
                        # the real node's name is not in DNS; its InternalIP is
                        {"key": "kubelet-preferred-address-types", "value": "InternalIP,Hostname"},
                    ],
                },
                {  # kwokctl's binary runtime fakes every node; only ours (a real one may join)
                    "name": "kwok-controller",
                    "extraArgs": [
                        {"key": "manage-all-nodes", "value": "false"},
                        {
                            "key": "manage-nodes-with-annotation-selector",
                            "value": "kwok.x-k8s.io/node=fake",
                        },
                    ],
                },
            ],
        }
    ]
    text = yaml.safe_dump_all(docs, sort_keys=False)
    # Stages: node ones and pod-ready unchanged from the pinned kwok module, our pod ones after.
    stage_files = [
        kwok_dir / "kustomize/stage/node/fast/node-initialize.yaml",
        kwok_dir / "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        kwok_dir / "kustomize/stage/pod/fast/pod-ready.yaml",
        HACK / "e2e/pod-stages.yaml",
    ]
    for f in stage_files:
        text += "---\n" + f.read_text().strip() + "\n"
    return text


def node_manifests() -> list[dict[str, Any]]:
    nodes = []
    for pool, spec in POOLS.items():
        for i in range(int(spec["count"])):
            name = f"kwok-{pool}-{i}"
            nodes.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": name,
                        "annotations": {
                            "kwok.x-k8s.io/node": "fake",
                            "node.alpha.kubernetes.io/ttl": "0",
                        },
                        "labels": {
                            "type": "kwok",
                            POOL_LABEL: pool,
                            "kubernetes.io/hostname": name,
                            "kubernetes.io/os": "linux",
                            "kubernetes.io/arch": "amd64",
                        },
                    },
                    "spec": {},
                    "status": {
                        "allocatable": spec["capacity"],
                        "capacity": spec["capacity"],
                        # loopback only: nothing (logs, exec) may be sent to another address
                        "addresses": [
                            {"type": "InternalIP", "address": "127.0.0.1"},
                            {"type": "Hostname", "address": name},
                        ],
                        "nodeInfo": {
                            "architecture": "amd64",
                            "operatingSystem": "linux",
                            "kubeletVersion": "fake",
                            "kubeProxyVersion": "fake",
                            "bootID": "",
                            "containerRuntimeVersion": "",
                            "kernelVersion": "",
                            "machineID": "",
                            "osImage": "",
                            "systemUUID": "",
                        },
                    },
                }
            )
    return nodes


def kueue_webhooks(kueue_dir: Path, port: int, ca: bytes) -> list[dict[str, Any]]:
    """Kueue's generated webhook manifests, pointed at https://127.0.0.1:<port> like envtest."""
    docs = [
        d
        for d in yaml.safe_load_all(
            (kueue_dir / "config/components/webhook/manifests.yaml").read_text()
        )
        if d and d.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    ]
    ca_b64 = base64.b64encode(ca).decode()
    for d in docs:
        d["metadata"]["name"] = "kueue-" + d["metadata"]["name"]
        for wh in d["webhooks"]:
            path = wh["clientConfig"]["service"]["path"]
            wh["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_b64}
            if "kueue-x-k8s-io" not in path:
                # job-like webhooks (pods, jobs, ...) only see the e2e test namespaces, as the
                # kustomize overlay limits them to non-system namespaces upstream.
                wh["namespaceSelector"] = {"matchLabels": {E2E_LABEL: "true"}}
    return docs


def loopback_manager(
    api_version: str, webhook_port: int, health_port: int, cert_dir: Path | None
) -> dict[str, Any]:
    """The controller-runtime Configuration shape Kueue, JobSet and Trainer share, on loopback:
    health and webhook on 127.0.0.1, no metrics, no leader election, no cert rotation (the
    webhook serves the certificate in ``cert_dir``, else controller-runtime's default
    $TMPDIR/k8s-webhook-server/serving-certs)."""
    webhook: dict[str, Any] = {"host": "127.0.0.1", "port": webhook_port}
    if cert_dir is not None:
        webhook["certDir"] = str(cert_dir)
    return {
        "apiVersion": api_version,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": webhook,
        "leaderElection": {"leaderElect": False},
    }


def kueue_config(
    webhook_port: int,
    health_port: int,
    cert_dir: Path,
    frameworks: list[str] | None = None,
    pods_ready: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Kueue's Configuration; ``pods_ready`` replaces WAIT_FOR_PODS_READY (hack/kueue_config.py)."""
    return {
        **loopback_manager("config.kueue.x-k8s.io/v1beta2", webhook_port, health_port, cert_dir),
        "namespace": "kueue-system",
        "internalCertManagement": {"enable": False},
        "managedJobsNamespaceSelector": {"matchLabels": {E2E_LABEL: "true"}},
        "waitForPodsReady": pods_ready or WAIT_FOR_PODS_READY,
        # The visibility API server would listen on 0.0.0.0:8082.
        "featureGates": {"VisibilityOnDemand": False},
        "integrations": {"frameworks": list(frameworks or KUEUE_FRAMEWORKS)},
    }


def in_cluster_kueue_config() -> dict[str, Any]:
    """The same Configuration for Kueue running in a cluster (`hack/cluster.py render` for
    hack/kind-up.sh): all interfaces, leader election, Kueue's own certificates, default gates."""
    cfg = kueue_config(9443, 8081, Path("/tmp/k8s-webhook-server/serving-certs"))
    cfg["health"] = {"healthProbeBindAddress": ":8081"}
    cfg["metrics"] = {"bindAddress": ":8443"}
    cfg["webhook"] = {"port": 9443}
    cfg["leaderElection"] = {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"}
    cfg["internalCertManagement"] = {"enable": True}
    del cfg["featureGates"]
    return cfg


def url_webhooks(manifest: Path, prefix: str, port: int, ca: bytes) -> list[dict[str, Any]]:
    """A controller's generated webhook configurations (``manifests.yaml``, kubebuilder's), named
    ``<prefix>-<name>``, pointed at https://127.0.0.1:<port> and limited to namespaces labelled
    UPSTREAM_LABEL (cluster-scoped objects, e.g. ClusterTrainingRuntimes, match any selector)."""
    docs = [
        d
        for d in yaml.safe_load_all(manifest.read_text())
        if d and d.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    ]
    ca_b64 = base64.b64encode(ca).decode()
    for d in docs:
        d["metadata"] = {"name": f"{prefix}-{d['metadata']['name']}"}
        for wh in d["webhooks"]:
            path = wh["clientConfig"]["service"]["path"]
            wh["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_b64}
            wh["namespaceSelector"] = {"matchLabels": {UPSTREAM_LABEL: "true"}}
    return docs


def trainer_config(webhook_port: int, health_port: int) -> dict[str, Any]:
    """Kubeflow Trainer's controller manager on loopback (its cert management is `certManagement`)."""
    return {
        **loopback_manager(
            "config.trainer.kubeflow.org/v1alpha1", webhook_port, health_port, cert_dir=None
        ),
        "certManagement": {"enable": False},
    }


def jobset_config(webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, Any]:
    """The JobSet controller on loopback."""
    return {
        **loopback_manager("config.jobset.x-k8s.io/v1alpha1", webhook_port, health_port, cert_dir),
        "internalCertManagement": {"enable": False},
    }


def flavor_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": pool},
            "spec": {"nodeLabels": {POOL_LABEL: pool}},
        }
        for pool in POOLS
    ]
