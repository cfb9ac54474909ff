"""What hack/multicluster.py gives each member of the MultiKueue plane (pure): the manager's
Secrets, MultiKueueClusters, MultiKueueConfig, AdmissionCheck and dispatch ClusterQueue (as
sigs.k8s.io/kueue v0.19.2 test/integration/multikueue/suite_test.go wires them), each worker's
dispatch and step ClusterQueues, and the token kubeconfig a worker's ServiceAccount gets
(deploy/multikueue-worker-rbac.yaml; docs/multicluster.md)."""

from __future__ import annotations

from typing import Any

import common
import engine_config
import yaml

DISPATCH_CQ = "multicluster-dispatch"
STEPS_CQ = "multicluster-steps"
DISPATCH_FLAVOR = "dispatch"  # no nodeLabels: the manager places no pod
ADMISSION_CHECK = "multikueue"
MK_CONFIG = "multicluster"
GPU = "nvidia.com/gpu"
# What each worker gives the manager's Kueue (docs/multicluster.md): its ServiceAccount's token
# is what the manager's Secret holds, never the worker's admin kubeconfig.
WORKER_RBAC = common.ROOT / "deploy" / "multikueue-worker-rbac.yaml"
QUOTA = {"cpu": "256", "memory": "2Ti", GPU: "32"}


def cluster_queue(name: str, checks: list[str]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": list(QUOTA),
                "flavors": [
                    {
                        "name": DISPATCH_FLAVOR,
                        "resources": [{"name": r, "nominalQuota": q} for r, q in QUOTA.items()],
                    }
                ],
            }
        ],
    }
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def flavor() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": DISPATCH_FLAVOR},
        "spec": {},
    }


def worker_rbac() -> tuple[list[dict[str, Any]], str, str]:
    """deploy/multikueue-worker-rbac.yaml's objects, its ServiceAccount's namespace and name."""
    docs = [d for d in yaml.safe_load_all(WORKER_RBAC.read_text()) if d]
    sa = next(d["metadata"] for d in docs if d["kind"] == "ServiceAccount")
    return docs, str(sa["namespace"]), str(sa["name"])


def token_kubeconfig(admin_text: str, token: str) -> str:
    """A kubeconfig with the server and inline CA of ``admin_text``'s current context and
    ``token`` as its only credential (Kueue refuses file references: multikueuecluster.go
    validateKubeconfig)."""
    admin = yaml.safe_load(admin_text)
    ctx_name = admin.get("current-context") or admin["contexts"][0]["name"]
    ctx = next(c["context"] for c in admin["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in admin["clusters"] if c["name"] == ctx["cluster"])
    _, _, sa = worker_rbac()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "worker", "cluster": cluster}],
        "users": [{"name": sa, "user": {"token": token}}],
        "contexts": [{"name": sa, "context": {"cluster": "worker", "user": sa}}],
        "current-context": sa,
    }
    return yaml.safe_dump(doc)


def manager_docs(worker_kubeconfigs: dict[str, str]) -> list[dict[str, Any]]:
    """Secrets (key ``kubeconfig``), MultiKueueClusters, the MultiKueueConfig, the AdmissionCheck
    and the dispatch ClusterQueue, as Kueue's integration suite wires them."""
    docs: list[dict[str, Any]] = [flavor()]
    for worker, text in worker_kubeconfigs.items():
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": f"multikueue-{worker}", "namespace": "kueue-system"},
                "stringData": {"kubeconfig": text},
            }
        )
        docs.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "MultiKueueCluster",
                "metadata": {"name": worker},
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"locationType": "Secret", "location": f"multikueue-{worker}"}
                    }
                },
            }
        )
    docs.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "MultiKueueConfig",
            "metadata": {"name": MK_CONFIG},
            "spec": {"clusters": list(worker_kubeconfigs)},
        }
    )
    docs.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "AdmissionCheck",
            "metadata": {"name": ADMISSION_CHECK},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": MK_CONFIG,
                },
            },
        }
    )
    docs.append(cluster_queue(DISPATCH_CQ, [ADMISSION_CHECK]))
    return docs


def worker_docs() -> list[dict[str, Any]]:
    """The dispatch ClusterQueue (the MultiKueue copy of each Workload) and the step one (a
    flavor per node pool, GPUs only in the gpu one, as the kwok nodes have them)."""
    steps = cluster_queue(STEPS_CQ, [])
    steps["spec"]["resourceGroups"][0]["flavors"] = [
        {
            "name": pool,
            "resources": [
                {"name": r, "nominalQuota": q if pool == "gpu" or r != GPU else "0"}
                for r, q in QUOTA.items()
            ],
        }
        for pool in engine_config.POOLS
    ]
    return [flavor(), cluster_queue(DISPATCH_CQ, []), steps]
