"""A crash between any two writes of a reconcile loses nothing (issue: faults; the chaos test
kills the controller at random times, this one at every write boundary).

The controller runs as a process that dies right after its first write to the API server
(tests/e2e/crash_after_writes.py), is started again with the same identity (so it takes its
own Lease back at once), and so on until the TrainJob ends: every create, patch and delete of
the pipeline's life is followed by a crash before the next. At the end the TrainJob is in the
state and reason of an uncrashed run, with one Workflow per attempt, no Workload holding quota,
and a fresh controller on the final state writes nothing (level-triggered: nothing is left half
done for a later write to finish).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, condition, wait_until
from .pipelines import ENDINGS, TRAINER, apply, example, workflows
from .service_account import SA_NAMESPACE

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
# writes that do not change the pipeline: the Lease renewals and Events
IDLE_RESOURCES = {"leases", "events"}


def _terminal(kube: Kube, ns: str, name: str) -> str | None:
    tj = kube.get(TRAINER, "trainjobs", name, ns) or {}
    for ctype in ("Complete", "Failed"):
        c = condition(tj, ctype)
        if c and c["status"] == "True":
            return ctype
    return None


def _writes(ctl: ControllerProc) -> float:
    _, text = ctl.get("/metrics")
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("trainweave_api_requests_total{"):
            continue
        labels = dict(
            kv.split("=", 1) for kv in line[line.index("{") + 1 : line.index("}")].split(",")
        )
        verb, resource = labels["verb"].strip('"'), labels["resource"].strip('"')
        if verb not in ("get", "list", "watch") and resource not in IDLE_RESOURCES:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _crash_loop(kube: Kube, ns: str, name: str, kubeconfig: Path) -> int:
    """Controller processes that each die after one write, until the TrainJob ends."""
    crashes = 0
    while not _terminal(kube, ns, name):
        ctl = ControllerProc(ns, "crashy", kubeconfig, crash_after_writes=1)

        def wrote_or_ended(ctl: ControllerProc = ctl) -> bool | str | None:
            return ctl.proc.poll() is not None or _terminal(kube, ns, name)

        wait_until("the controller's one write, or the TrainJob's end", wrote_or_ended, timeout=180)
        if ctl.proc.poll() is None:
            ctl.stop(signal.SIGKILL)
        else:
            assert ctl.proc.returncode == 137, ctl.log.read_text()[-3000:]
            crashes += 1
        assert crashes < 200, "the pipeline makes no progress between crashes"
    return crashes


@pytest.mark.parametrize(
    ("knobs", "state", "reason", "wfs"), list(ENDINGS.values()), ids=list(ENDINGS)
)
def test_a_crash_after_every_write_loses_nothing(
    kube: Kube,
    namespace: str,
    queues: Any,
    controller_kubeconfig: Path,
    knobs: Json,
    state: str,
    reason: str,
    wfs: list[str],
) -> None:
    queues()
    apply(kube, namespace, *example(namespace, **knobs))
    try:
        crashes = _crash_loop(kube, namespace, "ft", controller_kubeconfig)
        assert crashes >= 5, crashes  # every pipeline needs more writes than that
        tj = kube.get(TRAINER, "trainjobs", "ft", namespace)
        assert _terminal(kube, namespace, "ft") == state
        cond = condition(tj or {}, state)
        assert cond is not None and cond["reason"] == reason, cond
        assert sorted(w["metadata"]["name"] for w in workflows(kube, namespace)) == wfs
        if state == "Complete":
            quota = json.loads((tj or {})["metadata"]["annotations"]["trainweave.io/quota"])
            assert {s["step"] for s in quota["steps"]} == {
                "dataset-initializer",
                "model-initializer",
                "node",
                "model-exporter",
            }

        # a whole controller on the final state: reconciles it, writes nothing
        ctl = ControllerProc(namespace, "final", controller_kubeconfig)
        try:
            wait_until("a fresh controller reconciled", lambda: _reconciled(ctl), timeout=60)
            assert _writes(ctl) == 0, ctl.log.read_text()[-3000:]
        finally:
            ctl.stop(signal.SIGKILL)

        def released() -> bool:
            for wl in kube.list(KUEUE, "workloads", namespace):
                held, done = condition(wl, "QuotaReserved"), condition(wl, "Finished")
                if held and held["status"] == "True" and not (done and done["status"] == "True"):
                    return False
            return True

        wait_until("no Workload holds quota", released, timeout=120)
        print(f"crash points: {state} after {crashes} crashes, one after each write")
    finally:
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(namespace, SA_NAMESPACE)
        except client.ApiException as e:
            if e.status != 404:
                raise


def _reconciled(ctl: ControllerProc) -> bool:
    return ctl.metric("trainweave_reconciles_total") >= 1
