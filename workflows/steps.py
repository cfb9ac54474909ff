"""Step builders: Trainer v2.3.0's step fields -> a :class:`GangStep`.

Pure. ``initializer``: ``storageUri`` -> ``STORAGE_URI`` env, ``env``, ``secretRef``
-> ``envFrom`` on the initializer container (Trainer's builder.go). ``trainer``:
``numNodes`` -> pods of one gang, GPUs per node -> requests and limits, the torch
plugin's ``PET_*`` env and port 29500, stable DNS. ``post_processor``: any
one-pod step after the trainer (trainweave's extension). Inputs may be Hera
objects (``Resources``, ``Env``/``SecretEnv``/``ConfigMapEnv``/``FieldEnv``/``ResourceEnv``,
``models.EnvVar``/``VolumeMount``/``Volume``) or wire dicts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from hera.workflows import ConfigMapEnv, Env, FieldEnv, ResourceEnv, Resources, SecretEnv
from hera.workflows import models as m
from pydantic import BaseModel

from trainweave.adapters.trainjob import wirelists
from trainweave.adapters.trainjob.jobspec import DEFAULT_BACKOFF_LIMIT
from trainweave.errors import InputError
from trainweave.labels import Ancestor, StepRole
from trainweave.model import RetryPolicy
from trainweave.workflows import checks
from trainweave.workflows.gang import GangStep

Json = dict[str, Any]
HeraEnv = Env | SecretEnv | ConfigMapEnv | FieldEnv | ResourceEnv
"""Hera's own env classes (``hera.workflows.env``), built with their public ``build()``."""
EnvLike = Mapping[str, str] | Sequence[Mapping[str, Any] | m.EnvVar | HeraEnv]
ResourcesLike = Resources | m.ResourceRequirements | Mapping[str, Any]


def initializer(
    name: str,
    image: str,
    storage_uri: str,
    queue: str,
    *,
    env: EnvLike | None = None,
    secret: str | None = None,
    resources: ResourcesLike | None = None,
    volume_mounts: Sequence[Mapping[str, Any] | m.VolumeMount] = (),
    volumes: Sequence[Mapping[str, Any] | m.Volume] = (),
    command: Sequence[str] | None = None,
    args: Sequence[str] | None = None,
    retry: int | RetryPolicy = DEFAULT_BACKOFF_LIMIT,
    ancestor: Ancestor | None = None,
    pod_spec: Mapping[str, Any] | None = None,
    dns: bool = False,
    outputs: None = None,
) -> GangStep:
    """A one-pod initializer: ``STORAGE_URI`` and ``env``, ``secret`` as ``envFrom``.

    ``ancestor`` defaults from the name (``dataset-initializer``/``model-initializer``).
    """
    _refuse_strings(f"initializer({name!r})", command=command, args=args)
    container = _container(name, image, command, args, resources, volume_mounts)
    user_env = _env(env)
    fields: Json = {"storageUri": storage_uri}
    if secret is not None:
        fields["secretRef"] = {"name": secret}
    errors = checks.container_errors({**container, "env": user_env or None}, initializer=fields)
    _check("initializer", name, queue, retry, errors, container, volumes, pod_spec, outputs)
    container["env"] = [{"name": "STORAGE_URI", "value": storage_uri}]
    wirelists.upsert_env(container, user_env)
    if secret:
        container["envFrom"] = [{"secretRef": {"name": secret}}]
    if ancestor is None and name in {a.value for a in Ancestor} - {Ancestor.TRAINER.value}:
        ancestor = Ancestor(name)
    step = GangStep(
        name,
        StepRole.INITIALIZER,
        queue,
        container,
        ancestor=ancestor,
        pod_spec=_pod_spec(pod_spec, volumes),
        retry=_retry(retry),
        dns=dns,
    )
    return _rendered("initializer", step, pod_spec, env_offset=1)


