"""Chaos, reduced (issue: faults, load and hostile input): 20 pipelines of mixed scenarios under
two controller replicas while a seeded schedule SIGKILLs the leading controller 5 times and
crashes Kueue's manager, Argo's workflow-controller and kube-apiserver once each
(`hack/cluster.py restart`; the apiserver's breaks every watch of every client).

At the end every TrainJob is in the state and reason its scenario expects, no TrainJob has a
Workflow it should not have (duplicates), no Workload holds quota and every ClusterQueue's
reservation is back to zero, and each TrainJob's terminal condition followed its Workflow's end
within a bound. The last line reads ``chaos: pipelines=N faults=K mismatches=0 leaked-quota=0
duplicates=0 max-lag-s=S``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from trainweave import quantity

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition, parse_time, wait_until
from .pipelines import TRAINER, apply, example, workflows

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
ROOT = Path(__file__).resolve().parents[2]
SEED = 7
# `make chaos` runs it 10 times as large: 200 pipelines, 50 controller kills, 10 restarts of
# Kueue and of Argo (make test: 1)
SCALE = int(os.environ.get("TRAINWEAVE_CHAOS_SCALE", "1"))
Json = dict[str, Any]
# a TrainJob's terminal condition may trail its Workflow's finishedAt by this much (a controller
# kill costs the Lease's expiry, 15 s, before the other replica reconciles) ...
MAX_LAG_S = 45
# ... plus one takeover (leaseDurationSeconds 15 + retryPeriod 2) for each further fault that
# stops the leader inside that window: a kill of the new leader before it acted, or a
# kube-apiserver restart (every replica waits for it, and for its RBAC cache: 403 meanwhile)
TAKEOVER_S = 17
LEADER_FAULTS = ("controller", "kube-apiserver")


@dataclass(frozen=True)
class Scenario:
    """One kind of pipeline and how it must end."""

    kind: str
    knobs: dict[str, Any]
    state: str  # Complete | Failed | Deleted
    reason: str = ""
    workflows: tuple[str, ...] = ("{}",)  # the Workflows it ends with ({} is its name)
    # a suspend that lands once the trainer is done (or while no controller leads) stops
    # nothing: then the first Workflow alone finishes the TrainJob
    at_most: bool = False  # the Workflows are at most these, the first of them always
    # a deadline counts from the TrainJob's creation (as Trainer's): one that runs out before any
    # replica starts the TrainJob (a burst of starts, each judged first, behind a controller kill)
    # fails it DeadlineExceeded with nothing created
    may_not_start: bool = False


SCENARIOS = [
    *[Scenario("success", {"nodes": 2, "durations": {"node": f"{3 + i}s"}}, "Complete",
               "AllJobsCompleted") for i in range(8)],
    *[Scenario("permanent", {"nodes": 1, "codes": {"node": [1]}}, "Failed", "FailedJobs")
      for _ in range(2)],
    *[Scenario("retryable", {"nodes": 1, "codes": {"node": [137, 0]}}, "Complete",
               "AllJobsCompleted") for _ in range(2)],
    Scenario("max-restarts", {"nodes": 1, "max_restarts": 1, "codes": {"node": [1]}}, "Failed",
             "ReachedMaxRestarts", ("{}", "{}-r1")),
    *[Scenario("suspend", {"nodes": 1, "durations": {"node": "12s"}}, "Complete",
               "AllJobsCompleted", ("{}", "{}-s1"), at_most=True) for _ in range(2)],
    Scenario("deadline", {"nodes": 1, "deadline": 20, "durations": {"node": "300s"}}, "Failed",
             "DeadlineExceeded", may_not_start=True),
    Scenario("delete-background", {"nodes": 1, "durations": {"node": "300s"}}, "Deleted",
             workflows=()),
    Scenario("delete-foreground", {"nodes": 1, "durations": {"node": "300s"}}, "Deleted",
             workflows=()),
    *[Scenario("gpu-heavy", {"nodes": 2, "gpus": 2, "durations": {"node": "4s"}}, "Complete",
               "AllJobsCompleted") for _ in range(2)],
]  # fmt: skip


def _restart(engine: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "hack/cluster.py"), "restart", engine],
                          capture_output=True, text=True, timeout=400)  # fmt: skip
    assert done.returncode == 0, f"restart {engine}: {done.stdout[-2000:]}"


def _leader(kube: Kube, procs: dict[str, ControllerProc]) -> ControllerProc | None:
    any_proc = next(iter(procs.values()))
    try:
        lease: Any = client.CoordinationV1Api(kube.api).read_namespaced_lease(
            any_proc.lease_name, any_proc.lease_namespace
        )
    except client.ApiException:
        return None
    return procs.get(lease.spec.holder_identity or "")


def _last(wfs: list[str]) -> str:
    """The latest attempt's Workflow: ft < ft-r1 < ft-s1."""
    return max(wfs, key=lambda w: (len(w), w))


