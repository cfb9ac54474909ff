"""Prometheus metrics of the controller (prometheus-client), on their own registry.

- ``trainweave_step_admission_wait_seconds{queue,role}``: Workload creation ->
  QuotaReserved, observed once per step Workload;
- ``trainweave_reserved_resource_seconds_total{cluster_queue,flavor,resource}``:
  resource x holding seconds, added when a step stops holding quota (each series exists,
  at 0, from the moment a step of it holds quota: ``Metrics.hold``);
- ``trainweave_trainjobs{state}``: TrainJobs by Running/Suspended/Complete/Failed;
- ``trainweave_step_waiting_since_seconds{namespace,trainjob,step,queue}``: creation time
  (Unix seconds) of each step Workload waiting for quota now; ``time() - it`` is its wait;
- ``trainweave_step_quota_leaked{namespace,trainjob,step,cluster_queue}``: 1 per step Workload
  holding quota though its step is done for good (the controller is releasing it; a series
  that stays is a leak: deploy/prometheus-rules.yaml alerts after 10 min);
- ``trainweave_api_requests_total{verb,resource}``, ``trainweave_reconciles_total{result}``
  and ``trainweave_reconcile_seconds``: the controller's own cost;
- ``trainweave_object_errors_total{kind}``: objects skipped because reading one raised (its kind
  and key are in the log; one of a TrainJob's children also gets a Warning Event on it);
- ``trainweave_informer_seconds_since_success{kind}``: seconds since each informer last listed,
  got a watch event or saw its watch close cleanly (``informer.STALE_AFTER``: not keeping up).

``serve_http`` serves them on ``/metrics``, beside the ``/healthz`` (every watched thread runs,
``health.Health``) and ``/readyz`` (caches synced and fresh) probes; each probe's body names
what is wrong.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from trainweave.integrations.views.read.quota import MetricEvent, StepQuota
from trainweave.integrations.views.read.times import parse_time
from trainweave.integrations.views.requests import api
from trainweave.labels import TrainJobState

WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
# one start's dry-run creates (about 7 for llm-finetune): milliseconds on a quiet API server,
# seconds behind a slow admission webhook (its timeoutSeconds is at most 30)
JUDGE_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30)
STATES = tuple(s.value for s in TrainJobState)


def _rest(path: str) -> list[str]:
    """A REST path's segments after the group/version and namespace: ``[resource, name, sub]``."""
    parts = [p for p in path.split("/") if p]
    rest = parts[3:] if parts and parts[0] == "apis" else parts[2:]
    if len(rest) >= 2 and rest[0] == "namespaces":
        rest = rest[2:] if len(rest) > 2 else ["namespaces"]
    return rest


def resource_of(path: str) -> str:
    """The plural resource of a REST path (``/api/v1/namespaces/x/pods/y`` -> pods)."""
    rest = _rest(path)
    return rest[0] if rest else ""


def subresource_of(path: str) -> str:
    """The subresource of a REST path (``.../trainjobs/x/status`` -> status), else ``""``."""
    rest = _rest(path)
    return rest[2] if len(rest) >= 3 else ""


