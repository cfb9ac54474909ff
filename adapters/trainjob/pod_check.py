"""The rendered pods judged as the API server would (``trainweave.pod_rules``). Pure.

Each job's final pod (runtime template, runtimePatches, TrainJob fields, mlPolicy env) is checked
once; an error the runtime's own template already has names the runtime field, one the TrainJob
brought in names the TrainJob field that did (``spec.trainer.resourcesPerNode``, ``.image``,
``.env[i]``, ``spec.initializer.*.env[i]``, the last ``spec.runtimePatches[i]`` that sets the
field), else the runtime path of the rendered pod.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from trainweave import pod_rules
from trainweave.adapters.argo.workflow import container_errors
from trainweave.adapters.kueue import tas
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec, TrainJob
from trainweave.labels import Ancestor, Reason
from trainweave.model import Job

Json = dict[str, Any]
_RJ = "spec.template.spec.replicatedJobs"
_CONTAINER = re.compile(r"^\.(containers|initContainers)\[(\d+)\](.*)$")
_ENV = re.compile(r"^\.env\[(\d+)\](.*)$")


def rendered_errors(trainjob: TrainJob, spec: RuntimeSpec, jobs: Sequence[Job]) -> list[InputError]:
    """The API server's refusals of each job's final pod (``jobs`` in the runtime's order)."""
    claims = [
        (t.get("metadata") or {}).get("name", "")
        for p in spec.template.spec.volume_claim_policies
        for t in p.templates
    ]
    errors: list[InputError] = []
    for i, (job, rjob) in enumerate(zip(jobs, spec.template.spec.replicated_jobs, strict=True)):
        errors += _annotation_errors(i, job, rjob.template, trainjob)
        base = f"{_RJ}[{i}].template.spec.template.spec"
        final = pod_rules.pod_spec_errors(job.pod_template["spec"], base, Reason.INVALID_RUNTIME)
        final += container_errors(job.containers, f"{base}.containers")
        if not final:
            continue
        own_spec = ((rjob.template.get("spec") or {}).get("template") or {}).get("spec") or {}
        own = {
            e.path
            for e in pod_rules.pod_spec_errors(own_spec, base, Reason.INVALID_RUNTIME, claims)
            + container_errors(own_spec.get("containers") or [], f"{base}.containers")
        }
        for error in final:
            if error.path in own:
                errors.append(error)
            else:
                errors.append(_attribute(error, base, trainjob, job))
    return errors


def _annotation_errors(
    i: int, job: Job, own_template: Json, trainjob: TrainJob
) -> list[InputError]:
    """Kueue's refusals of the final pod's TAS annotations, under the runtime's field when its
    own annotations already have them, else under the last runtimePatch that sets annotations
    of this job."""
    final = (job.pod_template.get("metadata") or {}).get("annotations") or {}
    where = f"{_RJ}[{i}].template.spec.template.metadata.annotations"
    errors = tas.annotation_errors(final, where)
    if not errors:
        return []
    own_pod = ((own_template.get("spec") or {}).get("template") or {}).get("metadata") or {}
    own = {e.message for e in tas.annotation_errors(own_pod.get("annotations") or {}, where)}
    patch = _annotations_patch(trainjob, job.name)
    return [
        e
        if e.message in own or patch is None
        else replace(e, path=patch + e.path.removeprefix(where), reason=Reason.INVALID_TRAINJOB)
        for e in errors
    ]


def _annotations_patch(trainjob: TrainJob, name: str) -> str | None:
    """The path of the annotations the last runtimePatch sets on job ``name``'s pod, or None."""
    for p, patch in reversed(list(enumerate(trainjob.spec.runtime_patches))):
        spec = ((patch.training_runtime_spec or {}).get("template") or {}).get("spec") or {}
        for j, rpatch in enumerate(spec.get("replicatedJobs") or []):
            pod = ((rpatch.get("template") or {}).get("spec") or {}).get("template") or {}
            if rpatch.get("name") == name and (pod.get("metadata") or {}).get("annotations"):
                return (
                    f"spec.runtimePatches[{p}].trainingRuntimeSpec.template.spec"
                    f".replicatedJobs[{j}].template.spec.template.metadata.annotations"
                )
    return None


def _attribute(error: InputError, base: str, trainjob: TrainJob, job: Job) -> InputError:
    """``error`` under the TrainJob field that put its value into the pod, when one did."""
    rest = error.path.removeprefix(base)
    where = _field_path(rest, trainjob, job) or _patch_path(rest, trainjob, job)
    return replace(error, path=where, reason=Reason.INVALID_TRAINJOB) if where else error


def _field_path(rest: str, trainjob: TrainJob, job: Job) -> str:
    """The trainer or initializer field of ``trainjob`` that set ``rest`` of the pod, or ""."""
    found = _CONTAINER.match(rest)
    if not found:
        return ""
    key, index, rest = found.group(1), int(found.group(2)), found.group(3)
    container: Json = job.pod_template["spec"][key][index]
    tj = trainjob.spec
    if job.ancestor is Ancestor.TRAINER and container.get("name") == "node" and tj.trainer:
        trainer = tj.trainer
        if rest.startswith(".resources") and trainer.resources_per_node is not None:
            return "spec.trainer.resourcesPerNode" + rest.removeprefix(".resources")
        if rest == ".image" and trainer.image is not None:
            return "spec.trainer.image"
        return _env_path(rest, container, trainer.env, "spec.trainer.env")
    if job.ancestor in (Ancestor.DATASET_INITIALIZER, Ancestor.MODEL_INITIALIZER):
        which = "dataset" if job.ancestor is Ancestor.DATASET_INITIALIZER else "model"
        source = getattr(tj.initializer, which) if tj.initializer is not None else None
        if source is not None and container.get("name") == job.name:
            return _env_path(rest, container, source.env, f"spec.initializer.{which}.env")
    return ""


def _patch_path(rest: str, trainjob: TrainJob, job: Job) -> str:
    """The field of the last runtimePatch that sets ``rest`` of ``job``'s pod, or ""."""
    top = re.match(r"^\.(\w+)", rest)
    if not top:
        return ""
    for p, patch in reversed(list(enumerate(trainjob.spec.runtime_patches))):
        spec = ((patch.training_runtime_spec or {}).get("template") or {}).get("spec") or {}
        for j, rpatch in enumerate(spec.get("replicatedJobs") or []):
            if rpatch.get("name") != job.name:
                continue
            base = (
                f"spec.runtimePatches[{p}].trainingRuntimeSpec.template.spec.replicatedJobs[{j}]"
                ".template.spec.template.spec"
            )
            pod = ((rpatch.get("template") or {}).get("spec") or {}).get("template") or {}
            pod_spec = pod.get("spec") or {}
            found = _CONTAINER.match(rest)
            if not found and top.group(1) in pod_spec:
                return base + rest
            if found:
                key, index, sub = found.group(1), int(found.group(2)), found.group(3)
                name = job.pod_template["spec"][key][index].get("name")
                for m, cpatch in enumerate(pod_spec.get(key) or []):
                    field = re.match(r"^\.(\w+)", sub)
                    if cpatch.get("name") == name and field and field.group(1) in cpatch:
                        path = f"{base}.{key}[{m}]"
                        container = job.pod_template["spec"][key][index]
                        env = _env_path(sub, container, cpatch.get("env") or [], f"{path}.env")
                        return env or path + sub
    return ""


def _env_path(rest: str, container: Json, env: list[Json], path: str) -> str:
    found = _ENV.match(rest)
    if not found:
        return ""
    name = (container.get("env") or [])[int(found.group(1))].get("name")
    index = next((i for i, var in enumerate(env) if var.get("name") == name), None)
    return "" if index is None else f"{path}[{index}]{found.group(2)}"
