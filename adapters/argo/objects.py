"""Pipeline -> the Kubernetes objects beside the Workflow.

Pure. Small pydantic models of our own (``adapters.k8s_objects``; the ``kubernetes`` client's
models cost 0.6 s to import, too much for ``trainweave render``):

- the headless Service JobSet makes for stable pod DNS (selector
  ``jobset.sigs.k8s.io/jobset-name``, ``publishNotReadyAddresses``);
- the runtime snapshot ConfigMap ``<trainjob>-runtime-snapshot`` (key
  ``runtime``), as Trainer v2.3 (KEP-2599), written as JSON: valid YAML for any reader, and
  ~20x cheaper to emit than PyYAML's Python representer (docs/benchmarks.md);
- the objects the mlPolicy builds beside the pods (``Pipeline.policy``, e.g. MPI's hostfile
  ConfigMap: ``adapters.trainjob.policies.mpi``);
- PVCs from the runtime's volumeClaimPolicies, named ``<template>-<trainjob>``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainweave import labels as L
from trainweave.adapters import names
from trainweave.adapters.k8s_objects import Meta, base_labels, config_map
from trainweave.model import Pipeline

Json = dict[str, Any]
__all__ = ["base_labels", "supporting"]


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
    metadata: Meta
    spec: _ServiceSpec


def supporting(pipeline: Pipeline) -> list[Json]:
    """Service, snapshot ConfigMap, the policy's objects (MPI: hostfile) and PVCs, in order."""
    out: list[Json] = []
    if pipeline.service is not None:
        svc = _Service(
            metadata=Meta(
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
        config_map(
            pipeline,
            names.snapshot_name(pipeline.name),
            "runtime-snapshot",
            {L.RUNTIME_SNAPSHOT_KEY: json.dumps(pipeline.runtime_snapshot, separators=(",", ":"))},
        )
    )
    if pipeline.policy is not None:
        out += pipeline.policy.objects(pipeline)
    for pvc in pipeline.pvcs:
        claim = dict(pvc)
        meta = dict(claim.get("metadata") or {})
        meta["namespace"] = pipeline.namespace
        meta["labels"] = {**(meta.get("labels") or {}), **base_labels(pipeline, "pvc")}
        claim["metadata"] = meta
        out.append(claim)
    return out