def _lags(kube: Kube, ns: str, have: dict[str, list[str]]) -> dict[str, Lag]:
    """Per TrainJob, its terminal condition's ``lastTransitionTime`` after its last Workflow's
    ``status.finishedAt`` (the controller's and Argo's own stamps, whole seconds, one host
    clock), 0 when the TrainJob ended first (a deadline)."""
    out: dict[str, Lag] = {}
    for name, wfs in have.items():
        tj = kube.get(TRAINER, "trainjobs", name, ns)
        ends = [
            c
            for t in ("Complete", "Failed")
            if tj and (c := condition(tj, t)) and c.get("status") == "True"
        ]
        finished = (kube.workflow(ns, _last(wfs)).get("status") or {}).get("finishedAt")
        if not ends or not finished:
            continue
        start, end = parse_time(finished), parse_time(ends[0]["lastTransitionTime"])
        out[name] = Lag(max(0.0, (end - start).total_seconds()), start, end)
    return out


@dataclass(frozen=True)
class Lag:
    """How long a TrainJob's terminal condition trailed its last Workflow's end."""

    seconds: float
    finished: datetime  # the Workflow's finishedAt
    ended: datetime  # the TrainJob's terminal condition

    def allowed(self, faults: list[datetime]) -> float:
        """``MAX_LAG_S``, plus ``TAKEOVER_S`` for each leader fault after the first from one
        takeover before the Workflow ended to the condition."""
        since = self.finished - timedelta(seconds=TAKEOVER_S)
        n = sum(1 for at in faults if since <= at <= self.ended)
        return MAX_LAG_S + TAKEOVER_S * max(0, n - 1)


def _running(kube: Kube, ns: str, name: str) -> bool:
    pods = kube.pods(ns, f"trainweave.io/trainjob={name},trainweave.io/replicated-job=node")
    return any(p.status.phase == "Running" for p in pods)