def trainer(
    name: str,
    image: str,
    command: Sequence[str],
    queue: str,
    *,
    nodes: int = 1,
    gpus_per_node: int = 0,
    gpu_resource: str = "nvidia.com/gpu",
    resources: ResourcesLike | None = None,
    env: EnvLike | None = None,
    args: Sequence[str] | None = None,
    torch: bool = True,
    nproc_per_node: int | None = None,
    volume_mounts: Sequence[Mapping[str, Any] | m.VolumeMount] = (),
    volumes: Sequence[Mapping[str, Any] | m.Volume] = (),
    retry: int | RetryPolicy = DEFAULT_BACKOFF_LIMIT,
    pod_spec: Mapping[str, Any] | None = None,
    subdomain: str | None = None,
    service: bool = True,
    priority_class: str | None = None,
    outputs: None = None,
) -> GangStep:
    """A gang of ``nodes`` trainer pods with stable DNS (``PET_*`` env when ``torch``).

    ``gpus_per_node`` adds ``gpu_resource`` to requests and limits; ``retry`` is
    a per-pod budget (``backoffLimitPerIndex``) or a full RetryPolicy. ``gpus_per_node`` and a
    different count of ``gpu_resource`` in ``resources`` are refused (which one is meant?).
    """
    _refuse_strings(f"trainer({name!r})", command=command, args=args)
    container = _container(name, image, command, args, resources, volume_mounts)
    if gpus_per_node:
        res = container.setdefault("resources", {})
        checks.refuse(f"trainer({name!r})", _gpu_conflicts(res, gpu_resource, gpus_per_node))
        for section in ("requests", "limits"):
            res.setdefault(section, {})[gpu_resource] = str(gpus_per_node)
    if env:
        container["env"] = _env(env)
    errors = checks.container_errors(
        container,
        nodes=nodes,
        nproc_per_node=nproc_per_node,
        torch=torch,
        gpus=(gpu_resource, gpus_per_node) if gpus_per_node else None,
    )
    _check("trainer", name, queue, retry, errors, container, volumes, pod_spec, outputs)
    step = GangStep(
        name,
        StepRole.TRAINER,
        queue,
        container,
        pods=nodes,
        ancestor=Ancestor.TRAINER,
        pod_spec=_pod_spec(pod_spec, volumes),
        retry=_retry(retry),
        torch=torch,
        nproc_per_node=nproc_per_node,
        dns=True,
        service=service,
        subdomain=subdomain,
        priority_class=priority_class,
    )
    gpus = (gpu_resource, gpus_per_node) if gpus_per_node else None
    return _rendered("trainer", step, pod_spec, gpus=gpus)


def post_processor(
    name: str,
    image: str,
    command: Sequence[str],
    queue: str,
    *,
    args: Sequence[str] | None = None,
    env: EnvLike | None = None,
    resources: ResourcesLike | None = None,
    volume_mounts: Sequence[Mapping[str, Any] | m.VolumeMount] = (),
    volumes: Sequence[Mapping[str, Any] | m.Volume] = (),
    retry: int | RetryPolicy = DEFAULT_BACKOFF_LIMIT,
    pod_spec: Mapping[str, Any] | None = None,
    dns: bool = False,
    outputs: None = None,
) -> GangStep:
    """A one-pod step after the trainer (exporter, evaluator): trainweave's extension."""
    _refuse_strings(f"post_processor({name!r})", command=command, args=args)
    container = _container(name, image, command, args, resources, volume_mounts)
    if env:
        container["env"] = _env(env)
    errors = checks.container_errors(container)
    _check("post_processor", name, queue, retry, errors, container, volumes, pod_spec, outputs)
    step = GangStep(
        name,
        StepRole.POST_PROCESSOR,
        queue,
        container,
        pod_spec=_pod_spec(pod_spec, volumes),
        retry=_retry(retry),
        dns=dns,
    )
    return _rendered("post_processor", step, pod_spec)


def _check(
    builder: str,
    name: str,
    queue: str,
    retry: int | RetryPolicy,
    errors: list[InputError],
    container: Json,
    volumes: Sequence[Mapping[str, Any] | m.Volume],
    pod_spec: Mapping[str, Any] | None,
    outputs: object,
) -> None:
    """Raise StepError for every argument the CLI would refuse (``workflows.checks``)."""
    pod = {
        "volume_mounts": (container.get("volumeMounts"), "List[V1VolumeMount]"),
        "volumes": ([_wire(v) for v in volumes], "List[V1Volume]"),
        "pod_spec": (dict(pod_spec) if pod_spec is not None else None, "V1PodSpec"),
    }
    errors = errors + checks.pod_errors(pod) + checks.queue_errors(queue)
    errors += checks.retry_errors(retry)
    if outputs is not None:
        errors.append(InputError("outputs", checks.OUTPUTS))
    checks.refuse(f"{builder}({name!r})", errors)


