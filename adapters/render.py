"""TrainJob + runtime + render options -> every object that reaches the cluster. Pure.

The one render path: ``trainweave render`` prints ``objects_of`` and the controller creates
exactly ``render``'s output (Workflow, headless Service, runtime snapshot and MPI hostfile
ConfigMaps, PVCs, the MPI SSH Secret), editing nothing afterwards. What the TrainJob does not
say comes in ``Options``: the attempt and resumed segment, the controller owner reference and
the generated SSH keys (made at the edge, ``trainweave.sshkeys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainweave.adapters.argo import objects, workflow
from trainweave.adapters.trainjob import trainer
from trainweave.inputs import Runtime, TrainJob
from trainweave.model import Pipeline
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]


@dataclass(frozen=True)
class Owner:
    """The controller owner of every object: the TrainJob (garbage collection follows it)."""

    api_version: str
    kind: str
    name: str
    uid: str

    def reference(self) -> Json:
        """The ownerReference (controller, blockOwnerDeletion)."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class Options:
    """What the render needs beyond the TrainJob and runtime (see ``workflow.RenderOptions``).

    ``ssh_keys`` must be given for an MPI pipeline: its Secret holds them.
    """

    attempt: int = 0
    segment: int = 0
    skip_steps: frozenset[str] = frozenset()
    suspend: bool = False
    owner: Owner | None = None
    ssh_keys: KeyPair | None = None
    default_queue: str | None = None
    exit_cleanup: bool = True
    service_account: str | None = None


def render(trainjob: TrainJob, runtime: Runtime, options: Options = Options()) -> list[Json]:
    """Every object of one attempt segment; raises InputErrors for invalid input."""
    pipeline = trainer.to_pipeline(
        trainjob, runtime, attempt=options.attempt, default_queue=options.default_queue
    )
    return objects_of(pipeline, options)


def objects_of(pipeline: Pipeline, options: Options = Options()) -> list[Json]:
    """The Workflow, then Service, ConfigMaps, PVCs and the MPI Secret of ``pipeline``."""
    out = workflow.render(
        pipeline,
        workflow.RenderOptions(
            exit_cleanup=options.exit_cleanup,
            service_account=options.service_account,
            segment=options.segment,
            skip_steps=options.skip_steps,
            suspend=options.suspend,
        ),
    )
    if pipeline.mpi_slots:
        if options.ssh_keys is None:
            raise ValueError("an MPI pipeline needs Options.ssh_keys for its SSH Secret")
        out.append(objects.mpi_secret(pipeline, options.ssh_keys))
    if options.owner is not None:
        ref = options.owner.reference()
        for obj in out:
            obj["metadata"]["ownerReferences"] = [ref]
    return out
