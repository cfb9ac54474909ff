"""Safe to run unattended (issue 37): a tenant cannot stop the controller, and leader election
holds with clocks an hour apart (docs/controller.md#probes-and-failure-modes).

- ``test_hostile_workflows_of_a_tenant_do_not_stop_the_controller``: a team's ServiceAccount
  writes Workflows labelled ``trainweave.io/trainjob`` in its own namespace, specs Argo's CRD
  admits and statuses with ``compressedNodes`` that is not base64 (or not gzip, or not JSON) and
  nodes of odd shapes, while a good TrainJob in another namespace runs to ``Complete`` under a
  controller watching every namespace (so ``serial``: it would reconcile other tests'
  TrainJobs). ``/healthz`` and ``/readyz`` answer 200 throughout, the process stays up and
  ``trainweave_object_errors_total{kind="Workflow"}`` counts the unreadable Workflows.
- ``test_a_standby_an_hour_behind_takes_over_a_killed_leader_in_time``: leader ``a`` on the true
  clock, standby ``b`` under ``faketime -f -1h``; ``a`` SIGKILLed, ``b`` holds the Lease within
  leaseDurationSeconds + retryPeriod (15 + 2 s, the controller's defaults; 1 s more for this
  test's own polling and request).
- ``test_a_standby_an_hour_ahead_never_takes_a_live_lease``: ``b`` under ``faketime -f +1h``
  campaigns for two Lease durations while ``a`` leads and runs a TrainJob to ``Complete``;
  the Lease stays ``a``'s and ``b`` writes nothing.

Needs Debian's ``faketime`` (``tests/e2e/unattended.py`` installs it with apt-get when missing);
the skewed process's wall clock is off, its monotonic clock is not (``FAKETIME_DONT_FAKE_MONOTONIC``),
as on a host whose time is wrong.
"""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from .controller_proc import ControllerProc
from .kube import E2E_NAMESPACE_LABEL, Kube, condition_is, wait_until
from .pipelines import apply, example, trainjob, wait_condition
from .unattended import (
    SkewedController,
    faketime,
    insecure_kubeconfig,
    lease_gets,
    lease_holder,
    samples,
    tenant_api,
    write_hostile,
    writes,
)

pytestmark = pytest.mark.e2e
LEASE_DURATION, RETRY_PERIOD = 15, 2.0  # controller.Config's defaults
POLL_SLACK = 1.0  # this test's Lease polling (0.1 s) and its GET


@pytest.fixture
def tenant(kube: Kube) -> Iterator[str]:
    """Another team's namespace."""
    name = f"tenant-{uuid.uuid4().hex[:6]}"
    kube.create_namespace(name, {E2E_NAMESPACE_LABEL: "true"})
    yield name
    kube.delete_namespace(name)