def _reservations(kube: Kube, ns: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for cq in kube.list(KUEUE, "clusterqueues"):
        if not cq["metadata"]["name"].startswith(ns):
            continue
        for fl in (cq.get("status") or {}).get("flavorsReservation") or []:
            for r in fl.get("resources") or []:
                key = f"{cq['metadata']['name']}/{r['name']}"
                out[key] = out.get(key, 0.0) + float(quantity.parse(r["total"]))
    return out


def test_chaos_reduced(
    kube: Kube, namespace: str, queues: Any, start_controller: Callable[[str], ControllerProc]
) -> None:
    ns = namespace
    rng = random.Random(SEED)
    queues(gpu_quota=4)  # two 2-GPU trainers at once: the rest wait in Kueue
    procs = {i: start_controller(i) for i in ("c0", "c1")}
    names: dict[str, Scenario] = {}
    order = SCENARIOS * SCALE
    rng.shuffle(order)
    for i, sc in enumerate(order):
        name = f"{sc.kind}-{i:02d}"
        names[name] = sc
        tj, rt = example(ns, name, runtime_name=f"rt-{name}", **sc.knobs)
        tj["spec"]["runtimeRef"]["name"] = rt["metadata"]["name"]
        apply(kube, ns, tj, rt)
    # the schedule: when (s after submission) each fault strikes, seeded
    span = 60 * SCALE  # seconds over which the faults are spread
    faults = sorted(
        [(rng.uniform(3, span), "controller") for _ in range(5 * SCALE)]
        + [(rng.uniform(10, span), "kueue") for _ in range(SCALE)]
        + [(rng.uniform(10, span), "workflow-controller") for _ in range(SCALE)]
        + [(rng.uniform(10, span), "kube-apiserver") for _ in range(SCALE)]
    )
    t0 = time.monotonic()
    done: dict[str, float] = {}  # TrainJob -> when its terminal condition was first seen
    wf_end: dict[str, float] = {}  # Workflow -> when it was first seen ended
    actions = {  # what the test does to some scenarios once their trainer runs
        n: sc.kind for n, sc in names.items() if sc.kind in ("suspend", "delete-background",
                                                             "delete-foreground")
    }  # fmt: skip
    suspended: set[str] = set()
    injected: Counter[str] = Counter()
    held: set[str] = set()  # every replica seen holding the Lease

    def observe() -> None:
        now = time.monotonic()
        leader = _leader(kube, procs)
        if leader is not None:
            held.add(leader.identity)
        for tj in kube.list(TRAINER, "trainjobs", ns):
            name = tj["metadata"]["name"]
            for ctype in ("Complete", "Failed"):
                c = condition(tj, ctype)
                if c and c["status"] == "True":
                    done.setdefault(name, now)
        for wf in workflows(kube, ns):
            if (wf.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error"):
                wf_end.setdefault(wf["metadata"]["name"], now)

    def act() -> None:
        for name, kind in list(actions.items()):
            if name in done and name not in suspended and kind == "suspend":
                del actions[name]  # ended before its trainer was seen running: nothing to suspend
                continue
            if name not in done and not _running(kube, ns, name):
                continue  # a delete acts once the trainer runs, or on the ended TrainJob
            if kind == "suspend" and name not in suspended:
                kube.custom.patch_namespaced_custom_object(
                    *TRAINER, ns, "trainjobs", name, {"spec": {"suspend": True}}
                )
                suspended.add(name)
                continue
            if kind.startswith("delete"):
                policy = "Foreground" if kind.endswith("foreground") else "Background"
                kube.custom.delete_namespaced_custom_object(
                    *TRAINER, ns, "trainjobs", name, propagation_policy=policy
                )
                del actions[name]
        for name in list(suspended):
            tj = kube.get(TRAINER, "trainjobs", name, ns)
            c = condition(tj, "Suspended") if tj else None
            ended = name in done  # finished before the suspend took effect: nothing to resume
            if ended or (c and c["status"] == "True"):
                kube.custom.patch_namespaced_custom_object(
                    *TRAINER, ns, "trainjobs", name, {"spec": {"suspend": False}}
                )
                suspended.discard(name)
                del actions[name]

    spare = iter(f"c{i}" for i in range(2, 2 + 5 * SCALE))
    leader_faults: list[datetime] = []  # when each fault that stops the leader struck
    while True:
        elapsed = time.monotonic() - t0
        while faults and faults[0][0] <= elapsed:
            _, what = faults.pop(0)
            if what in LEADER_FAULTS:
                leader_faults.append(datetime.now(UTC))
            if what == "controller":
                leader = _leader(kube, procs) or next(iter(procs.values()))
                leader.stop(signal.SIGKILL)
                del procs[leader.identity]
                new = next(spare)
                procs[new] = start_controller(new)  # two replicas again
            else:
                _restart(what)
            injected[what] += 1
        act()
        observe()
        left = sorted(  # not terminal yet, or (a deleted scenario) not gone yet
            n
            for n in names
            if n not in done
            and not (names[n].state == "Deleted" and kube.get(TRAINER, "trainjobs", n, ns) is None)
        )
        if not left and not faults and not actions:
            break
        assert elapsed < 600 * SCALE, f"chaos: not settled: {left}, actions left {actions}"
        time.sleep(1.0)  # pacing of the observation loop (each pass reads the cluster)

    # final state per scenario
    mismatches = []
    for name, sc in names.items():
        now = kube.get(TRAINER, "trainjobs", name, ns)
        if sc.state == "Deleted":
            if now is not None:
                mismatches.append(f"{name}: still exists")
            continue
        c = condition(now, sc.state) if now else None
        if not c or c["status"] != "True" or c["reason"] != sc.reason:
            mismatches.append(f"{name}: want {sc.state}/{sc.reason}, got {c}")
    # duplicates: any Workflow a TrainJob should not have
    have: dict[str, list[str]] = {}
    for wf in workflows(kube, ns):
        have.setdefault(wf["metadata"]["labels"].get("trainweave.io/trainjob", ""), []).append(
            wf["metadata"]["name"]
        )
    duplicates = 0
    for name, sc in names.items():
        want = sorted(w.format(name) for w in sc.workflows)
        got = sorted(have.get(name, []))
        if sc.state == "Deleted":

            def gone(n: str = name) -> bool:
                return not [
                    w
                    for w in workflows(kube, ns)
                    if w["metadata"]["labels"].get("trainweave.io/trainjob") == n
                ]

            wait_until(f"{name}: Workflows gone", gone, timeout=120)
            continue
        duplicates += len(set(got) - set(want))
        if sc.may_not_start and not got:
            continue  # its state and reason were checked above: DeadlineExceeded before a start
        fits = set(got) <= set(want) and want[0] in got if sc.at_most else got == want
        if not fits:
            mismatches.append(f"{name}: Workflows {got}, want {want}")

    # leaked quota: every reservation back to zero (Kueue updates it in its own reconcile)
    def zero() -> bool:
        return all(v == 0 for v in _reservations(kube, ns).values())

    wait_until("every ClusterQueue reservation back to 0", zero, timeout=120)
    holding = [
        wl["metadata"]["name"]
        for wl in kube.list(KUEUE, "workloads", ns)
        if (c := condition(wl, "QuotaReserved")) and c["status"] == "True"
        and not ((f := condition(wl, "Finished")) and f["status"] == "True")
    ]  # fmt: skip
    lags = _lags(kube, ns, have)
    max_lag = max((lag.seconds for lag in lags.values()), default=0.0)
    largest = sorted(lags.items(), key=lambda kv: -kv[1].seconds)[:5]
    over = {
        n: (lag.seconds, lag.allowed(leader_faults))
        for n, lag in lags.items()
        if lag.seconds > lag.allowed(leader_faults)
    }
    # the same figure as this loop saw it: it reads the cluster once a pass and is blind while a
    # restart runs (`_restart` waits for the engine), so it only bounds the lag from above
    seen = [
        max(0.0, done[n] - wf_end[w])
        for n, wfs in have.items()
        if n in done and (w := _last(wfs)) in wf_end
    ]
    print(f"chaos: largest lags (s, allowed) "
          f"{[(n, lag.seconds, lag.allowed(leader_faults)) for n, lag in largest]}; "
          f"as observed by the loop, max {max(seen, default=0.0):.0f}")  # fmt: skip
    faults_n = sum(injected.values())
    print(f"chaos: faults by kind {dict(injected)}; mismatches {mismatches}")
    print(
        f"chaos: pipelines={len(names)} faults={faults_n} mismatches={len(mismatches)} "
        f"leaked-quota={len(holding)} duplicates={duplicates} max-lag-s={max_lag:.0f}"
    )
    # one leader at a time (was test_controller.py's test_two_replicas_one_leader): a replica
    # never seen holding the Lease reconciled nothing; every replica started is still running
    # (was test_controller_killed_mid_pipeline_resumes_without_duplicates, with the duplicates
    # and attempts checked per scenario above and below)
    for proc in procs.values():
        assert proc.proc.poll() is None, f"controller {proc.identity} exited"
        if proc.identity not in held:
            assert proc.metric("trainweave_reconciles_total") == 0, proc.identity
    restarted = [
        name
        for name, sc in names.items()
        if sc.kind in ("success", "retryable", "gpu-heavy")
        and "trainweave.io/attempts"
        in (
            (kube.get(TRAINER, "trainjobs", name, ns) or {}).get("metadata", {}).get("annotations")
            or {}
        )
    ]
    assert restarted == [], f"TrainJobs restarted by a controller kill: {restarted}"
    assert injected == {
        "controller": 5 * SCALE,
        "kueue": SCALE,
        "workflow-controller": SCALE,
        "kube-apiserver": SCALE,
    }
    assert mismatches == []
    assert holding == []
    assert duplicates == 0
    assert over == {}, f"lag over its bound (s, allowed): {over}"
