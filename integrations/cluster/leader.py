"""Leader election through a ``coordination.k8s.io/v1`` Lease (client-go's leaderelection).

A candidate acquires the Lease when it is absent, already its own, or expired
(``renewTime + leaseDurationSeconds`` in the past), writing with the Lease's
``resourceVersion`` so two candidates cannot both win; the leader renews every
``retry_period``; failing to renew for ``lease_duration`` means leadership is
lost and the process must stop acting (the controller exits, like
controller-runtime).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from trainweave.integrations.views import api
from trainweave.integrations.views.times import format_micro_time, parse_time

Json = dict[str, Any]
log = logging.getLogger("trainweave.controller")


def lease_body(
    name: str, namespace: str, identity: str, duration: int, now: datetime, base: Json | None
) -> Json:
    """The Lease as ``identity`` holds it at ``now`` (keeps resourceVersion/acquireTime)."""
    old_spec = (base or {}).get("spec") or {}
    same = old_spec.get("holderIdentity") == identity
    transitions = int(old_spec.get("leaseTransitions") or 0) + (0 if same or not base else 1)
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


def can_take(lease: Json | None, identity: str, now: datetime) -> bool:
    """Absent, ours, or expired. Pure."""
    if lease is None:
        return True
    spec = lease.get("spec") or {}
    if spec.get("holderIdentity") in (identity, None, ""):
        return True
    renew = parse_time(str(spec.get("renewTime") or spec.get("acquireTime") or ""))
    if renew is None:
        return True
    return (now - renew).total_seconds() > int(spec.get("leaseDurationSeconds") or 15)


class LeaderElector:
    """Acquire, then keep renewing; ``on_lost`` when renewal fails for too long."""

    def __init__(
        self,
        send: api.Send,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: int = 15,
        retry_period: float = 2.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.send, self.namespace, self.name = send, namespace, name
        self.identity, self.duration, self.period = identity, lease_duration, retry_period
        self.now = now
        self.is_leader = threading.Event()
        self.stopped = threading.Event()

    def try_acquire(self) -> bool:
        """One attempt to take or renew the Lease."""
        try:
            lease: Json | None = self.send(api.get(api.LEASE, self.namespace, self.name))
        except api.ApiError as err:
            if not err.not_found:
                log.warning("leader election: %s", err)
                return False
            lease = None
        now = self.now()
        if not can_take(lease, self.identity, now):
            return False
        body = lease_body(self.name, self.namespace, self.identity, self.duration, now, lease)
        try:
            if lease is None:
                self.send(api.create(api.LEASE, self.namespace, body))
            else:
                self.send(api.update(api.LEASE, self.namespace, self.name, body))
            return True
        except api.ApiError as err:
            if not err.conflict:
                log.warning("leader election: %s", err)
            return False

    def acquire(self) -> bool:
        """Block until leader (True) or stopped (False)."""
        while not self.stopped.is_set():
            if self.try_acquire():
                self.is_leader.set()
                log.info("became leader (%s)", self.identity)
                return True
            self.stopped.wait(self.period)
        return False

    def keep(self, on_lost: Callable[[], None]) -> threading.Thread:
        """Renew in a daemon thread; call ``on_lost`` once renewal lapses."""

        def loop() -> None:
            last = time.monotonic()
            try:
                while not self.stopped.wait(self.period):
                    try:
                        renewed = self.try_acquire()
                    except Exception:  # any failure is a failed renewal
                        log.exception("leader election: renewing")
                        renewed = False
                    if renewed:
                        last = time.monotonic()
                    elif time.monotonic() - last > self.duration * 2 / 3:
                        return
            finally:
                if not self.stopped.is_set():  # lapsed, or the loop died: stop leading
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
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                self.send(api.update(api.LEASE, self.namespace, self.name, lease))
        except api.ApiError as err:
            log.warning("releasing lease: %s", err)
