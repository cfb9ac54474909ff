"""Argo's workflow-controller ConfigMap -> the settings every step pod is built with
(``pods.ArgoExecutor``), read as argo-workflows v4.1.4 reads it (v4.0.7 the same). Pure: the
controller reads the ConfigMap once at its start (``integrations/cluster/argo_config.py``).

The ConfigMap's data is one YAML document of ``config.Config`` (``config/config.go:28-144``),
in either of the two layouts ``parseConfigMap`` accepts (``config/controller.go:38-57``): one
key ``config`` holding the whole document (then no other key may be there), or one key per
field, each value joined as ``<key>: <value>`` (one line) or ``<key>:`` and the value's lines
indented by two spaces (``config_text``).

What a pod gets from it (``workflow/controller/workflowpod.go`` v4.1.4):

- ``executor`` (``config.go:36``, an ``apiv1.Container``): its ``image`` (else the pinned
  ``quay.io/argoproj/argoexec``; ``workflow/controller/config.go:117-125``), ``imagePullPolicy``
  (``:132-137``), ``resources``, ``securityContext``, ``args`` (``newExecContainer``,
  ``workflowpod.go:1280-1289``) and ``env`` (after Argo's own, ``createEnvVars`` :1246-1248) on
  the ``init`` and ``wait`` containers; its other fields are not read by Argo;
- ``mainContainer`` (``config.go:39``): merged under each main container
  (``defaults.main_container``, workflowpod.go:415-443);
- ``kubeConfig`` (``config.go:42``): a Secret volume, its mount on the executor containers and
  their ``--kubeconfig`` argument (:1261-1278, :1299-1312);
- ``instanceID`` (``config.go:58``): the pod label ``workflows.argoproj.io/controller-instanceid``
  (:518-520) and ``ARGO_INSTANCE_ID`` on the executor containers (:1240-1244);
- ``workflowDefaults`` (``config.go:87``): merged under every Workflow (``util.MergeTo``,
  ``controller.go:1503-1505``); its spec's pod-level fields (``defaults.WORKFLOW_POD_FIELDS``).

Not modelled, so named by ``not_modelled`` (judged pods may differ from Argo's):
``initlessPod.enabled`` (v4.1.4's beta pod layout: no ``init``, a ``supervisor`` container, an
image volume; ``config.go:143``), ``workflowDefaults.spec.templateDefaults`` (merged into each
template, ``operator.go:4719``) and ``workflowDefaults.spec.executor`` (a ServiceAccount token
volume, workflowpod.go:1813-1862). The rest of the ConfigMap does not shape a pod
(``podSpecLogStrategy`` only logs it), or only where trainweave's templates do not go
(``images``: a container without a command; ``artifactRepository``, ``artifactDrivers``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainweave import yamlin
from trainweave.adapters.argo import defaults
from trainweave.adapters.argo.pods import ArgoExecutor
from trainweave.errors import InputErrors

Json = dict[str, Any]
# Argo's install: manifests/cluster-install-no-crds/kustomization.yaml:10 (namespace: argo),
# manifests/base/workflow-controller/workflow-controller-configmap.yaml:4 and
# workflow/common/common.go:286 ConfigMapName (the workflow-controller's --configmap default)
DEFAULT_CONFIG_MAP = "argo/workflow-controller-configmap"


class ConfigError(ValueError):
    """The ConfigMap is not a configuration Argo would load (Argo's controller would not start
    with it either)."""


@dataclass(frozen=True)
class Reading:
    """What a ConfigMap gives: the pod settings, and the settings it has that are not
    modelled (``not_modelled``)."""

    executor: ArgoExecutor
    not_modelled: tuple[str, ...] = ()


def config_text(data: Mapping[str, Any]) -> str:
    """The YAML text ``parseConfigMap`` (config/controller.go:38-57) unmarshals."""
    if "config" in data:
        if len(data) != 1:
            raise ConfigError(
                "if you have an item in your config map named 'config', you must only have one item"
            )
        return str(data["config"])
    lines = []
    for name in sorted(data):
        value = str(data[name])
        if "\n" in value:
            lines.append(f"{name}:\n  " + "\n  ".join(value.strip("\n").split("\n")))
        else:
            lines.append(f"{name}: {value}")
    return "".join(line + "\n" for line in lines)


def parse(data: Mapping[str, Any], source: str = "ConfigMap") -> Json:
    """The configuration document of a ConfigMap's ``data`` ({} when it has none)."""
    try:
        docs = yamlin.load_all(config_text(data), source)
    except InputErrors as errs:
        raise ConfigError("; ".join(str(e) for e in errs.errors)) from None
    docs = [d for d in docs if d is not None]
    if not docs:
        return {}
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError("the configuration is not one YAML mapping")
    return docs[0]


def reading(data: Mapping[str, Any], source: str = "ConfigMap") -> Reading:
    """``parse`` then ``argo_executor`` and ``not_modelled``."""
    config = parse(data, source)
    return Reading(argo_executor(config), not_modelled(config))


def argo_executor(config: Json) -> ArgoExecutor:
    """The pod settings of a configuration document (the module doc)."""
    executor = _mapping(config, "executor")
    main = config.get("mainContainer")
    kube_config = config.get("kubeConfig")
    wf_defaults = _mapping(_mapping(config, "workflowDefaults"), "spec", "workflowDefaults.")
    return ArgoExecutor(
        image=_string(executor, "image", "executor.") or ArgoExecutor.image,
        image_pull_policy=_string(executor, "imagePullPolicy", "executor."),
        resources=defaults.go_resources(
            defaults.as_go(_mapping(executor, "resources", "executor."), "ResourceRequirements")
        ),
        security_context=defaults.as_go(
            _mapping(executor, "securityContext", "executor."), "SecurityContext"
        ),
        args=tuple(_strings(executor, "args", "executor.")),
        env=tuple(defaults.as_go(_objects(executor, "env", "executor."), "EnvVar")),
        main_container=None if main is None else _mapping(config, "mainContainer"),
        kube_config=None if kube_config is None else _mapping(config, "kubeConfig"),
        instance_id=_string(config, "instanceID"),
        workflow_defaults={
            k: wf_defaults[k] for k in defaults.WORKFLOW_POD_FIELDS if k in wf_defaults
        },
    )


def not_modelled(config: Json) -> tuple[str, ...]:
    """The settings of ``config`` that shape Argo's pods and are not modelled here."""
    spec = _mapping(_mapping(config, "workflowDefaults"), "spec", "workflowDefaults.")
    out = []
    if _mapping(config, "initlessPod").get("enabled"):
        out.append("initlessPod.enabled")
    out += [f"workflowDefaults.spec.{k}" for k in ("templateDefaults", "executor") if spec.get(k)]
    return tuple(out)


def _mapping(obj: Json, key: str, where: str = "") -> Json:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}{key}: not a mapping")
    return value


def _string(obj: Json, key: str, where: str = "") -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConfigError(f"{where}{key}: not a string")
    return value


def _strings(obj: Json, key: str, where: str) -> list[str]:
    value = obj.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}{key}: not a list of strings")
    return value


def _objects(obj: Json, key: str, where: str) -> list[Json]:
    value = obj.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ConfigError(f"{where}{key}: not a list of mappings")
    return value