def _refuse_strings(source: str, **given: Sequence[str] | None) -> None:
    """A ``command`` or ``args`` given as one string (``"torchrun /workspace/train.py"``) would be
    a list of its characters, one argument each: refused rather than split (how to split is the
    shell's business: quotes, escapes)."""
    errors = [
        InputError(
            key,
            f"is the string {value!r}: it must be a list of strings, one argument each (as a"
            f" string it would be {len(value)} one-character arguments), e.g."
            f" {value.split()!r}",
        )
        for key, value in given.items()
        if isinstance(value, str)
    ]
    checks.refuse(source, errors)


def _gpu_conflicts(resources: Json, gpu: str, count: int) -> list[InputError]:
    """``gpus_per_node`` beside a different count of the same resource in ``resources``."""
    return [
        InputError(
            "gpus_per_node",
            f"{count} conflicts with resources' {section} {gpu}: {resources[section][gpu]!r};"
            " give the GPUs once (gpus_per_node, or resources)",
        )
        for section in ("requests", "limits")
        if gpu in (resources.get(section) or {}) and str(resources[section][gpu]) != str(count)
    ]


def _rendered(
    builder: str,
    step: GangStep,
    pod_spec: Mapping[str, Any] | None,
    env_offset: int = 0,
    gpus: tuple[str, int] | None = None,
) -> GangStep:
    """``step``, once its final pod passes the API server's rules (``checks.rendered_errors``);
    ``env_offset``: env entries the builder puts before the author's."""
    own = len((pod_spec or {}).get("volumes") or [])
    spec = step.job("workflow").pod_template["spec"]
    errors = checks.rendered_errors(spec, own, env_offset, gpus)
    checks.refuse(f"{builder}({step.name!r})", errors)
    return step


def _container(
    name: str,
    image: str,
    command: Sequence[str] | None,
    args: Sequence[str] | None,
    resources: ResourcesLike | None,
    volume_mounts: Sequence[Mapping[str, Any] | m.VolumeMount],
) -> Json:
    out: Json = {"name": name, "image": image}
    if command:
        out["command"] = list(command)
    if args:
        out["args"] = list(args)
    if resources is not None:
        out["resources"] = _resources(resources)
    if volume_mounts:
        out["volumeMounts"] = [_wire(v) for v in volume_mounts]
    return out


def _resources(resources: ResourcesLike) -> Json:
    if isinstance(resources, Resources):
        resources = resources.build()
    raw = _wire(resources)
    return {
        section: {k: str(v) for k, v in (raw.get(section) or {}).items()}
        for section in ("limits", "requests")
        if raw.get(section)
    }


def _env(env: EnvLike | None) -> list[Json]:
    if env is None:
        return []
    if isinstance(env, Mapping):
        return [{"name": k, "value": v} for k, v in env.items()]
    out = []
    for e in env:
        if isinstance(e, Env) and e.value_from_input is not None:
            raise ValueError(
                f"env {e.name!r}: value_from_input needs a template input; a trainweave step's"
                " pod template takes none (pass value=)"
            )
        out.append(_wire(e.build() if isinstance(e, HeraEnv) else e))
    return out


def _pod_spec(
    pod_spec: Mapping[str, Any] | None, volumes: Sequence[Mapping[str, Any] | m.Volume]
) -> Json:
    out = copy.deepcopy(dict(pod_spec or {}))
    if volumes:
        out["volumes"] = [*out.get("volumes", []), *(_wire(v) for v in volumes)]
    return out


def _retry(retry: int | RetryPolicy) -> RetryPolicy:
    return retry if isinstance(retry, RetryPolicy) else RetryPolicy(retry)


def _wire(value: Mapping[str, Any] | BaseModel) -> Json:
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True, mode="json")
    return copy.deepcopy(dict(value))
