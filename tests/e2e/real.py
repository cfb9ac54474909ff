"""Shared pieces of the real-containers tests (tests/e2e/test_real*.py): the real node of
hack/node.py, examples/real in a test namespace, and reading what really ran."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, cast

from .kube import KUEUE, Kube, Pod, condition

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "real"
NODE = "trainweave-node-0"
VOLUMES = Path("/var/lib/trainweave-node/volumes")
Json = dict[str, Any]


def argo_dir() -> Path:
    """The pinned Argo module's folder (hack/build.sh's sources.env)."""
    out = subprocess.run(
        ["bash", str(ROOT / "hack" / "build.sh"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    env = dict(
        line.split("=", 1)
        for line in (Path(out.stdout.strip()) / "sources.env").read_text().splitlines()
        if "=" in line
    )
    return Path(env["ARGO_DIR"])


def logs(kube: Kube, ns: str, pod: Pod, container: str) -> str:
    """The container's log through the API server (which asks the real kubelet)."""
    return str(kube.core.read_namespaced_pod_log(pod.metadata.name, ns, container=container))


def step_pods(kube: Kube, ns: str, step: str) -> list[Pod]:
    return [
        p
        for p in kube.pods(ns)
        if p.metadata.labels.get("trainer.kubeflow.org/trainjob-ancestor-step") == step
        or p.metadata.labels.get("jobset.sigs.k8s.io/replicatedjob-name") == step
    ]


def exit_codes(pod: Pod) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for s in pod.status.container_statuses or []:
        term = s.state.terminated if s.state else None
        out[s.name] = term.exit_code if term else None
    return out


def none_admitted(kube: Kube, ns: str) -> bool:
    return not any(
        (c := condition(wl, "QuotaReserved"))
        and c["status"] == "True"
        and not condition(wl, "Finished")
        for wl in kube.list(KUEUE, "workloads", ns)
    )


def workspace_volume(kube: Kube, namespace: str, name: str, claim: str) -> None:
    """A hostPath PersistentVolume ``name`` (a folder of the real node under VOLUMES) bound
    ahead to the PVC ``claim`` of ``namespace``: the static provisioning the node offers."""
    kube.core.create_persistent_volume(
        cast(
            Any,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": name},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce", "ReadWriteMany"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "claimRef": {"namespace": namespace, "name": claim},
                    "hostPath": {"path": str(VOLUMES / name), "type": "DirectoryOrCreate"},
                },
            },
        )
    )
