"""``trainweave render --dry-run=server``: the cluster judges every rendered object first.

kubectl's spelling and meaning (``kubectl create --dry-run=server``): each object the render
prints is sent to the API server of the current kubeconfig as a create with ``dryRun=All`` and
``fieldValidation=Strict``. The server runs its validation and every admission plugin and
webhook (Pod Security, Kueue's, a policy engine's) and stores nothing. Each refusal is one
``error: (dry-run=server): KIND NAMESPACE/NAME: ...`` line (exit 2); a server that cannot be
reached is one ``error:`` line, exit 1, as the other cluster commands. The namespace must
exist (the API server refuses a create in a missing one). The pods Argo will create from the
Workflow are judged offline (``trainweave.pod_rules``), not here: the Workflow is what is sent.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from trainweave.errors import InputError, InputErrors
from trainweave.integrations.views import api

Json = dict[str, Any]
SOURCE = "(dry-run=server)"
DRY_RUN = (("dryRun", "All"), ("fieldValidation", "Strict"))


def request(obj: Json) -> api.Request | None:
    """The dry-run create of ``obj``, or None for a kind trainweave has no resource for."""
    kind = api.BY_KIND.get(str(obj.get("kind")))
    if kind is None or kind.api_version != obj.get("apiVersion"):
        return None
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    return api.Request("POST", kind.path(namespace if kind.namespaced else ""), DRY_RUN, obj)


def refusals(send: api.Send, manifests: Sequence[Json]) -> list[InputError]:
    """One error per object the API server refuses; a transport failure (status 0) raises."""
    errors = []
    for obj in manifests:
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace")
        what = f"{obj.get('kind')} {namespace + '/' if namespace else ''}{meta.get('name')}"
        req = request(obj)
        if req is None:
            errors.append(
                InputError(
                    what, f"no resource known for apiVersion {obj.get('apiVersion')}", SOURCE
                )
            )
            continue
        try:
            send(req)
        except api.ApiError as err:
            if err.status == 0:
                raise
            errors.append(InputError(what, str(err), SOURCE))
    return errors


def sender(kubeconfig: str | None) -> api.Send:
    """``send`` to the cluster of ``kubeconfig`` (else ~/.kube/config, else in-cluster)."""
    from trainweave.integrations.cluster.kube import KubeClient
    from trainweave.integrations.commands.wiring import configuration

    return KubeClient(configuration(kubeconfig)).send


def check(manifests: Sequence[Json], kubeconfig: str | None, err: TextIO | None = None) -> int:
    """0 when the cluster accepts every object; raise InputErrors (exit 2) for the refusals;
    1, with one line on ``err``, when the API server cannot be reached."""
    send = sender(kubeconfig)
    try:
        errors = refusals(send, manifests)
    except api.ApiError as exc:
        (err or sys.stderr).write(f"error: {exc}\n")
        return 1
    if errors:
        raise InputErrors(errors)
    return 0
