"""TrainJob + runtime + render options -> every object that reaches the cluster. Pure.

The one render path: ``trainweave render`` prints ``render``'s output and the controller creates
exactly that, in that order (``CREATION_ORDER``: headless Service, ConfigMaps such as the runtime
snapshot and MPI's hostfile, the policy's Secrets such as MPI's SSH Secret, PVCs, kept Workloads,
the Workflow last, since its pods need the others), editing nothing afterwards; so
``trainweave render | kubectl apply -f -`` creates them in the same order. What the TrainJob
does not say comes in ``Options`` (``adapters.options``, the one options class of every
render): the attempt and resumed segment, the controller owner reference and the SSH keys.
``with_ssh_keys`` is the one place that decides whether a render needs keys (the CLI and the
controller both call it, with ``trainweave.sshkeys.generate``: the randomness stays at the edge).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from trainweave.adapters import trainjob_status
from trainweave.adapters.argo import workflow
from trainweave.adapters.kueue import kept
from trainweave.adapters.options import DEFAULTS, Options, Owner
from trainweave.adapters.trainjob import policies, trainer
from trainweave.inputs import Runtime, TrainJob
from trainweave.model import Pipeline
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]
__all__ = [
    "CREATION_ORDER",
    "Options",
    "Owner",
    "in_creation_order",
    "objects_of",
    "render",
    "with_ssh_keys",
]
# The one order of a render's objects, in which the controller creates them (dependencies first:
# the Workflow's pods mount the ConfigMaps, Secrets and PVCs and resolve through the Service).
CREATION_ORDER = (
    "Service",
    "ConfigMap",
    "Secret",
    "PersistentVolumeClaim",
    "Workload",
    "Workflow",
)


def render(trainjob: TrainJob, runtime: Runtime, options: Options = DEFAULTS) -> list[Json]:
    """Every object of one attempt segment; raises InputErrors for invalid input."""
    pipeline = trainer.to_pipeline(
        trainjob,
        runtime,
        attempt=options.attempt,
        segment=options.segment,
        default_queue=options.default_queue,
    )
    if options.trainer_status is not None:  # Trainer's TrainJobStatus plugin (--trainjob-status)
        tj_env = trainjob.spec.trainer.env if trainjob.spec.trainer else []
        pipeline = trainjob_status.enforce(pipeline, options.trainer_status, tj_env)
    return objects_of(pipeline, options)


def in_creation_order(objs: list[Json]) -> list[Json]:
    """``objs`` in ``CREATION_ORDER`` (stable within a kind; a kind not listed before the
    Workflow)."""
    last = CREATION_ORDER.index("Workflow")

    def rank(obj: Json) -> int:
        kind = str(obj.get("kind"))
        return CREATION_ORDER.index(kind) if kind in CREATION_ORDER else last - 1

    return sorted(objs, key=rank)


def objects_of(pipeline: Pipeline, options: Options = DEFAULTS) -> list[Json]:
    """Every object of ``pipeline`` in ``CREATION_ORDER``: Service, ConfigMaps, Secrets, PVCs,
    kept Workloads, the Workflow last."""
    out = workflow.render(pipeline, options)
    if pipeline.policy is not None:
        out += pipeline.policy.secrets(pipeline, options.ssh_keys)
    if options.trainer_status is not None:
        out.append(trainjob_status.ca_config_map(options.trainer_status, pipeline))
    if options.owner is not None:
        ref = options.owner.reference()
        for obj in out:
            obj["metadata"]["ownerReferences"] = [ref]
    if options.kept_position:  # plain owner, not controller (adapters.kueue.kept)
        out += kept.kept_workloads(
            pipeline, options.skip_steps, options.owner, options.kept_cap_seconds
        )
    return in_creation_order(out)


def with_ssh_keys(options: Options, runtime: Runtime, generate: Callable[[], KeyPair]) -> Options:
    """``options`` with a pair from ``generate`` when the runtime's mlPolicy builds an SSH
    Secret (``Policy.needs_ssh_keys``: MPI) and none is given; else ``options`` as they are."""
    if options.ssh_keys is not None or not policies.REGISTRY.of(runtime.spec).needs_ssh_keys:
        return options
    return dataclasses.replace(options, ssh_keys=generate())
