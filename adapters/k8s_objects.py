"""Small pydantic models of the core Kubernetes objects every render emits beside the Workflow.

Pure. ConfigMaps and Secrets tied to their TrainJob by ``base_labels``: used by
``adapters.argo.objects`` (the Service, snapshot and PVCs) and by the mlPolicy modules'
Build half (``adapters.trainjob.policies``: MPI's hostfile ConfigMap and SSH Secret). Our own
models, not the ``kubernetes`` client's: those cost 0.6 s to import, too much for
``trainweave render``.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from trainweave import labels as L
from trainweave.model import Pipeline

Json = dict[str, Any]


class Meta(BaseModel):
    """``metadata``: name, namespace, labels."""

    model_config = ConfigDict(extra="forbid")
    name: str
    namespace: str
    labels: dict[str, str] = Field(default_factory=dict)


class _ConfigMap(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "ConfigMap"
    metadata: Meta
    data: dict[str, str]


class _Secret(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)
    api_version: str = Field("v1", alias="apiVersion")
    kind: str = "Secret"
    metadata: Meta
    type: str
    immutable: bool = True
    data: dict[str, str]


def base_labels(pipeline: Pipeline, component: str) -> dict[str, str]:
    """Labels tying an object to its TrainJob."""
    return {L.TRAINJOB: pipeline.name, L.COMPONENT: component, L.MANAGED_BY: L.MANAGER}


def config_map(pipeline: Pipeline, name: str, component: str, data: dict[str, str]) -> Json:
    """A ConfigMap of ``pipeline``'s namespace, labelled as its ``component``."""
    cm = _ConfigMap(
        metadata=Meta(
            name=name, namespace=pipeline.namespace, labels=base_labels(pipeline, component)
        ),
        data=data,
    )
    return cm.model_dump(by_alias=True)


def secret(
    pipeline: Pipeline, name: str, component: str, secret_type: str, data: dict[str, str]
) -> Json:
    """An immutable Secret of ``pipeline``'s namespace; ``data`` given as text, sent base64."""
    obj = _Secret(
        metadata=Meta(
            name=name, namespace=pipeline.namespace, labels=base_labels(pipeline, component)
        ),
        type=secret_type,
        data={k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    )
    return obj.model_dump(by_alias=True)
