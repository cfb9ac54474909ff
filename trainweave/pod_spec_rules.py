"""More of ``ValidatePodSpec``'s rules (k8s.io/kubernetes v1.36.4), checked offline (issue 38).

Each function cites the one in ``pkg/apis/core/validation/validation.go`` it follows;
``trainweave.pod_rules.pod_spec_errors`` calls ``errors``. Pure.

- ``validateContainerCommon``: an image without leading or trailing whitespace;
- ``validateContainerRestartPolicy`` / ``validateInitContainerRestartPolicy``: a container's
  ``restartPolicy`` is Always, Never or OnFailure (``ContainerRestartRules`` is beta and on in
  v1.36, so an init container may be Never or OnFailure); an init container that is not a
  sidecar (``restartPolicy: Always``) takes no probes and no lifecycle;
- ``validateHandler`` (probes and lifecycle hooks): exactly one handler;
- ``validatePodHostNetworkDeps``: with ``hostNetwork`` a ``hostPort`` equals its
  ``containerPort`` (an unset one is defaulted to it);
- ``ValidateSecurityContext``: ``allowPrivilegeEscalation: false`` with ``privileged`` or
  ``CAP_SYS_ADMIN``;
- ``validatePodSpecSecurityContext``: ``hostPID`` with ``shareProcessNamespace``;
- ``ValidateLabels`` of ``nodeSelector``;
- ``validatePodDNSConfig``: ``dnsPolicy: None`` needs a ``dnsConfig`` with a nameserver.
"""

from __future__ import annotations

from typing import Any

from trainweave import object_meta
from trainweave.errors import InputError
from trainweave.labels import Reason

Json = dict[str, Any]

RESTART_POLICIES = ("Always", "Never", "OnFailure")  # supportedContainerRestartPolicies
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")  # handlerFromProbe
_HOOK_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")  # handlerFromLifecycle


def errors(spec: Json, path: str, reason: Reason) -> list[InputError]:
    """The rules above, over pod spec ``spec`` at ``path``."""
    out: list[InputError] = []
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or []):
            if isinstance(container, dict):
                out += _container(container, f"{path}.{key}[{i}]", key == "initContainers", reason)
    if spec.get("hostNetwork") is True:
        out += _host_network(spec, path, reason)
    if spec.get("hostPID") is True and spec.get("shareProcessNamespace") is True:
        # the API server names spec.securityContext.shareProcessNamespace (its internal PodSpec
        # keeps the field in the security context); the pod's own field is this one
        out.append(
            InputError(
                f"{path}.shareProcessNamespace",
                "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
                reason=reason,
            )
        )
    out += object_meta.labels_errors(spec.get("nodeSelector"), f"{path}.nodeSelector", reason)
    out += _dns(spec, path, reason)
    return out


def _container(container: Json, path: str, init: bool, reason: Reason) -> list[InputError]:
    out = []
    image = container.get("image")
    if isinstance(image, str) and image != image.strip():
        out.append(
            InputError(
                f"{path}.image",
                f"Invalid value: {image!r}: must not have leading or trailing whitespace",
                reason=reason,
            )
        )
    policy = container.get("restartPolicy")
    if isinstance(policy, str) and policy not in RESTART_POLICIES:
        supported = ", ".join(f'"{p}"' for p in RESTART_POLICIES)
        out.append(
            InputError(
                f"{path}.restartPolicy",
                f'Unsupported value: "{policy}": supported values: {supported}',
                reason=reason,
            )
        )
    sidecar = init and policy == "Always"
    for probe in _PROBES:
        if container.get(probe) is None:
            continue
        if init and not sidecar:  # validateInitContainers
            out.append(_not_for_init(f"{path}.{probe}", reason))
        elif isinstance(container[probe], dict):
            out += _handler(container[probe], _PROBE_HANDLERS, f"{path}.{probe}", reason)
    lifecycle = container.get("lifecycle")
    if lifecycle is not None and init and not sidecar:
        out.append(_not_for_init(f"{path}.lifecycle", reason))
    elif isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            if isinstance(lifecycle.get(hook), dict):
                out += _handler(lifecycle[hook], _HOOK_HANDLERS, f"{path}.lifecycle.{hook}", reason)
    out += _security_context(container.get("securityContext"), f"{path}.securityContext", reason)
    return out


def _not_for_init(path: str, reason: Reason) -> InputError:
    return InputError(
        path, "Forbidden: may not be set for init containers without restartPolicy=Always", reason
    )


def _handler(handler: Json, kinds: tuple[str, ...], path: str, reason: Reason) -> list[InputError]:
    """validateHandler: one handler; the second named (in validateHandler's order)."""
    given = [k for k in kinds if handler.get(k) is not None]
    if not given:
        return [InputError(path, "Required value: must specify a handler type", reason=reason)]
    return [
        InputError(
            f"{path}.{kind}", "Forbidden: may not specify more than 1 handler type", reason=reason
        )
        for kind in given[1:]
    ]


def _security_context(context: Any, path: str, reason: Reason) -> list[InputError]:
    if not isinstance(context, dict) or context.get("allowPrivilegeEscalation") is not False:
        return []
    out = []
    if context.get("privileged") is True:
        out.append(
            InputError(
                path,
                "Invalid value: cannot set `allowPrivilegeEscalation` to false and `privileged`"
                " to true",
                reason=reason,
            )
        )
    capabilities = context.get("capabilities")
    added = capabilities.get("add") if isinstance(capabilities, dict) else None
    if isinstance(added, list) and "CAP_SYS_ADMIN" in added:
        out.append(
            InputError(
                path,
                "Invalid value: cannot set `allowPrivilegeEscalation` to false and"
                " `capabilities.Add` CAP_SYS_ADMIN",
                reason=reason,
            )
        )
    return out


def _host_network(spec: Json, path: str, reason: Reason) -> list[InputError]:
    out = []
    for i, container in enumerate(spec.get("containers") or []):
        ports = container.get("ports") if isinstance(container, dict) else None
        for j, port in enumerate(ports if isinstance(ports, list) else []):
            if not isinstance(port, dict):
                continue
            host, target = port.get("hostPort"), port.get("containerPort")
            if isinstance(host, int) and host != 0 and host != target:
                out.append(
                    InputError(
                        f"{path}.containers[{i}].ports[{j}].hostPort",
                        f"Invalid value: {host}: must match `containerPort` when `hostNetwork`"
                        " is true",
                        reason=reason,
                    )
                )
    return out


def _dns(spec: Json, path: str, reason: Reason) -> list[InputError]:
    if spec.get("dnsPolicy") != "None":
        return []
    config = spec.get("dnsConfig")
    if not isinstance(config, dict):
        return [
            InputError(
                f"{path}.dnsConfig",
                "Required value: must provide `dnsConfig` when `dnsPolicy` is None",
                reason=reason,
            )
        ]
    if not config.get("nameservers"):
        return [
            InputError(
                f"{path}.dnsConfig.nameservers",
                "Required value: must provide at least one DNS nameserver when `dnsPolicy` is None",
                reason=reason,
            )
        ]
    return []
