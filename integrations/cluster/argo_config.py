"""Argo's workflow-controller ConfigMap, read once when the controller starts, so that each
step pod is judged as Argo will create it (``adapters.argo.controller_config`` maps it;
docs/controller.md "Judged before anything runs").

``trainweave controller --argo-config-map NAMESPACE/NAME`` names it (Argo's install default
``argo/workflow-controller-configmap``; ``""``: not read). When it cannot be read (404, 403,
any API error) or is not a configuration Argo would load, the step pods are judged with Argo's
defaults and one WARNING line says so and what it means: a judged pod may then differ from
Argo's (a ``restricted`` namespace refusing the default executor containers that Argo's
configured ones would pass).
"""

from __future__ import annotations

import logging

from trainweave.adapters.argo import controller_config
from trainweave.adapters.argo.pods import ArgoExecutor
from trainweave.integrations.views.requests import api

log = logging.getLogger("trainweave.controller")
_DIFFER = (
    "step pods are judged with Argo's default executor and main container settings, which may"
    " differ from the pods Argo creates (docs/controller.md#judged-before-anything-runs)"
)


def split(ref: str) -> tuple[str, str]:
    """``NAMESPACE/NAME`` -> (namespace, name)."""
    namespace, _, name = ref.partition("/")
    return namespace, name


def read(send: api.Send, ref: str) -> ArgoExecutor | None:
    """The step pod settings of the ConfigMap ``ref`` (``NAMESPACE/NAME``); None (Argo's
    defaults) when ``ref`` is empty or the ConfigMap cannot be read or used, with a WARNING."""
    if not ref:
        log.info("--argo-config-map is empty: %s", _DIFFER)
        return None
    try:
        cm = send(api.get(api.CONFIGMAP, *split(ref)))
    except api.ApiError as err:
        log.warning("Argo's ConfigMap %s could not be read (%s): %s", ref, err, _DIFFER)
        return None
    try:
        got = controller_config.reading(cm.get("data") or {}, f"ConfigMap {ref}")
    except controller_config.ConfigError as err:
        log.warning(
            "Argo's ConfigMap %s is not a configuration Argo loads (%s): %s", ref, err, _DIFFER
        )
        return None
    if got.not_modelled:
        log.warning(
            "Argo's ConfigMap %s sets %s, which judged step pods do not model: they may differ"
            " from the pods Argo creates",
            ref,
            ", ".join(got.not_modelled),
        )
    log.info("judging step pods with Argo's ConfigMap %s", ref)
    return got.executor
