"""Runtime mlPolicy -> env, ports, volumes and objects, as Trainer v2.3.0 applies them.

Pure; operates on pod-spec wire dicts. Sources: kubeflow/trainer@v2.3.0
``pkg/runtime/framework/plugins/torch/torch.go`` (PET_* env, port 29500,
envInjection) and ``plugins/mpi/mpi.go`` (SSH Secret volume, hostfile
ConfigMap, OpenMPI env, node count with runLauncherAsNode).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from trainweave.adapters import names
from trainweave.quantity import is_gpu, parse

Json = dict[str, Any]

TORCH_RESERVED = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)
TORCH_PORT = 29500
MPI_RESERVED = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
    "OMPI_MCA_plm_rsh_args",
)
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def completion_index() -> Json:
    """``valueFrom`` of the pod's Job completion index (a rank)."""
    return {"fieldRef": {"fieldPath": COMPLETION_INDEX_FIELD}}


def _whole(value: Any) -> int:
    """A quantity as a whole number, rounded up as Go's ``Quantity.Value()``."""
    return math.ceil(parse(value))


def _gpus(section: Json) -> int:
    """The first resource whose name contains "gpu" (any case), as Trainer's numGPU."""
    for name, value in section.items():
        if is_gpu(name):
            return _whole(value)
    return 0


def gpus_per_node(resources: Json) -> int:
    """GPUs per node: requests, else limits, as Trainer's GetNumGPUPerNode (runtime.go)."""
    return _gpus(resources.get("requests") or {}) or _gpus(resources.get("limits") or {})


def cpus_per_node(resources: Json) -> int:
    """CPUs requested (else limited), rounded up, as Trainer's getNumCPUPerNode (torch.go)."""
    request = (resources.get("requests") or {}).get("cpu")
    if request is not None and parse(request) != 0:
        return _whole(request)
    limit = (resources.get("limits") or {}).get("cpu")
    return _whole(limit) if limit is not None else 0


def torch_env(
    trainjob: str,
    num_nodes: int,
    nproc: int | None,
    resources: Json,
    subdomain: str | None = None,
) -> tuple[list[Json], list[Json]]:
    """(PET_* env every torch target gets, PET_MASTER_* env) for one TrainJob.

    For a TrainJob the master address is ``<trainjob>-node-0-0.<trainjob>`` whatever the
    runtime's network subdomain, as torch.go writes it; Hera steps pass their own subdomain.
    """
    if nproc is not None:
        procs = str(nproc)
    elif gpus_per_node(resources) == 0:
        procs = str(max(1, cpus_per_node(resources)))
    else:
        procs = "auto"
    pet: list[Json] = [
        {"name": "PET_NNODES", "value": str(num_nodes)},
        {"name": "PET_NPROC_PER_NODE", "value": procs},
        {"name": "PET_NODE_RANK", "valueFrom": completion_index()},
    ]
    master = [
        {
            "name": "PET_MASTER_ADDR",
            "value": f"{names.pod_hostname(trainjob, 'node', 0, 0)}.{subdomain or trainjob}",
        },
        {"name": "PET_MASTER_PORT", "value": str(TORCH_PORT)},
    ]
    return pet, master


def mpi_slots(policy_slots: int, nproc: int | None, resources: Json) -> int:
    """Hostfile slots: TrainJob numProcPerNode, else GPUs when the runtime says 1."""
    if nproc is not None:
        return nproc
    if policy_slots == 1 and gpus_per_node(resources) > 1:
        return gpus_per_node(resources)
    return policy_slots


def mpi_secret_volume(trainjob: str) -> Json:
    """The SSH auth Secret volume Trainer's MPI plugin mounts in node and launcher pods."""
    return {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": names.mpi_secret_name(trainjob),
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }


def mpi_hostfile_volume(trainjob: str) -> Json:
    """The hostfile ConfigMap volume of the launcher pod."""
    return {
        "name": "mpi-hostfile",
        "configMap": {
            "name": names.mpi_hostfile_name(trainjob),
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }


def openmpi_env(slots: int) -> list[Json]:
    """OpenMPI env on the launcher's node container."""
    return [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]


def hostfile(endpoints: Iterable[str], slots: int) -> str:
    """``<endpoint> slots=<n>`` per line, as Trainer's buildHostFileConfigMap."""
    return "".join(f"{e} slots={slots}\n" for e in endpoints)
