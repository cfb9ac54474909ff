"""Skew-proof leader election (issue 37, item 3): two candidates on one Lease, each with its own
wall clock (skewed by an hour either way) and its own monotonic clock, driven step by step in
fake time. Expiry is judged on the observer's monotonic clock from when it saw the Lease change
(client-go's observedTime), never from the other's ``renewTime``."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from tests.unit.fakeapi import FakeApi, Transport
from trainweave.integrations.cluster.controller import Config, Controller
from trainweave.integrations.cluster.leader import LeaderElector
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.requests import api

T0 = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
HOUR = 3600.0
D, P = 15, 2.0  # leaseDurationSeconds, retry period (the controller's defaults)


@dataclass
class World:
    """The one true time; each replica reads it through its own clocks."""

    t: float = 0.0


def candidate(
    world: World, server: FakeApi, identity: str, skew: float, mono: float
) -> LeaderElector:
    """A candidate whose wall clock is ``skew`` seconds off and whose monotonic clock starts
    anywhere (``mono``)."""
    return LeaderElector(
        Transport(server),
        "trainweave-system",
        "lease",
        identity,
        D,
        P,
        now=lambda: T0 + timedelta(seconds=world.t + skew),
        clock=lambda: world.t + mono,
    )


def run(
    world: World,
    leader: LeaderElector,
    standby: LeaderElector,
    until: float,
    kill: float,
    phase: float,
) -> float | None:
    """The leader takes the Lease at 0 and renews every ``P`` until ``kill``; the standby tries
    at ``phase`` and then after each ``next_try()``, as ``acquire`` does. The true time the
    standby took the Lease (None: never). Asserts at every step that never both lead."""
    assert leader.try_acquire()
    leader.is_leader.set()
    next_renew, next_try = P, phase
    while world.t < until:
        world.t = min(next_renew, next_try)
        if world.t == next_renew and world.t <= kill:
            leader.try_acquire()
            next_renew += P
        elif world.t == next_try:
            if standby.try_acquire():
                standby.is_leader.set()
                assert not leader.leading(), "the old leader still acts"
                return world.t
            next_try = world.t + standby.next_try()
        else:
            next_renew = float("inf")
        assert not (leader.leading() and standby.leading())
    return None


@pytest.mark.parametrize("phase", [0.01, 1.0, 1.99])
def test_a_standby_an_hour_ahead_never_takes_a_live_lease(phase: float) -> None:
    world, server = World(), FakeApi(now=lambda: T0)
    leader = candidate(world, server, "a", 0.0, 500.0)
    standby = candidate(world, server, "b", +HOUR, -80.0)
    assert run(world, leader, standby, until=20 * D, kill=float("inf"), phase=phase) is None
    assert leader.leading()


@pytest.mark.parametrize("phase", [0.01, 1.0, 1.99])
@pytest.mark.parametrize("kill", [30.0, 31.0, 31.99])  # right after a renewal, between, before
def test_a_standby_an_hour_behind_takes_a_dead_leaders_lease_within_duration_plus_period(
    phase: float, kill: float
) -> None:
    world, server = World(), FakeApi(now=lambda: T0)
    leader = candidate(world, server, "a", 0.0, 500.0)
    standby = candidate(world, server, "b", -HOUR, -80.0)
    took = run(world, leader, standby, until=kill + 10 * D, kill=kill, phase=phase)
    assert took is not None
    assert took - kill <= D + P, took - kill
    assert (
        leader.renewed_at is not None and took > leader.renewed_at - 500.0 + leader.renew_deadline
    )


def test_the_skewed_clocks_would_have_fooled_the_renew_time_rule() -> None:
    """The same Lease read by the old rule (``renewTime + duration`` against the local wall
    clock): the standby an hour ahead would take it at once, the one an hour behind an hour
    late. The record it reads is the leader's own."""
    world, server = World(), FakeApi(now=lambda: T0)
    leader = candidate(world, server, "a", 0.0, 0.0)
    assert leader.try_acquire()
    lease = Transport(server).send(api.get(api.LEASE, "trainweave-system", "lease"))
    renew = datetime.fromisoformat(lease["spec"]["renewTime"].replace("Z", "+00:00"))
    assert (T0 + timedelta(seconds=HOUR) - renew).total_seconds() > D  # "expired" to one ahead
    assert (T0 - timedelta(seconds=HOUR) + timedelta(seconds=D + P) - renew).total_seconds() < 0


