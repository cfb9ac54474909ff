"""Carry out a reconcile's ``Actions``: send its requests, and start attempts.

Starting resolves the runtime (the ``<tj>-runtime-snapshot`` ConfigMap when it
exists, as upstream KEP-2599; else ``TrainingRuntime`` in the TrainJob's
namespace or ``ClusterTrainingRuntime`` per ``runtimeRef.kind``), translates and
renders through the adapters, and creates every child with create-or-adopt: a
409 is accepted only when the existing object is controlled by this TrainJob,
so a restarted controller never makes a second copy. Before anything is created the cluster judges the start (``judge``): every rendered object and
every step's pod as Argo will create it (``adapters.argo.pods``) is a ``dryRun=All`` create. A
refusal, or a permanent input error, creates nothing and is returned as an
``observed.StartRefusal``, which ``rollup`` (the one writer of conditions) makes ``Failed``
with every error; a refusal that depends on the moment (``judge.Verdict.TRANSIENT``) is raised
as ``judge.NotYet``, and API errors propagate (the controller emits a Warning Event and retries
with backoff).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from trainweave import labels, sshkeys, yamlin
from trainweave.adapters import names, render
from trainweave.adapters.argo import pods
from trainweave.adapters.kueue import kept
from trainweave.errors import InputError, InputErrors
from trainweave.integrations.cluster import judge, kept_queues
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.read.bodies import Body, Meta, TrainJobBody, obj_at
from trainweave.integrations.views.read.observed import Observed, StartRefusal
from trainweave.integrations.views.requests import api
from trainweave.labels import Reason

Json = dict[str, Any]


class Renderer(Protocol):
    """TrainJob + runtime documents + options -> every object of one attempt segment."""

    def __call__(self, trainjob: Json, runtime: Json, options: render.Options) -> list[Json]: ...


def adapters_renderer(default_queue: str | None = None) -> Renderer:
    """The real translation: inputs -> ``adapters.render.render`` (what ``trainweave render``
    prints), with the controller's default queue."""

    def run(trainjob: Json, runtime: Json, options: render.Options) -> list[Json]:
        from trainweave import inputs

        tj = inputs.parse_trainjob(_input(trainjob), "TrainJob")
        kind = runtime.get("kind")  # the source named in messages: a kind, never a long text
        source = kind if kind in ("TrainingRuntime", "ClusterTrainingRuntime") else "runtime"
        rt = inputs.parse_runtime(_input(runtime), source)
        options = dataclasses.replace(options, default_queue=default_queue)
        return render.render(tj, rt, render.with_ssh_keys(options, rt, sshkeys.generate))

    return run


def _input(doc: Json) -> Json:
    body = Body.of(doc)
    keep = ("name", "namespace", "uid", "labels", "annotations")
    return {
        "apiVersion": doc.get("apiVersion"),
        "kind": doc.get("kind"),
        "metadata": {k: body.meta.raw[k] for k in keep if k in body.meta.raw},
        "spec": body.spec,
    }


def _snapshot(text: str, source: str) -> Json:
    """The runtime document of a snapshot ConfigMap; text edited into no YAML mapping is an
    input error (raised, it would be retried for ever)."""
    where = f"data.{labels.RUNTIME_SNAPSHOT_KEY}"
    try:
        loaded = yamlin.load_all(text, source)
    except InputErrors as exc:
        raise yamlin.load_error(exc, where) from None
    snap = loaded[0] if len(loaded) == 1 else None
    if not isinstance(snap, dict):
        raise InputErrors(
            [InputError(where, "is not a YAML mapping", source, Reason.INVALID_RUNTIME)]
        )
    return snap


def _is_snapshot(obj: Json, trainjob: str) -> bool:
    return obj.get("kind") == "ConfigMap" and obj["metadata"].get("name") == names.snapshot_name(
        trainjob
    )