class Metrics:
    """All metrics, plus in-process request tallies (reads/writes, for the benchmark)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "trainweave_api_requests",
            "API requests sent",
            ["verb", "resource", "subresource"],
            registry=r,
        )
        self.admission_wait = Histogram(
            "trainweave_step_admission_wait_seconds",
            "Step Workload creation to QuotaReserved",
            ["queue", "role"],
            buckets=WAIT_BUCKETS,
            registry=r,
        )
        self.reserved = Counter(
            "trainweave_reserved_resource_seconds",
            "Reserved quota x holding time of finished step Workloads",
            ["cluster_queue", "flavor", "resource"],
            registry=r,
        )
        self.trainjobs = Gauge("trainweave_trainjobs", "TrainJobs by state", ["state"], registry=r)
        self.reconciles = Counter(
            "trainweave_reconciles", "Reconciles by result", ["result"], registry=r
        )
        self.reconcile_seconds = Histogram(
            "trainweave_reconcile_seconds", "Time per reconcile", registry=r
        )
        self.judge_seconds = Histogram(
            "trainweave_judge_seconds",
            "Time the API server took to judge one start (its dry-run creates, in order)",
            buckets=JUDGE_BUCKETS,
            registry=r,
        )
        self.queue_depth = Gauge(
            "trainweave_workqueue_depth", "TrainJob keys waiting for a worker", registry=r
        )
        self.waiting_since = Gauge(
            "trainweave_step_waiting_since_seconds",
            "Creation time of a step Workload waiting for quota (Unix seconds)",
            ["namespace", "trainjob", "step", "queue"],
            registry=r,
        )
        self.leaked = Gauge(
            "trainweave_step_quota_leaked",
            "Step Workload holding quota though its step is done for good",
            ["namespace", "trainjob", "step", "cluster_queue"],
            registry=r,
        )
        self.events_dropped = Counter(
            "trainweave_events_dropped",
            "Events not sent: more were waiting than the sender keeps",
            registry=r,
        )
        self.object_errors = Counter(
            "trainweave_object_errors",
            "Objects skipped because reading them raised",
            ["kind"],
            registry=r,
        )
        self.informer_stale = Gauge(
            "trainweave_informer_seconds_since_success",
            "Seconds since the informer last listed, got a watch event or closed a watch cleanly",
            ["kind"],
            registry=r,
        )
        self.tally: Tally[str] = Tally()
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._counts: Tally[str] = Tally()  # TrainJobs per state (the values of _states)
        self._steps: dict[str, tuple[set[tuple[str, ...]], set[tuple[str, ...]]]] = {}

    def request(self, req: api.Request) -> None:
        """Count one request (``watch`` for watch GETs)."""
        watch = ("watch", "true") in req.query
        verb = "watch" if watch else req.method.lower()
        self.requests.labels(verb, resource_of(req.path), subresource_of(req.path)).inc()
        with self._lock:
            self.tally["watch" if watch else "write" if req.is_write else "read"] += 1

    def apply(self, events: Iterable[MetricEvent]) -> None:
        """Record the quota observations of a state change."""
        for ev in events:
            lbl = dict(ev.labels)
            if ev.kind == "wait":
                self.admission_wait.labels(**lbl).observe(ev.value)
            elif ev.kind == "reserved":
                self.reserved.labels(**lbl).inc(ev.value)

    def hold(self, holding: Iterable[StepQuota]) -> None:
        """Make the resource-seconds series of each step holding quota exist, at 0 until a
        step of it ends: Prometheus' ``increase()`` counts nothing of a series' first sample,
        so a series born with a step's total would lose that step's GPU-hours."""
        for q in holding:
            if q.cluster_queue:
                for res in q.usage:
                    self.reserved.labels(q.cluster_queue, q.flavors.get(res, ""), res)

    def set_state(self, key: str, state: TrainJobState | None) -> None:
        """Track one TrainJob's state (None: gone, or another controller's) and refresh the
        gauge."""
        with self._lock:
            # counted as they change: a recount of every TrainJob cost O(N) per reconcile
            old = self._states.pop(key, None)
            if state is not None:
                self._states[key] = state.value
            if old == (state.value if state is not None else None):
                return
            if old is not None:
                self._counts[old] -= 1
            if state is not None:
                self._counts[state.value] += 1
            counts = dict(self._counts)
        for s in STATES:
            self.trainjobs.labels(s).set(counts.get(s, 0))

    def set_steps(
        self, key: str, waiting: Iterable[StepQuota] = (), leaked: Iterable[StepQuota] = ()
    ) -> None:
        """Replace one TrainJob's waiting and leaked step series (nothing: TrainJob gone)."""
        ns, _, name = key.partition("/")
        wait_series: dict[tuple[str, ...], float] = {}
        for q in waiting:
            created = parse_time(q.created)
            if created is not None:
                wait_series[(ns, name, q.step, q.queue)] = created.timestamp()
        leak_series: set[tuple[str, ...]] = {
            (ns, name, q.step, q.cluster_queue or q.queue) for q in leaked
        }
        with self._lock:
            old_wait, old_leak = self._steps.pop(key, (set(), set()))
            if wait_series or leak_series:
                self._steps[key] = (set(wait_series), leak_series)
            for lbl in old_wait - set(wait_series):
                self.waiting_since.remove(*lbl)
            for lbl in old_leak - leak_series:
                self.leaked.remove(*lbl)
            for lbl, value in wait_series.items():
                self.waiting_since.labels(*lbl).set(value)
            for lbl in leak_series:
                self.leaked.labels(*lbl).set(1)


Probe = Callable[[], list[str]]  # what is wrong ([]: all well)


def _answer(probe: Probe, fail: int) -> tuple[int, bytes]:
    try:
        wrong = probe()
    except Exception as err:  # a probe that cannot tell: not healthy
        wrong = [f"probe failed: {err!r}"]
    if not wrong:
        return 200, b"ok"
    return fail, ("\n".join(wrong) + "\n").encode()


def serve_http(
    bind: str, metrics: Metrics, ready: Probe, live: Probe = lambda: []
) -> ThreadingHTTPServer:
    """/healthz (``live``: 500 when it names a problem), /readyz (``ready``: 503), /metrics on
    ``host:port`` in a daemon thread."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ctype = "text/plain"
            if self.path == "/metrics":
                code, body, ctype = 200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST
            elif self.path == "/healthz":
                code, body = _answer(live, 500)
            elif self.path == "/readyz":
                code, body = _answer(ready, 503)
            else:
                code, body = 404, b"not found"
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    host, _, port = bind.rpartition(":")
    server = ThreadingHTTPServer((host.strip("[]") or "127.0.0.1", int(port)), Handler)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    return server
