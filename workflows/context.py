"""Where a trainweave step lands in an author's Hera ``Workflow``.

Hera collects templates through its context (``with Workflow(...)``); calling a
step inside ``with DAG(...)`` must add the step's templates to the enclosing
Workflow, as Hera itself does for a called ``@script``. Hera 7.1 keeps that
context in ``hera.workflows._context`` (private, read here in one place only).

A step's pod-group name and pod hostnames start with the Workflow's name. With
``name=`` it is written out; with ``generate_name=`` it is Argo's
``{{workflow.name}}`` (``generateName`` + 5 characters), checked against the
63-character limit at its longest.
"""

from __future__ import annotations

from hera.workflows import DAG, Parallel, Steps, Task, Workflow
from hera.workflows import models as m
from hera.workflows._context import _context

from trainweave.errors import InputError
from trainweave.workflows.checks import StepError

WORKFLOW_NAME = "{{workflow.name}}"
GENERATED_SUFFIX = 5  # characters Kubernetes appends to generateName


def active_workflow() -> Workflow:
    """The Workflow whose ``with`` block is open; raises if there is none."""
    pieces = _context.pieces
    if pieces and isinstance(pieces[0], Workflow):
        return pieces[0]
    raise RuntimeError(
        "call a trainweave step inside `with Workflow(...)` (and a DAG), or pass workflow="
    )


def refuse_steps(source: str) -> None:
    """Raise StepError when the open block is a ``Steps()`` (or its ``parallel()``): a
    trainweave step is a DAG task (``tasks.StepTask``), and Hera refuses a Task there with its
    own ``InvalidType``."""
    if _context.pieces and isinstance(_context.pieces[-1], Steps | Parallel):
        raise StepError(
            [
                InputError(
                    "name",
                    "is called inside Steps(): a trainweave step is a DAG task; call it inside"
                    " `with DAG(name=...)` (a Steps template may call that DAG's template)",
                    source,
                )
            ]
        )


def workflow_name(workflow: Workflow) -> str:
    """The Workflow's name, or ``{{workflow.name}}`` when Argo generates it."""
    if workflow.name:
        return workflow.name
    if workflow.generate_name:
        return WORKFLOW_NAME
    raise ValueError("the Workflow needs name= or generate_name= to name its Kueue pod groups")


def longest(value: str, workflow: Workflow) -> int:
    """Length of ``value`` once Argo substitutes the longest possible Workflow name."""
    generated = len(workflow.generate_name or "") + GENERATED_SUFFIX
    return len(value.replace(WORKFLOW_NAME, "x" * generated))


def tasks_of(workflow: Workflow) -> list[Task]:
    """Every Task in the Workflow's DAGs, open ones included (Hera adds a DAG to the Workflow's
    templates when its ``with`` block opens)."""
    return [
        task
        for template in workflow.templates
        if isinstance(template, DAG)
        for task in template.tasks
        if isinstance(task, Task)
    ]


def template(workflow: Workflow, name: str) -> object | None:
    """The Workflow's template called ``name``, if any."""
    return next((t for t in workflow.templates if getattr(t, "name", None) == name), None)


def add_template(workflow: Workflow, template: m.Template) -> None:
    """Add ``template`` unless an equal one is there; a different one of that name is an error."""
    for existing in workflow.templates:
        if getattr(existing, "name", None) != template.name:
            continue
        if existing == template:
            return
        raise ValueError(
            f"the Workflow already has a different template named {template.name!r}; "
            "give the trainweave step another name"
        )
    workflow.templates.append(template)
