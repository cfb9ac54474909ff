"""TrainJob + runtime + render options -> every object that reaches the cluster. Pure.

The one render path: ``trainweave render`` prints ``render``'s output and the controller creates
exactly that (Workflow, headless Service, runtime snapshot and MPI hostfile
ConfigMaps, PVCs, the MPI SSH Secret), editing nothing afterwards. What the TrainJob does not
say comes in ``Options`` (``adapters.options``, the one options class of every render): the
attempt and resumed segment, the controller owner reference and the generated SSH keys (made at
the edge, ``trainweave.sshkeys``).
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.argo import objects, workflow
from trainweave.adapters.options import DEFAULTS, Options, Owner
from trainweave.adapters.trainjob import trainer
from trainweave.inputs import Runtime, TrainJob
from trainweave.model import Pipeline

Json = dict[str, Any]
__all__ = ["Options", "Owner", "objects_of", "render"]


def render(trainjob: TrainJob, runtime: Runtime, options: Options = DEFAULTS) -> list[Json]:
    """Every object of one attempt segment; raises InputErrors for invalid input."""
    pipeline = trainer.to_pipeline(
        trainjob, runtime, attempt=options.attempt, default_queue=options.default_queue
    )
    return objects_of(pipeline, options)


def objects_of(pipeline: Pipeline, options: Options = DEFAULTS) -> list[Json]:
    """The Workflow, then Service, ConfigMaps, PVCs and the MPI Secret of ``pipeline``."""
    out = workflow.render(pipeline, options)
    if pipeline.mpi_slots:
        if options.ssh_keys is None:
            raise ValueError("an MPI pipeline needs Options.ssh_keys for its SSH Secret")
        out.append(objects.mpi_secret(pipeline, options.ssh_keys))
    if options.owner is not None:
        ref = options.owner.reference()
        for obj in out:
            obj["metadata"]["ownerReferences"] = [ref]
    return out
