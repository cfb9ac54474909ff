"""Thin public wrappers over ``adapters.argo``'s template helpers.

``adapters.argo`` renders a whole Pipeline; its per-step helpers are private
there. The Hera builders need them one step at a time, so this module exposes
them unchanged (no logic of its own): the same Pipeline gives the same
templates here and in ``trainweave render``.
"""

from __future__ import annotations

from hera.workflows import models as m
from trainweave.adapters import argo

from trainweave.model import Job, Pipeline, Step

CLEANUP = argo._CLEANUP
"""Name of the exit-handler template that releases a failed run's Workloads."""


def step_template(pipeline: Pipeline, step: Step) -> m.Template:
    """``step-<step>``: a DAG with one task per pod (``<job>-<replica>-<index>``)."""
    return argo._step_dag(pipeline, step)


def pod_template(pipeline: Pipeline, step: Step, job: Job) -> m.Template:
    """``<job>``: the pod's container template with Kueue labels and retryStrategy."""
    return argo._pod_template(pipeline, step, job)


def main_template(pipeline: Pipeline) -> m.Template:
    """``main``: one task per step, ``depends`` from the step's predecessors."""
    return argo._main(pipeline)


def cleanup_templates(pipeline: Pipeline) -> list[m.Template]:
    """The exit handler and the templates it calls (delete each step's Workload)."""
    return [argo._cleanup(), *argo.cleanup_templates(pipeline)]
