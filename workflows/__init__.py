"""trainweave for Hera authors: steps admitted by Kueue one pod group each.

``initializer``, ``trainer`` and ``post_processor`` return a :class:`GangStep`;
call it inside your own ``with DAG(...)`` to get the step's ``Task`` beside your
plain Hera templates. ``exit_cleanup`` adds the handler that releases a failed
run's Kueue Workloads; ``llm_finetune_pipeline`` builds the whole LLM
fine-tuning Workflow. See docs/hera.md.
"""

from trainweave.workflows.gang import GangStep, exit_cleanup, pipeline_of
from trainweave.workflows.pipelines import llm_finetune_pipeline
from trainweave.workflows.steps import initializer, post_processor, trainer

__all__ = [
    "GangStep",
    "exit_cleanup",
    "initializer",
    "llm_finetune_pipeline",
    "pipeline_of",
    "post_processor",
    "trainer",
]
