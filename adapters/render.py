"""TrainJob + runtime + render options -> every object that reaches the cluster. Pure.

The one render path: ``trainweave render`` prints ``render``'s output and the controller creates
exactly that (Workflow, headless Service, runtime snapshot ConfigMap, the mlPolicy's objects
beside the pods such as MPI's hostfile ConfigMap, PVCs, the policy's Secrets such as MPI's SSH
Secret), editing nothing afterwards. What the TrainJob does not say comes in ``Options``
(``adapters.options``, the one options class of every render): the attempt and resumed
segment, the controller owner reference and the SSH keys. ``with_ssh_keys`` is the one place
that decides whether a render needs keys (the CLI and the controller both call it, with
``trainweave.sshkeys.generate``: the randomness stays at the edge).
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
__all__ = ["Options", "Owner", "objects_of", "render", "with_ssh_keys"]


def render(trainjob: TrainJob, runtime: Runtime, options: Options = DEFAULTS) -> list[Json]:
    """Every object of one attempt segment; raises InputErrors for invalid input."""
    pipeline = trainer.to_pipeline(
        trainjob, runtime, attempt=options.attempt, default_queue=options.default_queue
    )
    if options.trainer_status is not None:  # Trainer's TrainJobStatus plugin (--trainjob-status)
        tj_env = trainjob.spec.trainer.env if trainjob.spec.trainer else []
        pipeline = trainjob_status.enforce(pipeline, options.trainer_status, tj_env)
    return objects_of(pipeline, options)


def objects_of(pipeline: Pipeline, options: Options = DEFAULTS) -> list[Json]:
    """The Workflow, then Service, ConfigMaps, PVCs and the policy's Secrets of ``pipeline``."""
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
    return out


def with_ssh_keys(options: Options, runtime: Runtime, generate: Callable[[], KeyPair]) -> Options:
    """``options`` with a pair from ``generate`` when the runtime's mlPolicy builds an SSH
    Secret (``Policy.needs_ssh_keys``: MPI) and none is given; else ``options`` as they are."""
    if options.ssh_keys is not None or not policies.REGISTRY.of(runtime.spec).needs_ssh_keys:
        return options
    return dataclasses.replace(options, ssh_keys=generate())
