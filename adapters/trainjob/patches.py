"""TrainJob ``spec.runtimePatches`` -> the runtime's replicatedJob templates.

Pure. Follows kubeflow/trainer@v2.3.0 docs/operator-guides/runtime-patches.md:
patches apply in list order to JobSet metadata and, per replicatedJob, to Job
and pod metadata and a PodSpecPatch (serviceAccountName, volumes, init/
containers {env, volumeMounts, securityContext}, imagePullSecrets,
securityContext, terminationGracePeriodSeconds, nodeSelector, affinity,
tolerations, schedulingGates), merged as a strategic merge patch
(``adapters.trainjob.strategic``). ``env`` on the ``node`` and initializer containers is
rejected, as upstream's webhook does.
"""

from __future__ import annotations

from typing import Any

from trainweave import k8s_schema
from trainweave.adapters.trainjob import strategic
from trainweave.errors import InputError
from trainweave.labels import Reason

Json = dict[str, Any]
_POD_FIELDS = {
    "serviceAccountName",
    "volumes",
    "initContainers",
    "containers",
    "imagePullSecrets",
    "securityContext",
    "terminationGracePeriodSeconds",
    "nodeSelector",
    "affinity",
    "tolerations",
    "schedulingGates",
}
_ENV_FORBIDDEN = ("node", "dataset-initializer", "model-initializer")


def apply(
    replicated_jobs: list[Json], patches: list[Json]
) -> tuple[list[Json], Json, list[InputError]]:
    """(patched replicatedJobs, JobSet metadata patch, errors).

    ``replicated_jobs`` (each its ``name`` and ``template``) is patched in place and returned:
    pass a fresh copy (``trainer.job_inputs`` does). ``patches`` is never modified.
    """
    jobs = replicated_jobs
    jobset_meta: Json = {}
    errors: list[InputError] = []
    by_name = {job["name"]: job for job in jobs}
    for i, patch in enumerate(patches):
        base = f"spec.runtimePatches[{i}].trainingRuntimeSpec"
        spec = patch.get("trainingRuntimeSpec") or {}
        errors += _unknown(spec, {"template"}, base)
        template = spec.get("template") or {}
        errors += _unknown(template, {"metadata", "spec"}, f"{base}.template")
        _merge_meta(jobset_meta, template.get("metadata") or {})
        jobset_spec = template.get("spec") or {}
        errors += _unknown(jobset_spec, {"replicatedJobs"}, f"{base}.template.spec")
        for j, rpatch in enumerate(jobset_spec.get("replicatedJobs") or []):
            path = f"{base}.template.spec.replicatedJobs[{j}]"
            target = by_name.get(rpatch.get("name", ""))
            if target is None:
                errors.append(
                    _err(f"{path}.name", f"no replicatedJob {rpatch.get('name')!r} in the runtime")
                )
                continue
            errors += _patch_job(target, rpatch, path)
    return jobs, jobset_meta, errors


def _patch_job(job: Json, patch: Json, path: str) -> list[InputError]:
    errors = _unknown(patch, {"name", "template"}, path)
    jtpl = patch.get("template") or {}
    errors += _unknown(jtpl, {"metadata", "spec"}, f"{path}.template")
    target_tpl = job.setdefault("template", {})
    _merge_meta(target_tpl.setdefault("metadata", {}), jtpl.get("metadata") or {})
    jspec = jtpl.get("spec") or {}
    errors += _unknown(jspec, {"template"}, f"{path}.template.spec")
    ptpl = jspec.get("template") or {}
    errors += _unknown(ptpl, {"metadata", "spec"}, f"{path}.template.spec.template")
    pod_tpl = target_tpl.setdefault("spec", {}).setdefault("template", {})
    _merge_meta(pod_tpl.setdefault("metadata", {}), ptpl.get("metadata") or {})
    pspec = ptpl.get("spec") or {}
    ppath = f"{path}.template.spec.template.spec"
    errors += _unknown(pspec, _POD_FIELDS, ppath)
    errors += k8s_schema.check(
        {k: v for k, v in pspec.items() if k not in ("containers", "initContainers")},
        "V1PodSpec",
        ppath,
        Reason.INVALID_TRAINJOB,
    )
    if errors:
        return errors
    pod = pod_tpl.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for k, cpatch in enumerate(pspec.get(key) or []):
            errors += _check_container(pod.get(key) or [], cpatch, f"{ppath}.{key}[{k}]")
    if not errors:
        pod_tpl["spec"] = strategic.merge_pod_spec(pod, pspec)
    return errors


def _check_container(containers: list[Json], patch: Json, path: str) -> list[InputError]:
    errors = _unknown(patch, {"name", "env", "volumeMounts", "securityContext"}, path)
    name = patch.get("name")
    target = next((c for c in containers if c.get("name") == name), None)
    if target is None:
        return [*errors, _err(f"{path}.name", f"no container {name!r} in the runtime's pod")]
    if "env" in patch and name in _ENV_FORBIDDEN:
        errors.append(
            _err(
                f"{path}.env",
                f"must not be set for container {name!r}: use spec.trainer/spec.initializer",
            )
        )
    errors += k8s_schema.check(
        patch.get("env"), "List[V1EnvVar]", f"{path}.env", Reason.INVALID_TRAINJOB
    )
    errors += k8s_schema.check(
        patch.get("volumeMounts"),
        "List[V1VolumeMount]",
        f"{path}.volumeMounts",
        Reason.INVALID_TRAINJOB,
    )
    return errors


def _merge_meta(target: Json, patch: Json) -> None:
    for key in ("labels", "annotations"):
        if patch.get(key):
            target.setdefault(key, {}).update(patch[key])


def _unknown(value: Json, allowed: set[str], path: str) -> list[InputError]:
    if not isinstance(value, dict):
        return [_err(path, "must be an object")]
    return [
        _err(f"{path}.{key}", "unknown or unpatchable field") for key in value if key not in allowed
    ]


def _err(path: str, message: str) -> InputError:
    return InputError(path, message, reason=Reason.INVALID_TRAINJOB)
