"""replicatedJobs + ``dependsOn`` -> the step DAG (docs/design.md, D2).

Pure. A ``Complete`` edge orders two steps; a ``Ready`` edge joins both jobs
into one step (one Kueue gang, admitted together). JobSet's own rules hold:
a job may depend only on jobs listed before it (jobset v0.12.0 webhook), and
at most 5 edges per job. A step's role comes from the ancestor labels; any job
that depends, directly or not, on the trainer is a post-processor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from trainweave.errors import InputError
from trainweave.inputs import DependsOnStatus, ReplicatedJob
from trainweave.labels import Ancestor, Reason, StepRole

_BASE = "spec.template.spec.replicatedJobs"


@dataclass(frozen=True)
class StepShape:
    """A step before pods are built: its jobs (runtime indexes), predecessors and role."""

    name: str
    jobs: tuple[int, ...]
    depends_on: tuple[str, ...]
    role: StepRole


def steps(
    jobs: Sequence[ReplicatedJob], ancestors: Sequence[Ancestor | None]
) -> tuple[list[StepShape], list[InputError]]:
    """The steps in runtime order, or errors naming the dependsOn field at fault."""
    index = {job.name: i for i, job in enumerate(jobs)}
    errors: list[InputError] = []
    seen: set[str] = set()
    for i, job in enumerate(jobs):
        if job.name in seen:
            errors.append(_err(f"{_BASE}[{i}].name", f"duplicate replicatedJob name {job.name!r}"))
        seen.add(job.name)
        for j, dep in enumerate(job.depends_on):
            if dep.name not in index:
                errors.append(
                    _err(
                        f"{_BASE}[{i}].dependsOn[{j}].name",
                        f"names unknown replicatedJob {dep.name!r}",
                    )
                )
    if errors:
        return [], errors
    cycle = _cycle(jobs, index)
    if cycle:
        where = index[cycle[0]]
        return [], [_err(f"{_BASE}[{where}].dependsOn", "forms a cycle: " + " -> ".join(cycle))]
    for i, job in enumerate(jobs):
        for j, dep in enumerate(job.depends_on):
            if index[dep.name] >= i:
                errors.append(
                    _err(
                        f"{_BASE}[{i}].dependsOn[{j}].name",
                        f"names {dep.name!r}, which is listed after {job.name!r}; a replicatedJob"
                        " may only depend on jobs listed before it",
                    )
                )
    if errors:
        return [], errors
    return _group(jobs, index, ancestors), []


def _cycle(jobs: Sequence[ReplicatedJob], index: dict[str, int]) -> list[str]:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        stack.append(name)
        for dep in jobs[index[name]].depends_on:
            if state.get(dep.name) == 1:
                return [*stack[stack.index(dep.name) :], dep.name]
            if dep.name not in state and (found := visit(dep.name)):
                return found
        stack.pop()
        state[name] = 2
        return []

    for job in jobs:
        if job.name not in state and (found := visit(job.name)):
            return found
    return []


def _group(
    jobs: Sequence[ReplicatedJob], index: dict[str, int], ancestors: Sequence[Ancestor | None]
) -> list[StepShape]:
    parent = list(range(len(jobs)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i, job in enumerate(jobs):
        for dep in job.depends_on:
            if dep.status == "Ready":
                parent[max(root(i), root(index[dep.name]))] = min(root(i), root(index[dep.name]))
    members: dict[int, list[int]] = {}
    for i in range(len(jobs)):
        members.setdefault(root(i), []).append(i)
    step_of = {i: jobs[r].name for r, idxs in members.items() for i in idxs}
    after_trainer = _after_trainer(jobs, index, ancestors)
    shapes = []
    for r in sorted(members):
        idxs = members[r]
        deps = sorted(
            {
                step_of[index[d.name]]
                for i in idxs
                for d in jobs[i].depends_on
                if d.status == DependsOnStatus.COMPLETE.value
            }
            - {jobs[r].name},
            key=lambda name: index[name],
        )
        shapes.append(
            StepShape(jobs[r].name, tuple(idxs), tuple(deps), _role(idxs, ancestors, after_trainer))
        )
    return shapes


def _after_trainer(
    jobs: Sequence[ReplicatedJob], index: dict[str, int], ancestors: Sequence[Ancestor | None]
) -> set[int]:
    after: set[int] = set()
    for i, job in enumerate(jobs):  # runtime order is topological (deps listed first)
        for dep in job.depends_on:
            k = index[dep.name]
            if (ancestors[k] is Ancestor.TRAINER or k in after) and ancestors[
                i
            ] is not Ancestor.TRAINER:
                after.add(i)
    return after


def _role(idxs: list[int], ancestors: Sequence[Ancestor | None], after: set[int]) -> StepRole:
    kinds = {ancestors[i] for i in idxs}
    if Ancestor.TRAINER in kinds:
        return StepRole.TRAINER
    if kinds & {Ancestor.DATASET_INITIALIZER, Ancestor.MODEL_INITIALIZER}:
        return StepRole.INITIALIZER
    if any(i in after for i in idxs):
        return StepRole.POST_PROCESSOR
    return StepRole.AUXILIARY


def _err(path: str, message: str) -> InputError:
    return InputError(path, message, reason=Reason.INVALID_RUNTIME)
