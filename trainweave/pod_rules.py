"""Pod rules of the Kubernetes API server (k8s.io/kubernetes v1.36.4), checked offline.

A pod template the API server refuses is only refused when Argo creates the pod, after the step
was admitted, and on every retry: here it is an input error naming the same field (paths in the
runtime or TrainJob it came from; map keys as ``.key`` where the API writes ``[key]``).

- Required fields and enums: ``trainweave.k8s_rules``, generated from the pinned module's OpenAPI
  (``hack/k8s_rules.py``). A required field is missing when absent, empty or zero, as the API
  server's Go zero values are ("Required value").
- Value rules: ``pkg/apis/core/validation/validation.go``, by the function cited at each one;
  resource quantities in ``trainweave.pod_resources``.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

from trainweave import k8s_rules, k8s_schema, pod_resources, pod_spec_rules
from trainweave.errors import InputError
from trainweave.labels import Reason

Json = dict[str, Any]

# OpenAPI-required fields validation.go accepts empty or zero: validateISCSIVolumeSource (lun
# 0..255), validateSleepAction (0 s with PodLifecycleSleepActionAllowZero), validateHTTPGetAction
# (checks header names only), validateSysctls (names only), ValidatePreferredSchedulingTerms
# (an empty preference term matches every node)
_EMPTY_ALLOWED = {
    ("V1ISCSIVolumeSource", "lun"),
    ("V1SleepAction", "seconds"),
    ("V1HTTPHeader", "value"),
    ("V1Sysctl", "value"),
    ("V1PreferredSchedulingTerm", "preference"),
    # validateContainers' Required: adapters.trainjob.trainer says "must hold at least one container"
    ("V1PodSpec", "containers"),
}
_CONTAINER_KEYS = ("initContainers", "containers")


def schema_errors(value: Any, type_name: str, path: str, reason: Reason) -> list[InputError]:
    """Missing required fields and values outside an enum, anywhere in ``value``.

    An empty string is never refused as outside an enum: the API server defaults it
    (``SetDefaults_Container``: imagePullPolicy, terminationMessagePolicy; ``SetDefaults_PodSpec``:
    restartPolicy, dnsPolicy) or reads it as "any" (toleration operator and effect).
    """
    errors = []
    for obj, model, where in k8s_schema.objects(value, type_name, path):
        for key in k8s_rules.REQUIRED.get(model, ()):
            if (model, key) not in _EMPTY_ALLOWED and _empty(obj.get(key)):
                errors.append(InputError(f"{where}.{key}", "Required value", reason=reason))
        for key, allowed in k8s_rules.ENUMS.get(model, {}).items():
            values = obj.get(key)
            for item in values if isinstance(values, list) else [values]:
                if isinstance(item, str) and item and item not in allowed:
                    errors.append(_unsupported(f"{where}.{key}", item, allowed, reason))
    return errors


def pod_spec_errors(
    spec: Json, path: str, reason: Reason, extra_volumes: Iterable[str] = ()
) -> list[InputError]:
    """What the API server refuses in pod spec ``spec`` (at ``path``): ``ValidatePodSpec``.

    ``extra_volumes``: volumes added to the pod later (JobSet's volumeClaimPolicies), which
    volumeMounts may name.
    """
    errors = schema_errors(spec, "V1PodSpec", path, reason)
    volumes = spec.get("volumes") or []
    errors += _volume_errors(volumes, f"{path}.volumes", reason)
    known = {_text(v.get("name")) for v in volumes if isinstance(v, dict)} | set(extra_volumes)
    names: set[Any] = set()
    for key in _CONTAINER_KEYS[::-1]:  # validateContainers, then validateInitContainers
        for i, container in enumerate(spec.get(key) or []):
            if not isinstance(container, dict):
                continue
            where = f"{path}.{key}[{i}]"
            name = _text(container.get("name"))
            if name and name in names:
                # validateContainers / validateInitContainers: unique across both lists
                errors.append(
                    InputError(f"{where}.name", f"Duplicate value: {name!r}", reason=reason)
                )
            names.add(name)
            errors += container_errors(container, where, reason, known)
            errors += _claim_errors(container, where, spec, reason)
    errors += _toleration_errors(spec.get("tolerations") or [], f"{path}.tolerations", reason)
    errors += pod_spec_rules.errors(spec, path, reason)
    return errors


def container_errors(
    container: Json, path: str, reason: Reason, volumes: set[str]
) -> list[InputError]:
    """validateContainerCommon: image, ports, env, envFrom, mounts of ``volumes``, resources."""
    errors = []
    if not container.get("image"):
        errors.append(InputError(f"{path}.image", "Required value", reason=reason))
    errors += _port_errors(container.get("ports") or [], f"{path}.ports", reason)
    errors += env_errors(container.get("env") or [], f"{path}.env", reason)
    errors += _env_from_errors(container.get("envFrom") or [], f"{path}.envFrom", reason)
    errors += _mount_errors(container, path, reason, volumes)
    errors += pod_resources.errors(container.get("resources"), f"{path}.resources", reason)
    return errors


def env_errors(env: list[Any], path: str, reason: Reason) -> list[InputError]:
    """validateEnvVarValueFrom: exactly one source under ``valueFrom``, and no ``value`` with it."""
    errors = []
    for i, var in enumerate(env):
        source = var.get("valueFrom") if isinstance(var, dict) else None
        if not isinstance(source, dict):
            continue
        sources = len([k for k, v in source.items() if v is not None])
        if sources >= 1 and var.get("value"):
            message = "Invalid value: may not be specified when `value` is not empty"
        elif sources != 1:
            message = (
                "Invalid value: must specify exactly one of: `fieldRef`, `resourceFieldRef`,"
                " `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`"
            )
        else:
            continue
        errors.append(InputError(f"{path}[{i}].valueFrom", message, reason=reason))
    return errors


def _env_from_errors(env_from: list[Any], path: str, reason: Reason) -> list[InputError]:
    # ValidateEnvFrom: the prefix an env var name (IsRelaxedEnvVarName); one source per item
    errors = []
    for i, item in enumerate(env_from):
        if not isinstance(item, dict):
            continue
        prefix = item.get("prefix")
        if isinstance(prefix, str) and prefix and (problem := k8s_schema.env_name_problem(prefix)):
            errors.append(InputError(f"{path}[{i}].prefix", problem, reason=reason))
        sources = [k for k in ("configMapRef", "secretRef") if item.get(k) is not None]
        if len(sources) != 1:
            errors.append(
                InputError(
                    f"{path}[{i}]",
                    "Invalid value: must specify exactly one of: `configMapRef` or `secretRef`",
                    reason=reason,
                )
            )
    return errors


def _port_errors(ports: list[Any], path: str, reason: Reason) -> list[InputError]:
    # validateContainerPorts: port names unique within the container
    errors = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        name = port.get("name") if isinstance(port, dict) else None
        if isinstance(name, str) and name and not k8s_schema.port_name_problem(name):
            if name in seen:
                errors.append(
                    InputError(f"{path}[{i}].name", f"Duplicate value: {name!r}", reason=reason)
                )
            seen.add(name)
    return errors


def _volume_errors(volumes: list[Any], path: str, reason: Reason) -> list[InputError]:
    # ValidateVolumes: unique names; validateVolumeSource: at most one source (none is an
    # emptyDir: pkg/apis/core/v1/defaults.go SetDefaults_Volume)
    errors = []
    seen: set[Any] = set()
    for i, volume in enumerate(volumes):
        if not isinstance(volume, dict):
            continue
        name = _text(volume.get("name"))
        if name and name in seen:
            errors.append(
                InputError(f"{path}[{i}].name", f"Duplicate value: {name!r}", reason=reason)
            )
        seen.add(name)
        sources = [k for k, v in volume.items() if k != "name" and v is not None]
        if len(sources) > 1:
            errors.append(
                InputError(
                    f"{path}[{i}].{sources[1]}",
                    "Forbidden: may not specify more than 1 volume type",
                    reason=reason,
                )
            )
    return errors


def _mount_errors(
    container: Json, path: str, reason: Reason, volumes: set[str]
) -> list[InputError]:
    # ValidateVolumeMounts, ValidateVolumeDevices: names a pod volume; paths unique; subPath and
    # subPathExpr relative without '..' (validateLocalDescendingPath)
    errors = []
    mount_paths: set[Any] = set()
    for i, mount in enumerate(container.get("volumeMounts") or []):
        if not isinstance(mount, dict):
            continue
        where = f"{path}.volumeMounts[{i}]"
        name, mount_path = _text(mount.get("name")), _text(mount.get("mountPath"))
        if name and name not in volumes:
            errors.append(InputError(f"{where}.name", f"Not found: {name!r}", reason=reason))
        if mount_path and mount_path in mount_paths:
            errors.append(
                InputError(
                    f"{where}.mountPath",
                    f"Invalid value: {mount_path!r}: must be unique",
                    reason=reason,
                )
            )
        mount_paths.add(mount_path)
        for key in ("subPath", "subPathExpr"):
            value = mount.get(key)
            if isinstance(value, str) and (problem := _descending_path(value)):
                errors.append(InputError(f"{where}.{key}", problem, reason=reason))
    devices: set[Any] = set()
    for i, device in enumerate(container.get("volumeDevices") or []):
        if not isinstance(device, dict):
            continue
        where = f"{path}.volumeDevices[{i}]"
        name = _text(device.get("name"))
        if name and name not in volumes:
            errors.append(InputError(f"{where}.name", f"Not found: {name!r}", reason=reason))
        if name and name in devices:
            errors.append(
                InputError(
                    f"{where}.name", f"Invalid value: {name!r}: must be unique", reason=reason
                )
            )
        devices.add(name)
    return errors


def _claim_errors(container: Json, path: str, spec: Json, reason: Reason) -> list[InputError]:
    # validateResourceClaimNames: a container's claim names one of the pod's resourceClaims
    pod_claims = {
        _text(c.get("name")) for c in spec.get("resourceClaims") or [] if isinstance(c, dict)
    }
    resources = container.get("resources")
    claims = (resources.get("claims") if isinstance(resources, dict) else None) or []
    return [
        InputError(
            f"{path}.resources.claims[{i}]",
            f"Not found: {claim.get('name')!r}: must be one of the names in pod.spec.resourceClaims",
            reason=reason,
        )
        for i, claim in enumerate(claims)
        if isinstance(claim, dict) and _text(claim.get("name")) not in pod_claims | {""}
    ]


def _descending_path(value: str) -> str:
    if posixpath.isabs(value):
        return f"Invalid value: {value!r}: must be a relative path"
    if ".." in value.split("/"):
        return f"Invalid value: {value!r}: must not contain '..'"
    return ""


def _toleration_errors(tolerations: list[Any], path: str, reason: Reason) -> list[InputError]:
    # ValidateTolerations: an empty key needs operator Exists; tolerationSeconds needs effect
    # NoExecute; operator Exists takes no value
    errors = []
    for i, tol in enumerate(tolerations):
        if not isinstance(tol, dict):
            continue
        where = f"{path}[{i}]"
        operator = tol.get("operator") or ""
        if not tol.get("key") and operator != "Exists":
            errors.append(
                InputError(
                    f"{where}.operator",
                    f"Invalid value: {operator!r}: operator must be Exists when `key` is empty",
                    reason=reason,
                )
            )
        elif operator == "Exists" and tol.get("value"):
            errors.append(
                InputError(
                    f"{where}.operator",
                    f"Invalid value: {tol['value']!r}: value must be empty when `operator` is 'Exists'",
                    reason=reason,
                )
            )
        if tol.get("tolerationSeconds") is not None and tol.get("effect") != "NoExecute":
            errors.append(
                InputError(
                    f"{where}.effect",
                    f"Invalid value: {tol.get('effect', '')!r}: effect must be 'NoExecute' when"
                    " `tolerationSeconds` is set",
                    reason=reason,
                )
            )
    return errors


def _text(value: Any) -> str:
    """A name or path as a string ("" when mistyped: ``k8s_schema`` reports that)."""
    return value if isinstance(value, str) else ""


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or (type(value) is int and value == 0)


def _unsupported(path: str, value: str, allowed: tuple[str, ...], reason: Reason) -> InputError:
    supported = ", ".join(f'"{a}"' for a in allowed)
    return InputError(
        path, f'Unsupported value: "{value}": supported values: {supported}', reason=reason
    )
