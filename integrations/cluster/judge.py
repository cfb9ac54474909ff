"""The cluster judges first: every object a start creates, and every step's pod as Argo will
create it, sent as a ``dryRun=All`` create before anything is created.

kubectl's ``create --dry-run=server``: a POST with ``dryRun=All`` and ``fieldValidation=Strict``
runs the API server's validation and every admission plugin and webhook of the cluster (Pod
Security, ResourceQuota, Kueue's webhooks, a ValidatingAdmissionPolicy, a policy engine's) and
stores nothing. One implementation for the controller (``executor.Executor.start``) and
``trainweave render --dry-run=server`` (``commands.dry_run``).

Each answer is one of (``verdict``; the statuses and messages are k8s.io/apiserver v0.36.4's and
k8s.io/kubernetes v1.36.4's, docs/controller.md lists them with their sources):

- ``ACCEPTED``: 2xx; 409 ``AlreadyExists`` (the object exists, so it passed admission before; the
  create-or-adopt decides); 400 ``admission webhook "..." does not support dry run`` (a webhook
  with side effects cannot be asked first: the real create asks it);
- ``TRANSIENT`` (the answer depends on the moment: the start is retried with backoff): 429; any
  5xx (``failed calling webhook`` of a webhook with ``failurePolicy: Fail`` that is down, slow or
  unreachable is a 500, ``error calling webhook`` a 503, a timeout a 504); 401; 404 (a kind or
  namespace not there yet); 409 other than ``AlreadyExists``; 403 from the ResourceQuota plugin
  (``exceeded quota``, ``status unknown for quota``: Argo waits those out too) or the authorizer
  (``cannot create resource``: the controller's own RBAC, not the TrainJob's fault);
- ``REFUSED``: anything else (422 Invalid, 400, 403 from Pod Security, the ServiceAccount plugin
  (``error looking up service account``, final as ``verdict.refused`` has it), a webhook's or a
  policy's denial, 413), final: the TrainJob fails.

A transport failure (status 0) is raised as it is.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainweave.adapters.argo.pods import StepPod
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
DRY_RUN = (("dryRun", "All"), ("fieldValidation", "Strict"))
_TRANSIENT_403 = re.compile(r"exceeded quota|status unknown for quota|cannot create resource")
_NO_DRY_RUN = re.compile(r'admission webhook ".*" does not support dry run')


class Verdict(enum.StrEnum):
    """What one dry-run answer says of the object (see the module doc)."""

    ACCEPTED = "accepted"
    TRANSIENT = "transient"
    REFUSED = "refused"


def request(obj: Json) -> api.Request | None:
    """The dry-run create of ``obj``, or None for a kind trainweave has no resource for."""
    kind = api.BY_KIND.get(str(obj.get("kind")))
    if kind is None or kind.api_version != obj.get("apiVersion"):
        return None
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    path = kind.path(namespace if kind.namespaced else "")
    return api.Request("POST", path, DRY_RUN, obj, kind=kind)


def verdict(err: api.ApiError) -> Verdict:
    """The verdict of a refused dry run (``err.status`` > 0)."""
    status = err.status
    message = str(err.body.get("message") or "")
    if status == 409:  # the Status body's reason (err.reason may be the HTTP phrase)
        exists = "AlreadyExists" in (err.body.get("reason"), err.reason)
        return Verdict.ACCEPTED if exists else Verdict.TRANSIENT
    if status == 400 and _NO_DRY_RUN.search(message):
        return Verdict.ACCEPTED
    if status in (401, 404, 429) or status >= 500:
        return Verdict.TRANSIENT
    if status == 403 and _TRANSIENT_403.search(message):
        return Verdict.TRANSIENT
    return Verdict.REFUSED


@dataclass(frozen=True)
class Refusal:
    """One object the API server did not accept (``error``; None: no resource is known for its
    kind and ``api_version``, so it was not sent), and the step whose pod it is."""

    what: str  # "Service ns/ft", "Pod ns/ft-node-704729072"
    error: api.ApiError | None
    step: str = ""
    job: str = ""
    api_version: str = ""

    @property
    def verdict(self) -> Verdict:
        """``verdict`` of the answer (an object not sent is refused)."""
        return Verdict.REFUSED if self.error is None else verdict(self.error)

    def line(self) -> str:
        """One line naming the object (and the step), then the API server's answer."""
        where = self.what
        if self.step:
            where = f"step {self.step!r} (replicatedJob {self.job!r}) {self.what}"
        answer = self.error or f"no resource known for apiVersion {self.api_version}"
        return f"{where}: {answer}"


@dataclass(frozen=True)
class Judgement:
    """The API server's answers to one start's dry runs: every one that was not a 2xx, in the
    order sent."""

    answers: tuple[Refusal, ...] = ()
    sent: int = 0

    @property
    def refused(self) -> tuple[Refusal, ...]:
        """The final refusals."""
        return tuple(r for r in self.answers if r.verdict is Verdict.REFUSED)

    @property
    def transient(self) -> tuple[Refusal, ...]:
        """The refusals that depend on the moment."""
        return tuple(r for r in self.answers if r.verdict is Verdict.TRANSIENT)


def _what(obj: Json) -> str:
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{obj.get('kind')} {namespace + '/' if namespace else ''}{meta.get('name')}"


def judge(send: api.Send, objects: Sequence[Json], pods: Sequence[StepPod] = ()) -> Judgement:
    """Send a dry-run create of every object, then of every step pod; a transport failure
    (status 0) raises."""
    answers: list[Refusal] = []
    sent = 0
    items = [(obj, "", "") for obj in objects] + [(p.pod, p.step, p.job) for p in pods]
    for obj, step, job in items:
        req = request(obj)
        if req is None:
            answers.append(Refusal(_what(obj), None, step, job, str(obj.get("apiVersion"))))
            continue
        sent += 1
        try:
            send(req)
        except api.ApiError as err:
            if err.status == 0:
                raise
            answers.append(Refusal(_what(obj), err, step, job))
    return Judgement(tuple(answers), sent)


class NotYet(api.ApiError):
    """A start the API server refused for the moment only (``Verdict.TRANSIENT``): raised, so
    the controller says why (a Warning Event) and retries with its backoff."""

    def __init__(self, transient: Sequence[Refusal]) -> None:
        status = next((r.error.status for r in transient if r.error is not None), 0)
        lines = "; ".join(r.line() for r in transient)
        message = f"start deferred, the API server refused it for now (retried): {lines}"
        super().__init__(status, "StartDeferred", {"message": message})
