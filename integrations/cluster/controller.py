"""The ``trainweave controller`` process: caches, queue, workers, leader election.

Watches what ``WATCHES`` lists, one informer per kind: TrainJobs, the Workflows and Pods
labelled ``trainweave.io/trainjob`` and all Kueue Workloads (a Workload is mapped to its
TrainJob through the pod-group names in the Workflows' pod templates). The controller starts,
awaits, and checks the freshness of exactly the informers of that table, and a write's answer
goes into the informer of the request's kind (``api.Request.kind``). Any change enqueues the
TrainJob's key; a worker reads the caches into ``observed.Observed``, asks
``reconcile.actions`` what to do and lets ``executor.Executor`` do it. Objects the
API returns from our own writes go straight into the caches, so the next
reconcile does not act on stale state. ``/healthz``, ``/readyz`` and
``/metrics`` are served on ``--bind`` (loopback by default).

Safe to run unattended (docs/controller.md#probes-and-failure-modes): an object that cannot be
read is logged with its kind and key, counted (``trainweave_object_errors_total{kind}``) and
skipped, and when it is a child of a TrainJob in the cache a Warning Event on that TrainJob says
so; a thread that ends anyway fails ``/healthz`` (``health.Health``); an informer without a
LIST or watch event for ``informer.STALE_AFTER`` seconds fails ``/readyz``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trainweave import labels
from trainweave.adapters.argo.controller_config import DEFAULT_CONFIG_MAP
from trainweave.integrations.cluster import argo_config
from trainweave.integrations.cluster.events import EventSender, is_event
from trainweave.integrations.cluster.executor import Executor, Renderer
from trainweave.integrations.cluster.health import Health
from trainweave.integrations.cluster.informer import STALE_AFTER, Informer, Key, WorkQueue, key_of
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.decide import leftovers, reconcile
from trainweave.integrations.views.decide.reconcile import Actions
from trainweave.integrations.views.read import slim
from trainweave.integrations.views.read.argo_view import TERMINAL, WorkflowView, templates, view
from trainweave.integrations.views.read.bodies import Meta, WorkflowBody
from trainweave.integrations.views.read.observed import Observed, group_of, observed
from trainweave.integrations.views.requests import api
from trainweave.integrations.views.requests.event import event
from trainweave.labels import EventReason, EventType

Json = dict[str, Any]
log = logging.getLogger("trainweave.controller")
VIEWS_MAX = 16384  # Workflow views kept (Controller.view)
# WorkQueue lanes: a Workflow finished or a TrainJob being deleted; a child changed (a status
# count may move); the rest
FINISHED, CHANGED = 0, 1


@dataclass(frozen=True)
class Config:
    """Controller settings (``trainweave controller --help``)."""

    namespace: str = ""  # watch scope; "" = all namespaces
    bind: str = "127.0.0.1:8080"
    workers: int = 2
    default_queue: str | None = None
    leader_elect: bool = True
    lease_namespace: str = "trainweave-system"
    lease_name: str = "trainweave-controller"
    identity: str = f"{socket.gethostname()}-{os.getpid()}"
    lease_duration: int = 15
    retry_period: float = 2.0
    kept_position_cap: int | None = None  # seconds; None: no kept queue position (the default)
    judge_first: bool = True  # every start judged by the API server first (executor, judge)
    # Argo's workflow-controller ConfigMap (NAMESPACE/NAME; "": not read): the settings the
    # judged step pods are built with, read once at start (argo_config)
    argo_config_map: str = DEFAULT_CONFIG_MAP
    settle: float = 0.05  # seconds a changed TrainJob waits for its other events (WorkQueue)


def utcnow() -> datetime:
    """The wall clock, in UTC."""
    return datetime.now(UTC)


Index = Callable[[Json], list[str]]


@dataclass(frozen=True)
class Watch:
    """One watched kind, as its informer lists, keeps and indexes it (a row of ``WATCHES``).

    ``on_change(controller, obj)``: what a change of ``obj`` enqueues
    (``Controller.enqueue_child``: the TrainJob its ``trainweave.io/trainjob`` label names).
    ``selector``: a label selector (the controller's own children carry
    ``trainweave.io/trainjob``). ``indexes``: secondary indexes, read by ``Controller.observe``
    and the ``on_change`` mappings (``tj_index``: the TrainJob of the label)."""

    kind: api.Kind
    slim: Callable[[Json], Json]
    on_change: Callable[[Controller, Json], None]
    selector: str = ""
    indexes: Mapping[str, Index] = field(default_factory=dict)


def tj_index(obj: Json) -> list[str]:
    """``<namespace>/<trainjob>`` of a child's ``trainweave.io/trainjob`` label (the ``tj``
    index of ``WATCHES``)."""
    meta = Meta.of(obj)
    tj = meta.label(labels.TRAINJOB)
    return [f"{meta.namespace}/{tj}"] if tj else []


def _group_index(obj: Json) -> list[str]:
    ns = Meta.of(obj).namespace
    return [f"{ns}/{g}" for g in templates(obj).groups]


class Controller:
    """Reconciles TrainJobs from watched caches."""

    def __init__(
        self,
        send: api.Send,
        stream: Callable[[api.Request], Iterator[Json]],
        renderer: Renderer,
        config: Config,
        metrics: Metrics,
        now: Callable[[], datetime] = utcnow,
        async_events: bool = False,
        may_write: Callable[[], bool] = lambda: True,
        watches: tuple[Watch, ...] | None = None,
    ) -> None:
        """``async_events``: Events go out from their own thread (``events.EventSender``);
        else each is sent before the reconcile goes on. ``may_write``: whether this replica
        still leads (``leader.LeaderElector.leading``); no write goes out once it is false.
        ``watches``: the kinds watched, ``WATCHES`` (a test may pass it with one more)."""
        self.config, self.metrics, self.now = config, metrics, now
        self.may_write = may_write
        self.queue = WorkQueue(settle=config.settle)
        metrics.queue_depth.set_function(lambda: len(self.queue))
        self.raw_send = send
        self.events = EventSender(send, metrics.events_dropped.inc) if async_events else None
        self.health = Health()
        if self.events is not None:
            self.health.watch(self.events.thread)
        table = WATCHES if watches is None else watches
        self.informers = {w.kind.kind: self._informer(send, stream, w) for w in table}
        if len(self.informers) != len(table):
            raise ValueError("a kind is watched twice")
        self.trainjobs = self.informers[api.TRAINJOB.kind]
        self.workflows = self.informers[api.WORKFLOW.kind]
        self.pods = self.informers[api.POD.kind]
        self.workloads = self.informers[api.WORKLOAD.kind]
        for inf in self.informers.values():
            metrics.informer_stale.labels(inf.kind.kind).set_function(_stale_of(inf))
            metrics.object_errors.labels(inf.kind.kind)  # each series from 0: increase() sees 1
        self.executor = Executor(
            self.send,
            renderer,
            now,
            config.kept_position_cap,
            judge_first=config.judge_first,
            on_judged=metrics.judge_seconds.observe,
        )
        self.stopped = threading.Event()
        self.views: dict[str, tuple[str, WorkflowView]] = {}  # uid -> (resourceVersion, view)

    def _informer(
        self, send: api.Send, stream: Callable[[api.Request], Iterator[Json]], w: Watch
    ) -> Informer:
        return Informer(
            send,
            stream,
            w.kind,
            namespace=self.config.namespace,
            selector=w.selector,
            on_change=lambda obj: w.on_change(self, obj),
            indexes=dict(w.indexes),
            transform=w.slim,
            on_error=self._object_error,
        )

    # --- event mapping ------------------------------------------------------------
    def _enq(self, obj: Json) -> None:
        """A TrainJob changed; one being deleted goes first and at once (lane 0, no settle
        time): its Workflows must be stopped before the garbage collector reaches their pods."""
        deleting = Meta.of(obj).deletion_timestamp
        self.queue.add(key_of(obj), FINISHED if deleting else WorkQueue.LANES - 1)

    def _enq_wf(self, obj: Json) -> None:
        """A Workflow changed; a finished one puts its TrainJob in the first lane. A deleted
        one's view is dropped."""
        if self.workflows.get(*key_of(obj)) is None:
            self.views.pop(Meta.of(obj).uid, None)
        elif "compressedNodes" in WorkflowBody.of(obj).status:  # kept by slim: undecodable
            err = ValueError("status.compressedNodes is not base64(gzip(JSON))")
            self._object_error(obj, err, "kept with its nodes unknown")
        finished = WorkflowBody.of(obj).phase in TERMINAL
        self.enqueue_child(obj, FINISHED if finished else CHANGED)

    def enqueue_child(self, obj: Json, lane: int = CHANGED) -> None:
        """A child changed: the TrainJob its ``trainweave.io/trainjob`` label names."""
        for value in tj_index(obj):
            ns, name = value.split("/", 1)
            self.queue.add((ns, name), lane)

    def _enq_wl(self, obj: Json) -> None:
        ns, name = key_of(obj)
        for wf in self.workflows.by_index("group", f"{ns}/{name}"):
            self.enqueue_child(wf)

    def _object_error(self, obj: Json, err: Exception, what: str = "skipped") -> None:
        """One object could not be read (``Informer.on_error``): logged with its kind and key,
        counted, skipped; a TrainJob in the cache that it belongs to gets a Warning Event."""
        kind = str(obj.get("kind") or "") if isinstance(obj, dict) else ""
        ns, name = key_of(obj)
        self.metrics.object_errors.labels(kind).inc()
        log.warning("%s %s/%s %s: %r", kind, ns, name, what, err, exc_info=what == "skipped")
        for tj in self._owners(obj):
            message = f"{kind} {name} {what}: it cannot be read ({str(err)[:400]})"
            self._note(tj, EventReason.OBJECT_UNREADABLE, message)

    def _owners(self, obj: Json) -> list[Json]:
        """The cached TrainJobs ``obj`` belongs to: itself, the one its label names, or (a
        Workload) those of the Workflows whose pod group it is."""
        ns, name = key_of(obj)
        if obj.get("kind") == api.TRAINJOB.kind:
            keys = [(ns, name)]
        elif obj.get("kind") == api.WORKLOAD.kind:
            wfs = self.workflows.by_index("group", f"{ns}/{name}")
            keys = [tuple(v.split("/", 1)) for wf in wfs for v in tj_index(wf)]  # type: ignore[misc]
        else:
            labelled = Meta.of(obj).label(labels.TRAINJOB)
            keys = [(ns, labelled)] if labelled else []
        return [tj for k in dict.fromkeys(keys) if (tj := self.trainjobs.get(*k)) is not None]

    def _note(self, tj: Json, reason: EventReason, message: str) -> None:
        """A Warning Event on ``tj``; a failure to send it is logged, never raised."""
        try:
            self.send(event(tj, EventType.WARNING, reason, message, self.now()))
        except Exception as err:
            log.warning("event %s: %r", reason, err)

    # --- the edge, with write-through -----------------------------------------------
    def send(self, req: api.Request) -> Json:
        """Send, then put what the API returned for a cached kind into its cache; an Event
        is only queued when Events are sent apart. No write once this replica stopped leading."""
        if req.is_write and not self.may_write():
            raise api.ApiError(0, "NotLeading", {"message": "leadership lost: not writing"})
        if self.events is not None and is_event(req):
            return self.events.put(req)
        obj = self.raw_send(req)
        if req.is_write and req.kind is not None and obj.get("metadata"):
            cache = self.informers.get(req.kind.kind)
            if cache is not None and obj.get("kind") != "Status":
                old = cache.get(*key_of(obj))
                if old is None or _rv(obj) >= _rv(old):
                    cache.put(obj)
        return obj

    # --- reconcile -------------------------------------------------------------------
    def observe(self, key: Key) -> Observed | None:
        """The TrainJob and its children, from the caches (no API call)."""
        tj = self.trainjobs.get(*key)
        if tj is None:
            return None
        idx = f"{key[0]}/{key[1]}"
        return observed(
            tj,
            self.workflows.by_index("tj", idx),
            self.pods.by_index("tj", idx),
            lambda group: self.workloads.get(key[0], group),
            self.view,
        )

    def view(self, wf: Json) -> WorkflowView:
        """``argo_view.view`` of a cached Workflow, kept per uid until its resourceVersion changes:
        a TrainJob reconciled for a pod or Workload event reads its unchanged Workflows again
        (pure, so the same view)."""
        meta = Meta.of(wf)
        uid, rv = meta.uid, meta.resource_version
        found = self.views.get(uid)
        if found is not None and found[0] == rv and rv:
            return found[1]
        got = view(wf)
        if len(self.views) >= VIEWS_MAX:
            self.views.clear()  # a bound only: deletions drop theirs (_enq_wf)
        self.views[uid] = (rv, got)
        return got

    def reconcile(self, key: Key) -> None:
        """One level-triggered pass for one TrainJob."""
        obs = self.observe(key)
        if obs is None:
            pods = self.pods.by_index("tj", f"{key[0]}/{key[1]}")
            wls = [w for p in pods if (w := self.workloads.get(key[0], group_of(p)))]
            for req in leftovers.orphan_releases(key[0], pods, wls):
                self.executor.send(req)
            self.metrics.set_state(f"{key[0]}/{key[1]}", None)
            self.metrics.set_steps(f"{key[0]}/{key[1]}")
            return
        todo = reconcile.actions(obs, self.now())
        if todo.start is not None:
            todo = self._start(key, todo, obs.trainjob)
        self.executor.run(todo, obs.trainjob)
        self.metrics.apply(todo.metrics)
        self.metrics.set_state(f"{key[0]}/{key[1]}", todo.state)
        self.metrics.set_steps(f"{key[0]}/{key[1]}", todo.waiting, todo.leaked)
        self.metrics.hold(todo.holding)
        if todo.requeue_after is not None:
            self.queue.add_after(key, todo.requeue_after)

    def _start(self, key: Key, todo: Actions, trainjob: Json) -> Actions:
        """Start the attempt, then plan again from the caches, which now hold the new
        children (write-through): the status they imply (the first ``jobsStatus``) goes out
        in this reconcile, not after every other TrainJob's start in the queue. The first
        plan's status and Events are the second's, so only the second's are sent. A refused
        start is observed by the second plan (``Observed.refused``): ``rollup`` fails it."""
        refused = self.executor.run(dataclasses.replace(todo, after_start=[], metrics=[]), trainjob)
        obs = self.observe(key)
        if obs is not None and refused is not None:
            obs = dataclasses.replace(obs, refused=refused)
        again = reconcile.actions(obs, self.now()) if obs is not None else None
        if again is None or again.start is not None:  # not in the caches yet: next event
            self.queue.add(key)
            return dataclasses.replace(todo, requests=[], start=None)
        return again

    def worker(self) -> None:
        """Take keys until the queue closes."""
        while (key := self.queue.get()) is not None:
            started = time.perf_counter()
            try:
                self.reconcile(key)
                self.queue.forget(key)
                self.metrics.reconciles.labels("ok").inc()
            except Exception as err:  # any failure: Warning event + retry with backoff
                self.metrics.reconciles.labels("error").inc()
                delay = self.queue.retry(key)
                log.warning("reconcile %s/%s failed (retry in %.1fs): %s", *key, delay, err)
                if not isinstance(err, api.ApiError):  # not the API's answer: what it read
                    self.metrics.object_errors.labels(api.TRAINJOB.kind).inc()
                    log.warning("reconcile %s/%s", *key, exc_info=err)
                self._warn(key, err)
            finally:
                self.metrics.reconcile_seconds.observe(time.perf_counter() - started)
                self.queue.done(key)

    def _warn(self, key: Key, err: Exception) -> None:
        tj = self.trainjobs.get(*key)
        if tj is None:
            return
        message = f"TrainJob resources reconciliation failed: {str(err)[:950]}"
        self._note(tj, EventReason.RESOURCES_CREATION_FAILED, message)

    def start(self) -> None:
        """Start the informers (in ``WATCHES`` order: the children before the TrainJobs) and,
        once every one of them has synced, read Argo's ConfigMap (when starts are judged:
        ``argo_config.read``) and start the workers."""
        for inf in self.informers.values():
            self.health.watch(inf.start())
        for inf in self.informers.values():
            while not inf.synced.wait(1.0):
                if self.stopped.is_set():
                    return
        if self.config.judge_first:
            self.executor.argo_executor = argo_config.read(self.send, self.config.argo_config_map)
        for i in range(self.config.workers):
            worker = threading.Thread(target=self.worker, name=f"worker-{i}", daemon=True)
            worker.start()
            self.health.watch(worker)
        log.info("controller started: caches synced, %d workers", self.config.workers)

    def stop(self) -> None:
        """Stop watching and close the queue."""
        self.health.stopping.set()
        self.stopped.set()
        for inf in self.informers.values():
            inf.stopped.set()
        self.queue.close()
        if self.events is not None:
            self.events.close(timeout=2.0)

    @property
    def ready(self) -> bool:
        """All caches synced and fresh."""
        return not self.not_ready()

    def not_ready(self) -> list[str]:
        """What ``/readyz`` names: an informer not synced yet, or one without a LIST or watch
        event for more than ``informer.STALE_AFTER`` seconds."""
        out = []
        for inf in self.informers.values():
            if not inf.synced.is_set():
                out.append(f"informer {inf.kind.plural}: not synced")
            elif (stale := inf.stale_for) > STALE_AFTER:
                out.append(f"informer {inf.kind.plural}: no list or watch event for {stale:.0f} s")
        return out


def _stale_of(inf: Informer) -> Callable[[], float]:
    return lambda: inf.stale_for


def _rv(obj: Json) -> int:
    try:
        return int(Meta.of(obj).resource_version or 0)
    except ValueError:
        return 0


# The watched kinds, one informer each (``Controller.informers``, by kind), in the order their informers start: the children first, so a
# TrainJob's first reconcile finds them (its workers start only once all have synced anyway).
WATCHES: tuple[Watch, ...] = (
    Watch(api.WORKLOAD, slim.workload, Controller._enq_wl),
    Watch(api.POD, slim.pod, Controller.enqueue_child, labels.TRAINJOB, {"tj": tj_index}),
    Watch(
        api.WORKFLOW,
        slim.workflow,
        Controller._enq_wf,
        labels.TRAINJOB,
        {"tj": tj_index, "group": _group_index},
    ),
    Watch(api.TRAINJOB, slim.trainjob, Controller._enq),
)
