"""What the Task of a trainweave step may do: one pod group per task, no outputs.

Pure. A second task of one step in a Workflow would share the step's pod group and torch master
(the names come from the step), so it is refused unless each task names its own ``instance``
(``gang.per_instance``); a repeated literal instance is refused too. A step's Task has no
outputs (``checks.OUTPUTS``): ``StepTask`` refuses Hera's output accessors, ``check_call`` a
``when``/``arguments`` naming a step task's outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hera.workflows import Artifact, Parameter, Task, Workflow

from trainweave.errors import InputError
from trainweave.workflows import checks, context
from trainweave.workflows.checks import StepError

Json = dict[str, Any]
INSTANCE = "instance"


class StepTask(Task):
    """A trainweave step's Task: Hera's, except that it has no outputs (``checks.OUTPUTS``)."""

    @property
    def result(self) -> str:
        raise self._no_outputs()

    def get_result_as(self, name: str) -> Parameter:
        raise self._no_outputs()

    def get_parameter(self, name: str) -> Parameter:
        raise self._no_outputs()

    def get_parameters_as(self, name: str) -> Parameter:
        raise self._no_outputs()

    def get_artifact(self, name: str) -> Artifact:
        raise self._no_outputs()

    def get_outputs_as_arguments(self) -> list[Parameter | Artifact]:
        raise self._no_outputs()

    def _no_outputs(self) -> StepError:
        return StepError([InputError("outputs", checks.OUTPUTS, source=f"task {self.name!r}")])


def _instances(instance: str | None, items: Any) -> set[str] | None:
    """The pod-group instances of one call: {""} for the step's own group, the literal items or
    instance, or None when only run time tells (``with_param``, an expression)."""
    if instance is None:
        return {""}
    if instance == "{{item}}" and isinstance(items, list):
        return {str(i) for i in items}
    return None if "{{" in instance else {instance}


def instances_of(wf: Workflow, step: str) -> set[str]:
    """The literal pod-group instances the tasks of ``step`` in ``wf`` run as ("" for the
    step's own group); instances known only at run time are left out."""
    found: set[str] = set()
    for task in context.tasks_of(wf):
        if isinstance(task, StepTask) and task.template == f"step-{step}":
            found |= _instances(_argument(task), task.with_items) or set()
    return found


def check_call(
    step: str, group: str, torch: bool, wf: Workflow, name: str, instance: str | None, task: Json
) -> None:
    """Refuse ``outputs=``, a reference to a step's outputs, and a second task of ``step``
    (pod group ``group``) in ``wf`` that would share a pod group with an earlier one."""
    errors = []
    if "outputs" in task:
        errors.append(InputError("outputs", checks.OUTPUTS))
    steps = {t.name for t in context.tasks_of(wf) if isinstance(t, StepTask)}
    for key in ("when", "arguments"):
        for ref in sorted(checks.output_refs(task.get(key)) & steps):
            errors.append(InputError(key, f"names outputs of task {ref!r}: {checks.OUTPUTS}"))
    items = task.get("with_items")
    if instance == "{{item}}" and isinstance(items, list):
        repeated = sorted({str(i) for i in items if [str(j) for j in items].count(str(i)) > 1})
        if repeated:
            errors.append(
                InputError(
                    "with_items",
                    f"{', '.join(map(repr, repeated))} is given more than once: each item is its"
                    f" own pod group of step {step!r} (instance), once per Workflow",
                )
            )
    mine = _instances(instance, items)
    for other in context.tasks_of(wf):
        if other.template != f"step-{step}" or not isinstance(other, StepTask):
            continue
        theirs = _instances(_argument(other), other.with_items)
        shared = mine & theirs if mine is not None and theirs is not None else set()
        if "" in (mine or set()) | (theirs or set()):
            master = " and one torch master" if torch else ""
            errors.append(
                InputError(
                    "name",
                    f"step {step!r} already runs as task {other.name!r} of this Workflow;"
                    f" both would be Kueue pod group {group!r}{master}. Give each call its own"
                    " instance= (a DNS label: each instance is its own pod group), or build a"
                    " second step with another name",
                )
            )
        elif shared:
            errors.append(
                InputError(
                    INSTANCE,
                    f"{', '.join(map(repr, sorted(shared)))} already names a pod group of step"
                    f" {step!r} (task {other.name!r}); an instance is one pod group, once"
                    " per Workflow",
                )
            )
    checks.refuse(f"{step}(name={name!r})", errors)


def _argument(task: Task) -> str | None:
    args = task.arguments if isinstance(task.arguments, dict) else {}
    value = args.get(INSTANCE)
    return value if isinstance(value, str) else None


def mount_errors(wf: Workflow, container: Json, pod_volumes: list[Json]) -> list[InputError]:
    """Mounts naming a volume neither the step nor ``wf`` defines (``volumes``,
    ``volume_claim_templates``): the API server refuses the pod ("Not found"), each retry
    again. Argo v4.0.7 adds a Workflow volume to the pod when a mount names it
    (``workflowpod.go`` ``addVolumeReferences``)."""
    known = {v.get("name") for v in pod_volumes}
    volumes = wf.volumes if isinstance(wf.volumes, Sequence) else [wf.volumes]
    known |= {getattr(v, "name", None) for v in volumes if v is not None}
    for claim in wf.volume_claim_templates or []:
        known.add(claim.metadata.name if claim.metadata else None)
    return [
        InputError(
            f"volume_mounts[{i}].name",
            f"Not found: {mount.get('name')!r} (neither the step's volumes nor the Workflow's"
            " volumes or volume_claim_templates)",
        )
        for i, mount in enumerate(container.get("volumeMounts") or [])
        if mount.get("name") not in known
    ]
