"""Prometheus metrics of the controller (prometheus-client), on their own registry.

- ``trainweave_step_admission_wait_seconds{queue,role}``: Workload creation ->
  QuotaReserved, observed once per step Workload;
- ``trainweave_reserved_resource_seconds_total{cluster_queue,flavor,resource}``:
  resource x holding seconds, added when a step stops holding quota;
- ``trainweave_trainjobs{state}``: TrainJobs by Running/Suspended/Complete/Failed;
- ``trainweave_api_requests_total{verb,resource}``, ``trainweave_reconciles_total{result}``
  and ``trainweave_reconcile_seconds``: the controller's own cost.
"""

from __future__ import annotations

import threading
from collections import Counter as Tally
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from trainweave.integrations import api
from trainweave.integrations.quota import MetricEvent

WAIT_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400)
STATES = ("Running", "Suspended", "Complete", "Failed")


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
        self.queue_depth = Gauge(
            "trainweave_workqueue_depth", "TrainJob keys waiting for a worker", registry=r
        )
        self.tally: Tally[str] = Tally()
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}

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

    def set_state(self, key: str, state: str | None) -> None:
        """Track one TrainJob's state (None: gone) and refresh the gauge."""
        with self._lock:
            if state is None:
                self._states.pop(key, None)
            else:
                self._states[key] = state
            counts = Tally(self._states.values())
        for s in STATES:
            self.trainjobs.labels(s).set(counts.get(s, 0))