class Executor:
    """Sends the actions' requests through ``send``; builds children with ``renderer``."""

    def __init__(
        self,
        send: api.Send,
        renderer: Renderer,
        now: Callable[[], datetime],
        kept_cap_seconds: int | None = None,
        judge_first: bool = True,
        argo_executor: pods.ArgoExecutor | None = None,
        on_judged: Callable[[float], None] | None = None,
    ) -> None:
        """``kept_cap_seconds``: kept queue position on (``--kept-position``), for at most
        that long (``adapters.kueue.kept``); None: off. ``judge_first``: every start is
        judged by the API server first (``judge``); ``argo_executor``: the workflow-controller's
        configuration the predicted step pods are built with (Argo's defaults when None; the
        controller sets it at start from Argo's ConfigMap, ``argo_config.read``);
        ``on_judged(seconds)``: told how long each judging took (the controller's histogram)."""
        self.raw_send = send  # the edge; the tolerant ``send`` below is what everything uses
        self.renderer = renderer
        self.now = now
        self.kept_cap_seconds = kept_cap_seconds
        self.judge_first = judge_first
        self.argo_executor = argo_executor
        self.on_judged = on_judged

    def run(self, todo: reconcile.Actions, trainjob: Json) -> StartRefusal | None:
        """Send everything in order; 404 on delete and status of a gone object is fine. A
        start that was refused is returned (``start``), for the reconcile to observe."""
        for req in todo.requests:
            self.send(req)
        refused = self.start(trainjob, todo.start) if todo.start is not None else None
        for req in todo.after_start:
            self.send(req)
        return refused

    def send(self, req: api.Request) -> Json:
        """Send one request of a reconcile's actions; what it was meant to undo being gone
        already is fine: 404 on a DELETE or PATCH, 409 on a DELETE with a uid precondition (a
        newer incarnation, not ours) answer ``{}``. Any other ``ApiError`` propagates."""
        try:
            return self.raw_send(req)
        except api.ApiError as err:
            if err.not_found and req.method in ("DELETE", "PATCH"):
                return {}
            if err.conflict and req.method == "DELETE":
                return {}  # uid precondition: a newer incarnation, not ours
            raise

    def start(self, trainjob: Json, st: reconcile.Start) -> StartRefusal | None:
        """Render, have the API server judge, and create-or-adopt the children of one attempt
        segment: exactly the objects ``adapters.render`` gives, in its order
        (``render.CREATION_ORDER``: the Workflow last, its pods need the others). Nothing is
        created when the start is refused: the refusal is returned."""
        meta = trainjob["metadata"]
        options = render.Options(
            attempt=st.attempt,
            segment=st.segment,
            skip_steps=st.skip_steps,
            suspend=st.suspend,
            owner=render.Owner(
                str(trainjob["apiVersion"]), str(trainjob["kind"]), meta["name"], meta["uid"]
            ),
            exit_cleanup=False,
            controller=True,
            kept_position=self.kept_cap_seconds is not None and not st.suspend,
            kept_cap_seconds=self.kept_cap_seconds or 0,
        )
        # A first start (attempt 0, segment 0) normally finds no snapshot: it creates its own
        # before anything else instead of reading first (one GET fewer per TrainJob), and only
        # on a 409 (a controller restarted mid-start) reads the one there and renders from it.
        first = st.attempt == 0 and st.segment == 0
        try:
            runtime = self._runtime(trainjob, first)
            objs = self.renderer(trainjob, runtime, options)
            if (refused := self._judge(objs)) is not None:
                return refused
            if first:
                rendered = objs
                objs = self._snapshot_first(trainjob, objs, options)
                # rendered again from the snapshot an earlier start left: judged again
                if objs is not rendered and (refused := self._judge(objs)) is not None:
                    return refused
        except InputErrors as errs:
            return StartRefusal(errs.reason, tuple(str(e) for e in errs.errors))
        opted_out = kept_queues.opted_out(self.send, str(meta["namespace"]), objs)
        for obj in objs:
            if kept.is_kept(obj) and obj["spec"].get("queueName") in opted_out:
                continue
            if first and _is_snapshot(obj, meta["name"]):
                continue  # created or adopted above
            self._create_or_adopt(obj, str(meta["uid"]))
        return None

    def _judge(self, objs: list[Json]) -> StartRefusal | None:
        """The API server's refusals of ``objs`` and of the step pods of their Workflow, as a
        ``StartRefusal`` (None: accepted); raises ``judge.NotYet`` for refusals that depend on
        the moment, and an ``ApiError`` of status 0 when the server cannot be reached."""
        if not self.judge_first:
            return None
        step_pods = [
            p
            for wf in objs
            if wf.get("kind") == api.WORKFLOW.kind
            for p in pods.step_pods(wf, self.argo_executor)
        ]
        began = time.monotonic()
        found = judge.judge(self.send, objs, step_pods)
        if self.on_judged is not None:
            self.on_judged(time.monotonic() - began)
        if found.refused:
            lines = tuple(r.line() for r in found.refused)
            return StartRefusal(Reason.REFUSED_BY_API_SERVER, lines)
        if found.transient:
            raise judge.NotYet(found.transient)
        return None

    def _snapshot_first(
        self, trainjob: Json, objs: list[Json], options: render.Options
    ) -> list[Json]:
        """Create the rendered snapshot ConfigMap; on a 409, the existing one (controlled by
        this TrainJob, else the usual not-controlled error) wins: ``objs`` rendered from it
        when its runtime differs from the one just read."""
        meta = trainjob["metadata"]
        ours = next((o for o in objs if _is_snapshot(o, meta["name"])), None)
        if ours is None:
            return objs
        existing = self._create_or_adopt(ours, str(meta["uid"]))
        text = obj_at(existing or {}, "data").get(labels.RUNTIME_SNAPSHOT_KEY)
        if not text or text == ours["data"].get(labels.RUNTIME_SNAPSHOT_KEY):
            return objs
        name = ours["metadata"]["name"]
        return self.renderer(trainjob, _snapshot(str(text), f"ConfigMap {name}"), options)

    def _runtime(self, trainjob: Json, first: bool) -> Json:
        """The runtime document: the snapshot ConfigMap's when this TrainJob has one, else the
        referenced runtime. A first start reads the runtime alone, and the snapshot only when
        the runtime is gone (a start cut short by a restart, the runtime deleted since)."""
        if not first and (snap := self._read_snapshot(trainjob)) is not None:
            return snap
        meta = trainjob["metadata"]
        ns = str(meta["namespace"])
        ref = TrainJobBody.of(trainjob).runtime_ref
        kind = str(ref.get("kind") or "ClusterTrainingRuntime")
        name = str(ref.get("name") or "")
        rkind = api.TRAINING_RUNTIME if kind == "TrainingRuntime" else api.CLUSTER_TRAINING_RUNTIME
        try:
            if api.valid_name(name):  # no object has another name: nothing to look up
                return self.send(api.get(rkind, ns if rkind.namespaced else "", name))
        except api.ApiError as err:
            if not err.not_found:
                raise
        if first and (snap := self._read_snapshot(trainjob)) is not None:
            return snap
        where = f" in namespace {ns}" if rkind.namespaced else ""
        raise InputErrors(
            [
                InputError(
                    "spec.runtimeRef.name",
                    f"{kind} {name!r} not found{where}",
                    reason=Reason.TRAINING_RUNTIME_NOT_FOUND,
                )
            ]
        )

    def _read_snapshot(self, trainjob: Json) -> Json | None:
        """The runtime in this TrainJob's snapshot ConfigMap; None when there is none of its."""
        meta = trainjob["metadata"]
        snapshot = names.snapshot_name(meta["name"])
        try:
            cm = self.send(api.get(api.CONFIGMAP, str(meta["namespace"]), snapshot))
        except api.ApiError as err:
            if not err.not_found:
                raise
            return None
        text = obj_at(cm, "data").get(labels.RUNTIME_SNAPSHOT_KEY)
        if text and meta["uid"] in Meta.of(cm).owner_uids:
            return _snapshot(str(text), f"ConfigMap {snapshot}")
        return None

    def _create_or_adopt(self, obj: Json, owner_uid: str) -> Json | None:
        """Create ``obj``; on a 409, the existing object when this TrainJob controls it (None
        when created, or for a Secret or Workload, which are taken unread)."""
        kind = api.BY_KIND[str(obj["kind"])]
        meta = obj["metadata"]
        try:
            self.send(api.create(kind, meta["namespace"], obj))
            return None
        except api.ApiError as err:
            if not err.conflict:
                raise
        if kind is api.SECRET:
            # The controller may create Secrets but never read one (docs/security.md): the MPI
            # SSH Secret of this name is taken as the one an earlier reconcile created.
            return None
        if kind is api.WORKLOAD:
            # a kept Workload (adapters.kueue.kept): ours from an earlier reconcile, or one
            # Kueue built for the group; either way the step queues, only the position differs
            return None
        existing = self.send(api.get(kind, meta["namespace"], meta["name"]))
        if not Meta.of(existing).controlled_by(owner_uid):
            raise api.ApiError(
                409,
                "AlreadyExists",
                {
                    "message": f"{kind.kind} {meta['name']} "
                    "exists and is not controlled by this TrainJob"
                },
            )
        return existing


def run_once(executor: Executor, obs: Observed, now: datetime) -> reconcile.Actions:
    """One reconcile of ``obs`` without caches (tests, benchmarks): its actions carried out;
    a refused start is observed and the reconcile planned again, so ``rollup`` writes the
    ``Failed`` condition (as ``Controller._start`` does from its caches). The actions sent."""
    todo = reconcile.actions(obs, now)
    if todo.start is None:
        executor.run(todo, obs.trainjob)
        return todo
    refused = executor.run(dataclasses.replace(todo, after_start=[]), obs.trainjob)
    if refused is None:
        executor.run(reconcile.Actions(after_start=todo.after_start), obs.trainjob)
        return todo
    again = reconcile.actions(dataclasses.replace(obs, refused=refused), now)
    executor.run(again, obs.trainjob)
    return again