def _delete_lease(kube: Kube, namespace: str, name: str) -> None:
    try:
        client.CoordinationV1Api(kube.api).delete_namespaced_lease(name, namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise


def _workflow_errors(ctl: ControllerProc) -> float:
    _, text = ctl.get("/metrics")
    return sum(
        v
        for lbl, v in samples(text, "trainweave_object_errors_total")
        if lbl.get("kind") == "Workflow"
    )


@pytest.mark.serial
def test_hostile_workflows_of_a_tenant_do_not_stop_the_controller(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    tenant: str,
    controller_kubeconfig: Path,
    tmp_path: Path,
) -> None:
    queues()
    ctl = ControllerProc(namespace, "a", controller_kubeconfig, args=("--namespace", ""))
    try:
        wait_until("controller ready", lambda: ctl.get("/readyz")[0] == 200, timeout=60)
        before = _workflow_errors(ctl)
        api = tenant_api(kube, tenant, tmp_path / "tenant-kubeconfig")
        tj, rt = example(namespace)
        apply(kube, namespace, tj, rt)
        # labelled as the good TrainJob's name (another namespace's) and as a name nobody has
        accepted = write_hostile(api, tenant, "ft", rounds=6)
        accepted += write_hostile(api, tenant, "nobody", rounds=2)
        assert accepted > 0, "the API server refused every hostile write"
        probes: list[tuple[int, int]] = []

        def complete() -> bool:
            probes.append((ctl.get("/healthz")[0], ctl.get("/readyz")[0]))
            assert ctl.proc.poll() is None, "the controller exited"
            return condition_is(trainjob(kube, namespace), "Complete")

        wait_until("the good TrainJob Complete beside the hostile Workflows", complete, timeout=300)
        assert probes and all(p == (200, 200) for p in probes), sorted(set(probes))
        wait_until(
            "trainweave_object_errors_total{kind=Workflow} counts them",
            lambda: _workflow_errors(ctl) > before,
            timeout=30,
        )
        assert ctl.get("/healthz") == (200, "ok") and ctl.get("/readyz") == (200, "ok")
    finally:
        ctl.stop(signal.SIGKILL)
        _delete_lease(kube, ctl.lease_namespace, ctl.lease_name)


@pytest.fixture
def skewed_kubeconfig(controller_kubeconfig: Path, tmp_path: Path) -> Path:
    faketime()  # install before the clock starts
    return insecure_kubeconfig(controller_kubeconfig, tmp_path / "skewed-kubeconfig")


def _leader_a(kube: Kube, start: Callable[[str], ControllerProc]) -> ControllerProc:
    a = start("a")
    wait_until(
        "a holds the Lease",
        lambda: lease_holder(kube, a.lease_namespace, a.lease_name) == "a",
        timeout=30,
    )
    return a


def _campaigned(b: SkewedController, times: int) -> Callable[[], bool]:
    """``b`` has read the Lease ``times`` times (a campaign attempt each)."""
    return lambda: lease_gets(b.get("/metrics")[1]) >= times


def test_a_standby_an_hour_behind_takes_over_a_killed_leader_in_time(
    kube: Kube,
    namespace: str,
    start_controller: Callable[[str], ControllerProc],
    skewed_kubeconfig: Path,
    record_property: Callable[[str, object], None],
) -> None:
    a = _leader_a(kube, start_controller)
    b = SkewedController(namespace, "b", skewed_kubeconfig, "-1h")
    try:
        wait_until("b campaigns", _campaigned(b, 3), timeout=60)
        assert lease_holder(kube, a.lease_namespace, a.lease_name) == "a"
        a.stop(signal.SIGKILL)
        killed = time.monotonic()
        wait_until(
            "b holds the Lease",
            lambda: lease_holder(kube, a.lease_namespace, a.lease_name) == "b",
            timeout=LEASE_DURATION + RETRY_PERIOD + 30,
            interval=0.1,
        )
        took = time.monotonic() - killed
        print(f"failover with the standby an hour behind: {took:.1f} s")
        record_property("failover_seconds", round(took, 1))  # in .cache/e2e/*.xml
        assert took <= LEASE_DURATION + RETRY_PERIOD + POLL_SLACK, took
        wait_until("b ready as the leader", lambda: b.get("/readyz")[0] == 200, timeout=60)
    finally:
        b.stop()


def test_a_standby_an_hour_ahead_never_takes_a_live_lease(
    kube: Kube,
    namespace: str,
    queues: Callable[..., None],
    start_controller: Callable[[str], ControllerProc],
    skewed_kubeconfig: Path,
) -> None:
    queues()
    a = _leader_a(kube, start_controller)
    b = SkewedController(namespace, "b", skewed_kubeconfig, "+1h")
    try:
        tj, rt = example(namespace)
        apply(kube, namespace, tj, rt)
        holders: set[str] = set()

        def watched_two_durations() -> bool:
            holders.add(lease_holder(kube, a.lease_namespace, a.lease_name))
            return _campaigned(b, int(2 * LEASE_DURATION / RETRY_PERIOD))()

        wait_until("b campaigns for two Lease durations", watched_two_durations, timeout=120)
        wait_condition(kube, namespace, "Complete", timeout=180)
        holders.add(lease_holder(kube, a.lease_namespace, a.lease_name))
        assert holders == {"a"}, holders
        assert writes(b.get("/metrics")[1]) == 0  # b never wrote: one writer all along
        assert writes(a.get("/metrics")[1]) > 0
        assert b.proc.poll() is None and b.get("/healthz")[0] == 200
    finally:
        b.stop()
