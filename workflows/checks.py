"""The CLI's checks, asked of the Hera builders' arguments: one validation, reused.

Pure. A builder's container arguments are read as the TrainJob the CLI would parse
(``inputs.parse_trainjob``: the CRD's field rules, ``k8s_schema`` for env and resources, the
``storageUri`` rule), then judged by the torch plugin's reserved ``PET_*`` env
(``Policy.step_errors``) and the pod limit (``validate.size_errors``). Pod-level
arguments (``volumes``, ``volume_mounts``, ``pod_spec``) go through ``k8s_schema.check`` as a
runtime's pod template does; the queue and the retry budget through ``names.queue_error`` and
``jobspec.budget_error``, the rules the CLI applies to a runtime's queue label and
``backoffLimit``. Then the step's final pod goes through ``pod_rules.pod_spec_errors``, as every
pod ``trainweave render`` renders does (``rendered_errors``). Each error names the builder and its argument, in the CLI's shape
(``FILE: FIELD.PATH: reason``): ``trainer('node'): gpus_per_node: '-1' must be greater than or
equal to 0``.

A step's Task has no outputs (``OUTPUTS``): its pod template is a containerSet whose one
container keeps the step's name (the Kubeflow SDK finds it by that name), and Argo v4.0.7
takes outputs of a containerSet only from a container named ``main``
(``workflow/validate/validate.go`` ``validateLeaf``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from trainweave import inputs, k8s_schema, pod_rules
from trainweave.adapters import names
from trainweave.adapters.trainjob import jobspec, policies, validate
from trainweave.errors import InputError, InputErrors
from trainweave.labels import Ancestor, Reason
from trainweave.model import Job, RetryPolicy

Json = dict[str, Any]

OUTPUTS = (
    "a trainweave step has no outputs: Argo v4.0.7 reads a containerSet's outputs only from a"
    " container named 'main', and the step's container keeps its own name. Pass data through a"
    " volume both steps mount (the Workflow's volume_claim_templates, or a PVC in volumes= and"
    " volume_mounts=). To branch on a value, read the file in a plain Hera template that mounts"
    " the same volume and declares it as an output parameter; a `when` may name that task's"
    " output (docs/hera.md 'Passing data between steps', examples/hera/eval_gate.py)"
)

# TrainJob field -> builder argument, most specific first.
_ARGS = {
    "spec.initializer.dataset.storageUri": "storage_uri",
    "spec.initializer.dataset.secretRef.name": "secret",
    "spec.initializer.dataset.secretRef": "secret",
    "spec.trainer.image": "image",
    "spec.trainer.command": "command",
    "spec.trainer.args": "args",
    "spec.trainer.env": "env",
    "spec.trainer.numNodes": "nodes",
    "spec.trainer.resourcesPerNode": "resources",
    "spec.trainer.numProcPerNode": "nproc_per_node",
}
_SECTIONS = ("limits", "requests")
_OUTPUT_REF = re.compile(r"tasks\.([A-Za-z0-9][-A-Za-z0-9]*)\.outputs")


class StepError(InputErrors, ValueError):
    """Builder arguments the CLI would refuse: one ``InputError`` each, its ``source`` the
    builder call (``trainer('node')``) and its ``path`` the argument. A ValueError too, as
    Hera's own template checks raise."""


def refuse(source: str, errors: Iterable[InputError]) -> None:
    """Raise StepError from ``source`` (the call, ``trainer('node')``) when there are errors
    (duplicates dropped)."""
    unique = list(dict.fromkeys(e.at(source) for e in errors))
    if unique:
        raise StepError(unique)


def container_errors(
    container: Json,
    *,
    nodes: int | None = None,
    nproc_per_node: int | None = None,
    torch: bool = False,
    initializer: Json | None = None,
    gpus: tuple[str, int] | None = None,
) -> list[InputError]:
    """The container's image, command, args, env and resources, and the TrainJob fields given
    (``nodes``, ``nproc_per_node``, ``initializer``: storageUri and secretRef), judged as the
    CLI judges the TrainJob carrying them; ``gpus``: (resource, count) set by
    ``gpus_per_node``."""
    trainer = {
        "image": container.get("image"),
        "command": container.get("command"),
        "args": container.get("args"),
        "env": container.get("env"),
        "resourcesPerNode": container.get("resources"),
        "numNodes": nodes,
        "numProcPerNode": nproc_per_node,
    }
    spec: Json = {
        "runtimeRef": {"name": "step"},
        "trainer": {k: v for k, v in trainer.items() if v is not None},
    }
    if initializer is not None:
        spec["initializer"] = {"dataset": initializer}
    doc = {"apiVersion": inputs.API_VERSION, "kind": "TrainJob", "metadata": {"name": "step"}}
    where = dict(_ARGS)
    if gpus is not None:
        for section in ("limits", "requests"):
            where = {f"spec.trainer.resourcesPerNode.{section}.{gpus[0]}": "gpus_per_node", **where}
    try:
        trainjob = inputs.parse_trainjob({**doc, "spec": spec})
    except InputErrors as exc:
        return [_renamed(e, where) for e in exc.errors]
    errors: list[InputError] = []
    errors += policies.of_builder(torch=torch).step_errors(trainjob)
    if nodes is not None:
        job = Job("node", Ancestor.TRAINER, 1, nodes, {}, RetryPolicy(0))
        errors += validate.size_errors([job])
    return [_renamed(e, where) for e in errors]


