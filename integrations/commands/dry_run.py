"""``trainweave render --dry-run=server``: the cluster judges every rendered object first.

kubectl's spelling and meaning (``kubectl create --dry-run=server``): each object the render
prints is sent to the API server of the current kubeconfig as a create with ``dryRun=All`` and
``fieldValidation=Strict``. The server runs its validation and every admission plugin and
webhook (Pod Security, Kueue's, a policy engine's) and stores nothing. Each refusal is one
``error: (dry-run=server): KIND NAMESPACE/NAME: ...`` line (exit 2); a server that cannot be
reached is one ``error:`` line, exit 1, as the other cluster commands. The namespace must
exist (the API server refuses a create in a missing one). The pods Argo will create from the
Workflow are judged offline (``trainweave.pod_rules``), not here: the Workflow is what is sent
(the controller's start also sends them, ``integrations.cluster.judge``, the same judge).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from trainweave.errors import InputError, InputErrors
from trainweave.integrations.cluster import judge
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
SOURCE = "(dry-run=server)"
DRY_RUN = judge.DRY_RUN
request = judge.request  # the controller's start judges with the same requests (judge.py)


def refusals(send: api.Send, manifests: Sequence[Json]) -> list[InputError]:
    """One error per object the API server refuses (every answer but a 2xx, whatever
    ``judge.verdict`` says of it); a transport failure (status 0) raises."""
    found = judge.judge(send, manifests)
    return [
        InputError(
            r.what,
            str(r.error) if r.error else f"no resource known for apiVersion {r.api_version}",
            SOURCE,
        )
        for r in found.answers
    ]


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
