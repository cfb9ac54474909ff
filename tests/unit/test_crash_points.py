"""A crash between any two writes of a reconcile loses nothing (moved from tests/e2e, where the
chaos test kills the controller at random times and this one at every write boundary).

The real controller runs on the fake API server with a transport that is cut right after its
first write (``crash_after_writes=1``: Lease and Event writes not counted), as a process killed
there; a fresh controller with the same identity (so it takes its own Lease back at once) is
started on what it left, and so on until the TrainJob ends. Between crashes the test plays Argo
and Kueue (``fakeapi.engines``) one transition at a time, and only once the controller has
nothing left to do (``Running.settled``): every write of every state of the pipeline's life is a
crash point. At the end the TrainJob is in the state and reason of an uncrashed run, with one
Workflow per attempt, no Workload holding quota, and a fresh controller on the final state
writes nothing (level-triggered: nothing is left half done for a later write to finish).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.engines import Engines
from tests.unit.fakeapi.running import Running, condition, example, terminal, wait_until
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
NS = "team-a"
# how a pipeline must end: (example knobs, exit codes, terminal condition, its reason, Workflows)
ENDINGS: dict[str, tuple[Json, dict[str, list[int]], str, str, list[str]]] = {
    "success": ({}, {}, "Complete", "AllJobsCompleted", ["ft"]),
    "max-restarts": (
        {"nodes": 1, "max_restarts": 1},
        {"node": [1]},
        "Failed",
        "ReachedMaxRestarts",
        ["ft", "ft-r1"],
    ),
}


def crash_loop(fake: FakeApi, engines: Engines) -> int:
    """Controllers that each die after one write, the engines moving on whenever one has
    nothing to write, until the TrainJob ends; the number of crashes."""
    crashes = 0
    while not terminal(fake, NS):
        ctl = Running(fake, NS, crash_after_writes=1, identity="crashy").start()
        try:
            wait_until("one write, or nothing to do", fake, ctl.crashed_or_settled)
        finally:
            ctl.stop()
        if ctl.crashed:
            crashes += 1
        else:
            assert engines.advance(), "neither the controller nor the engines have work left"
        assert crashes < 400, "the pipeline makes no progress between crashes"
    return crashes


@pytest.mark.parametrize(
    ("knobs", "codes", "state", "reason", "wfs"), list(ENDINGS.values()), ids=list(ENDINGS)
)
def test_a_crash_after_every_write_loses_nothing(
    knobs: Json, codes: dict[str, list[int]], state: str, reason: str, wfs: list[str]
) -> None:
    fake = FakeApi()
    user = Transport(fake)
    tj, rt = example(NS, **knobs)
    user(api.create(api.TRAINING_RUNTIME, NS, rt))
    user(api.create(api.TRAINJOB, NS, tj))
    engines = Engines(user, codes)
    crashes = crash_loop(fake, engines)
    assert crashes >= 5, crashes  # every pipeline needs more writes than that
    final = fake.find("TrainJob", NS, "ft")
    assert terminal(fake, NS) == state
    cond = condition(final, state)
    assert cond is not None and cond["reason"] == reason, cond
    assert sorted(w["metadata"]["name"] for w in fake.objects("Workflow", NS)) == wfs
    if state == "Complete":
        assert final is not None
        quota = json.loads(final["metadata"]["annotations"]["trainweave.io/quota"])
        assert {s["step"] for s in quota["steps"]} == {
            "dataset-initializer",
            "model-initializer",
            "node",
            "model-exporter",
        }

    # a whole controller on the final state: reconciles it, writes nothing (the crashed
    # leader's Lease expired: deleted here instead of waited out)
    user(api.delete(api.LEASE, "trainweave-system", "trainweave-controller"))
    ctl = Running(fake, NS, identity="final").start()
    try:
        wait_until(
            "a fresh controller reconciled",
            fake,
            lambda: ctl.reconciles() >= 1 and ctl.settled(),
        )
        assert ctl.transport.writes == 0, [r for r in ctl.transport.write_requests]
    finally:
        ctl.stop()

    engines.settle()  # Kueue finishes what the controller released

    def holding(wl: Json) -> bool:
        return condition(wl, "QuotaReserved") is not None and condition(wl, "Finished") is None

    assert [w["metadata"]["name"] for w in fake.objects("Workload", NS) if holding(w)] == []
    print(f"crash points: {state} after {crashes} crashes, one after each write")