def pod_errors(arguments: Mapping[str, tuple[Any, str]]) -> list[InputError]:
    """Each pod-level argument (name -> (value, Kubernetes type)) as ``k8s_schema`` reads a
    runtime's pod template: unknown and mistyped fields, names, quantities."""
    return [
        error
        for arg, (value, type_name) in arguments.items()
        for error in k8s_schema.check(value, type_name, arg, Reason.INVALID_RUNTIME)
    ]


def rendered_errors(
    pod_spec: Json, own_volumes: int, env_offset: int, gpus: tuple[str, int] | None
) -> list[InputError]:
    """The step's final pod as the API server judges it: ``pod_rules.pod_spec_errors``, the
    rules the CLI applies to every rendered pod. Its mounts may name volumes the Workflow adds
    (``volumes``, ``volumeClaimTemplates``). Paths name the builder argument: the container's
    fields, ``volumes`` (after the ``own_volumes`` of ``pod_spec``), ``env`` (after the builder's
    own ``env_offset`` entries), ``gpus_per_node``, else ``pod_spec``."""
    mounts = {
        mount.get("name")
        for container in pod_spec.get("containers") or []
        for mount in container.get("volumeMounts") or []
    }
    errors = pod_rules.pod_spec_errors(pod_spec, "pod", Reason.INVALID_RUNTIME, mounts)
    named = [  # the builder's step container is named after the step (its ``name``)
        InputError("name" if key == "containers" else f"pod_spec.{key}[{i}].name", why)
        for key in ("containers", "initContainers")
        for i, c in enumerate(pod_spec.get(key) or [])
        if (why := validate.argo_reserved(str(c.get("name", ""))))
    ]
    return named + [_pod_argument(e, own_volumes, env_offset, gpus) for e in errors]


def _pod_argument(
    error: InputError, own_volumes: int, env_offset: int, gpus: tuple[str, int] | None
) -> InputError:
    path = error.path
    if match := re.match(r"^pod\.containers\[0\]\.env\[(\d+)\](.*)$", path):
        i = int(match.group(1)) - env_offset
        path = f"env[{i}]{match.group(2)}" if i >= 0 else "storage_uri"
    elif match := re.match(r"^pod\.volumes\[(\d+)\](.*)$", path):
        i = int(match.group(1))
        path = f"pod_spec.volumes[{i}]" if i < own_volumes else f"volumes[{i - own_volumes}]"
        path += match.group(2)
    elif path.startswith("pod.containers[0]."):
        rest = path.removeprefix("pod.containers[0].")
        field = rest.split(".")[0].split("[")[0]
        gpu = gpus is not None and rest in (f"resources.{s}.{gpus[0]}" for s in _SECTIONS)
        renamed = {"volumeMounts": "volume_mounts", "ports": "container.ports"}
        path = "gpus_per_node" if gpu else renamed.get(field, field) + rest[len(field) :]
    else:
        path = "pod_spec" + path.removeprefix("pod")
    return replace(error, path=path)


def queue_errors(queue: str) -> list[InputError]:
    """The queue as Kueue's pod webhook takes it (``names.queue_error``)."""
    problem = names.queue_error(queue)
    return [InputError("queue", problem)] if problem else []


def retry_errors(retry: int | RetryPolicy) -> list[InputError]:
    """A per-pod budget as batch/v1 takes ``backoffLimitPerIndex`` (``jobspec.budget_error``)."""
    path, budget = (
        ("retry.budget", retry.budget) if isinstance(retry, RetryPolicy) else ("retry", retry)
    )
    problem = jobspec.budget_error(budget)
    return [InputError(path, problem)] if problem else []


def output_refs(value: Any) -> set[str]:
    """Task names whose outputs ``value`` (a string, or lists/dicts/models of strings) names."""
    if isinstance(value, str):
        return set(_OUTPUT_REF.findall(value))
    if isinstance(value, Mapping):
        return set().union(*(output_refs(v) for v in value.values()))
    if isinstance(value, list | tuple):
        return set().union(*(output_refs(v) for v in value))
    if hasattr(value, "value"):  # Hera's Parameter
        return output_refs(getattr(value, "value", None))
    return set()


def _renamed(error: InputError, where: Mapping[str, str]) -> InputError:
    """``error`` with its TrainJob path replaced by the builder argument it came from."""
    for prefix, arg in where.items():
        if error.path == prefix or error.path.startswith((prefix + ".", prefix + "[")):
            return replace(error, path=arg + error.path[len(prefix) :])
    return error
