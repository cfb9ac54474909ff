"""Leader election through a ``coordination.k8s.io/v1`` Lease, skew-proof as client-go's
(``tools/leaderelection/leaderelection.go`` of k8s.io/client-go v0.36.4).

No replica trusts another's clock. A candidate keeps the Lease's spec as it last saw it
(``observed``) and the time of its own monotonic clock when that spec last changed
(``observed_at``, client-go's ``observedRecord``/``observedTime``); a Lease held by another is
expired only once ``observed_at + leaseDurationSeconds`` has passed on that clock, whatever its
``renewTime`` says. ``renewTime``/``acquireTime`` are written from the wall clock for people and
tools only. A standby whose clock runs an hour ahead therefore never takes a live Lease, and one
an hour behind takes a dead leader's Lease within ``leaseDurationSeconds`` of last seeing it
change (it wakes when the Lease would expire, not only every ``retry_period``): within
``leaseDurationSeconds + retry_period`` of the leader's death.

The leader renews every ``retry_period`` (writing with the Lease's ``resourceVersion``, so two
candidates cannot both win) and leads only while its last successful renewal started less than
``renew_deadline`` ago on its monotonic clock (``leading``; client-go's ``RenewDeadline``, 10 s of
a 15 s Lease by default). ``renew_deadline < leaseDurationSeconds``, and the renewal's time is
taken before its request is sent, so the leader has stopped acting before any standby can see the
Lease expire, even when renewing hangs or its thread dies (``keep`` calls ``on_lost`` then, and
``process.run`` checks ``leading`` on its own). ``release`` (SIGTERM) empties the holder so a
standby takes over at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from trainweave.integrations.views.read.times import format_micro_time
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
log = logging.getLogger("trainweave.controller")
RENEW_FRACTION = 2 / 3  # renew deadline / lease duration (client-go's defaults: 10 s of 15 s)
EARLIEST_RETRY = 0.05  # seconds: a wait for a Lease about to expire is never shorter


def lease_body(
    name: str, namespace: str, identity: str, duration: int, now: datetime, base: Json | None
) -> Json:
    """The Lease as ``identity`` holds it at ``now`` (keeps resourceVersion/acquireTime)."""
    old_spec = _spec(base)
    same = old_spec.get("holderIdentity") == identity
    transitions = _int(old_spec.get("leaseTransitions")) + (0 if same or not base else 1)
    meta: Json = {"name": name, "namespace": namespace}
    if base:
        meta["resourceVersion"] = base["metadata"]["resourceVersion"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": identity,
            "leaseDurationSeconds": duration,
            "acquireTime": old_spec.get("acquireTime") if same else format_micro_time(now),
            "renewTime": format_micro_time(now),
            "leaseTransitions": transitions,
        },
    }


def _spec(lease: Json | None) -> Json:
    spec = (lease or {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class LeaderElector:
    """Acquire, then keep renewing; ``on_lost`` when renewal lapses."""

    def __init__(
        self,
        send: api.Send,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: int = 15,
        retry_period: float = 2.0,
        renew_deadline: float | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``now``: the wall clock, only for the times written on the Lease; ``clock``: the
        monotonic clock every decision is taken on."""
        self.send, self.namespace, self.name = send, namespace, name
        self.identity, self.duration, self.period = identity, lease_duration, retry_period
        self.renew_deadline = (
            lease_duration * RENEW_FRACTION if renew_deadline is None else renew_deadline
        )
        if not 0 < retry_period < self.renew_deadline < lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")
        self.now, self.clock = now, clock
        self.observed: Json | None = None  # the Lease's spec as last seen
        self.observed_at = clock()  # clock() when ``observed`` last changed
        self.renewed_at: float | None = None  # clock() before our last successful write
        self.is_leader = threading.Event()
        self.stopped = threading.Event()
        self.lock = threading.Lock()

    # --- what this replica knows ----------------------------------------------------------
    def _observe(self, spec: Json | None, at: float) -> None:
        with self.lock:
            if spec != self.observed:
                self.observed, self.observed_at = spec, at

    def _observed_duration(self) -> float:
        found = _int((self.observed or {}).get("leaseDurationSeconds"))
        return float(found) if found > 0 else float(self.duration)

    def held_by_other(self) -> bool:
        """The Lease, as last seen, is another's and not expired on this replica's clock."""
        with self.lock:
            holder = (self.observed or {}).get("holderIdentity")
            if not holder or holder == self.identity:
                return False
            return self.clock() < self.observed_at + self._observed_duration()

    def next_try(self) -> float:
        """Seconds until the next attempt: ``retry_period``, or sooner when the Lease as last
        seen expires sooner (so a dead leader's Lease is taken as soon as it may be)."""
        with self.lock:
            expires = self.observed_at + self._observed_duration() - self.clock()
        return max(EARLIEST_RETRY, min(self.period, expires))

    def leading(self) -> bool:
        """Leader now: acquired, and the last successful renewal started less than
        ``renew_deadline`` ago. Once false, this replica must not act."""
        renewed = self.renewed_at
        return (
            self.is_leader.is_set()
            and renewed is not None
            and self.clock() - renewed < self.renew_deadline
        )

    # --- one attempt -------------------------------------------------------------------------
    def try_acquire(self) -> bool:
        """One attempt to take or renew the Lease."""
        started = self.clock()
        try:
            lease: Json | None = self.send(api.get(api.LEASE, self.namespace, self.name))
        except api.ApiError as err:
            if not err.not_found:
                log.warning("leader election: %s", err)
                return False
            lease = None
        if lease is not None:
            self._observe(_spec(lease), self.clock())
            if self.held_by_other():
                return False
        body = lease_body(
            self.name, self.namespace, self.identity, self.duration, self.now(), lease
        )
        try:
            if lease is None:
                self.send(api.create(api.LEASE, self.namespace, body))
            else:
                self.send(api.update(api.LEASE, self.namespace, self.name, body))
        except api.ApiError as err:
            if not err.conflict:
                log.warning("leader election: %s", err)
            return False
        self._observe(body["spec"], started)
        self.renewed_at = started
        return True

    # --- loops ---------------------------------------------------------------------------------
    def acquire(self) -> bool:
        """Block until leader (True) or stopped (False)."""
        while not self.stopped.is_set():
            if self.try_acquire():
                self.is_leader.set()
                log.info("became leader (%s)", self.identity)
                return True
            self.stopped.wait(self.next_try())
        return False

    def keep(self, on_lost: Callable[[], None]) -> threading.Thread:
        """Renew every ``retry_period`` in a daemon thread; stop leading and call ``on_lost``
        once when leadership ends: the renew deadline passed, another holds the Lease, or the
        loop itself died."""

        def loop() -> None:
            try:
                while not self.stopped.wait(self.period):
                    try:
                        self.try_acquire()
                    except Exception:  # any failure is a failed renewal
                        log.exception("leader election: renewing")
                    if not self.leading() or self.held_by_other():
                        return
            finally:
                if not self.stopped.is_set():
                    self.is_leader.clear()
                    log.error("lost leadership (%s)", self.identity)
                    on_lost()

        t = threading.Thread(target=loop, name="leader-renew", daemon=True)
        t.start()
        return t

    def release(self) -> None:
        """Give the Lease up on a clean shutdown (empty holder), so a standby takes over."""
        self.stopped.set()
        if not self.is_leader.is_set():
            return
        try:
            lease = self.send(api.get(api.LEASE, self.namespace, self.name))
            if _spec(lease).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                self.send(api.update(api.LEASE, self.namespace, self.name, lease))
        except api.ApiError as err:
            log.warning("releasing lease: %s", err)
