"""What several mlPolicy modules share: the trainer port, the rank fieldRef, GPUs and CPUs per node.

Pure. As kubeflow/trainer@v2.3.0 ``pkg/constants/constants.go`` (``ContainerTrainerPort``
29500, the Job completion index annotation) and ``pkg/runtime/runtime.go``
(``GetNumGPUPerNode``), ``plugins/torch/torch.go`` (``getNumCPUPerNode``).
"""

from __future__ import annotations

import math
from typing import Any

from trainweave.quantity import is_gpu, parse

Json = dict[str, Any]

TRAINER_PORT = 29500  # upstream ContainerTrainerPort: torch, jax and xgboost all listen on it
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