def test_a_leader_whose_renewals_fail_stops_leading_at_the_renew_deadline() -> None:
    world, server = World(), FakeApi(now=lambda: T0)
    leader = candidate(world, server, "a", 0.0, 0.0)
    assert leader.try_acquire()
    leader.is_leader.set()
    assert leader.renew_deadline == 10.0 and leader.leading()
    world.t = 9.99
    assert leader.leading()
    world.t = 10.0  # no renewal since 0 (the API unreachable, the thread stuck or dead)
    assert not leader.leading()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_dead_renew_thread_ends_leadership_and_calls_on_lost() -> None:
    server = FakeApi(now=lambda: T0)
    elector = LeaderElector(Transport(server), "trainweave-system", "lease", "a", 15, 0.01)
    assert elector.try_acquire()
    elector.is_leader.set()
    lost = threading.Event()

    class Killed(BaseException):
        """What no ``except Exception`` catches: the thread dies."""

    def dies() -> bool:
        raise Killed

    elector.try_acquire = dies  # type: ignore[method-assign]
    thread = elector.keep(lost.set)
    assert lost.wait(10)
    thread.join(10)
    assert not elector.is_leader.is_set() and not elector.leading()


def test_a_lease_taken_by_another_ends_leadership_at_the_next_renewal() -> None:
    world, server = World(), FakeApi(now=lambda: T0)
    a = candidate(world, server, "a", 0.0, 0.0)
    b = candidate(world, server, "b", 0.0, 0.0)
    assert a.try_acquire()
    a.is_leader.set()
    lease = Transport(server).send(api.get(api.LEASE, "trainweave-system", "lease"))
    lease["spec"]["holderIdentity"] = "b"  # an operator hands it over by hand
    Transport(server).send(api.update(api.LEASE, "trainweave-system", "lease", lease))
    world.t = P
    assert not a.try_acquire() and a.held_by_other()
    assert not b.held_by_other()


def test_release_lets_a_standby_take_over_at_once() -> None:
    world, server = World(), FakeApi(now=lambda: T0)
    a = candidate(world, server, "a", 0.0, 0.0)
    b = candidate(world, server, "b", +HOUR, 0.0)
    assert a.try_acquire()
    a.is_leader.set()
    world.t = 1.0
    assert not b.try_acquire()  # a holds it
    a.release()  # SIGTERM
    world.t = 1.5
    assert b.try_acquire()


def test_a_controller_that_stopped_leading_writes_nothing() -> None:
    server = FakeApi(now=lambda: T0)
    leading = [True]
    ctl = Controller(
        Transport(server),
        Transport(server).stream,
        lambda *a: [],
        Config(),
        Metrics(),
        lambda: T0,
        may_write=lambda: leading[0],
    )
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns"}}
    ctl.send(api.create(api.CONFIGMAP, "ns", cm))
    leading[0] = False
    with pytest.raises(api.ApiError, match="NotLeading"):
        ctl.send(
            api.create(api.CONFIGMAP, "ns", cm | {"metadata": {"name": "y", "namespace": "ns"}})
        )
    ctl.send(api.get(api.CONFIGMAP, "ns", "x"))  # reads go on


def test_the_timings_must_leave_the_leader_time_to_stop() -> None:
    with pytest.raises(ValueError, match="renew_deadline < lease_duration"):
        LeaderElector(Transport(FakeApi()), "n", "l", "a", 15, 2.0, renew_deadline=15)
