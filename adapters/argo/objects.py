"""Pipeline -> the Kubernetes objects beside the Workflow.

Pure. Small pydantic models of our own (the ``kubernetes`` client's models cost
0.6 s to import, too much for ``trainweave render``):

- the headless Service JobSet makes for stable pod DNS (selector
  ``jobset.sigs.k8s.io/jobset-name``, ``publishNotReadyAddresses``);
- the runtime snapshot ConfigMap ``<trainjob>-runtime-snapshot`` (key
  ``runtime``), as Trainer v2.3 (KEP-2599), written as JSON: valid YAML for any reader, and
  ~20x cheaper to emit than PyYAML's Python representer (docs/benchmarks.md);
- PVCs from the runtime's volumeClaimPolicies, named ``<template>-<trainjob>``;
- for MPI, the hostfile ConfigMap ``<trainjob>-mpi-hostfile`` and the SSH Secret
  ``<trainjob>-mpi-ssh-auth`` around a key pair given by the caller (made at the edge,
  ``trainweave.sshkeys``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainweave import labels as L
from trainweave.adapters import names
from trainweave.adapters.trainjob import mlpolicy
from trainweave.model import Pipeline
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]


class _Meta(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    namespace: str
    labels: dict[str, str] = Field(default_factory=dict)


class _ServicePort(BaseModel):
    name: str
    port: int


class _ServiceSpec(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    cluster_ip: str = Field("None", alias="clusterIP")
    selector: dict[str, str]
    publish_not_ready_addresses: bool = Field(alias="publishNotReadyAddresses")


class _Service(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "Service"
    metadata: _Meta
    spec: _ServiceSpec


class _ConfigMap(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "ConfigMap"
    metadata: _Meta
    data: dict[str, str]


def base_labels(pipeline: Pipeline, component: str) -> dict[str, str]:
    """Labels tying an object to its TrainJob."""
    return {L.TRAINJOB: pipeline.name, L.COMPONENT: component, L.MANAGED_BY: L.MANAGER}


def supporting(pipeline: Pipeline) -> list[Json]:
    """Service, snapshot ConfigMap, MPI hostfile and PVCs, in that order."""
    out: list[Json] = []
    if pipeline.service is not None:
        svc = _Service(
            metadata=_Meta(
                name=pipeline.service.name,
                namespace=pipeline.namespace,
                labels=base_labels(pipeline, "service"),
            ),
            spec=_ServiceSpec(
                selector={L.JOBSET_NAME: pipeline.name},
                publish_not_ready_addresses=pipeline.service.publish_not_ready_addresses,
            ),
        )
        out.append(svc.model_dump(by_alias=True))
    out.append(
        _config_map(
            pipeline,
            names.snapshot_name(pipeline.name),
            "runtime-snapshot",
            {L.RUNTIME_SNAPSHOT_KEY: json.dumps(pipeline.runtime_snapshot, separators=(",", ":"))},
        )
    )
    if pipeline.mpi_slots:
        out.append(
            _config_map(
                pipeline,
                names.mpi_hostfile_name(pipeline.name),
                "mpi-hostfile",
                {"hostfile": mlpolicy.hostfile(mpi_endpoints(pipeline), pipeline.mpi_slots)},
            )
        )
    for pvc in pipeline.pvcs:
        claim = dict(pvc)
        meta = dict(claim.get("metadata") or {})
        meta["namespace"] = pipeline.namespace
        meta["labels"] = {**(meta.get("labels") or {}), **base_labels(pipeline, "pvc")}
        claim["metadata"] = meta
        out.append(claim)
    return out


def mpi_endpoints(pipeline: Pipeline) -> list[str]:
    """Pod FQDNs of MPI node pods (and the launcher when it runs as a node), in runtime order."""
    subdomain = pipeline.service.name if pipeline.service else pipeline.name
    out = []
    for step in pipeline.steps:
        for job in step.jobs:
            if job.name not in ("node", "launcher") or (
                job.name == "launcher" and not _launcher_is_node(pipeline)
            ):
                continue
            for replica in range(job.replicas):
                for index in range(job.pods_per_replica):
                    out.append(
                        f"{names.pod_hostname(pipeline.name, job.name, replica, index)}.{subdomain}"
                    )
    return out


def _launcher_is_node(pipeline: Pipeline) -> bool:
    mpi = (pipeline.runtime_snapshot.get("spec", {}).get("mlPolicy") or {}).get("mpi") or {}
    return bool(mpi.get("runLauncherAsNode"))


def _config_map(pipeline: Pipeline, name: str, component: str, data: dict[str, str]) -> Json:
    cm = _ConfigMap(
        metadata=_Meta(
            name=name, namespace=pipeline.namespace, labels=base_labels(pipeline, component)
        ),
        data=data,
    )
    return cm.model_dump(by_alias=True)


class _Secret(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "Secret"
    metadata: _Meta
    type: str = "kubernetes.io/ssh-auth"
    immutable: bool = True
    data: dict[str, str]


def mpi_secret(pipeline: Pipeline, keys: KeyPair) -> Json:
    """The MPI SSH auth Secret as Trainer's MPI plugin makes it: ``kubernetes.io/ssh-auth``,
    immutable, ``ssh-privatekey``/``ssh-publickey`` (base64 ``data``)."""
    secret = _Secret(
        metadata=_Meta(
            name=names.mpi_secret_name(pipeline.name),
            namespace=pipeline.namespace,
            labels=base_labels(pipeline, "mpi-ssh-auth"),
        ),
        data={
            "ssh-privatekey": base64.b64encode(keys.private.encode()).decode(),
            "ssh-publickey": base64.b64encode(keys.public.encode()).decode(),
        },
    )
    return secret.model_dump(by_alias=True)
