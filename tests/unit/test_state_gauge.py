"""``trainweave_trainjobs{state}``: TrainJobs per state, counted as each one's state changes."""

from __future__ import annotations

from trainweave.integrations.cluster.metrics import STATES, Metrics
from trainweave.labels import TrainJobState


def gauge(m: Metrics) -> dict[str, float]:
    return {
        s: m.registry.get_sample_value("trainweave_trainjobs", {"state": s}) or 0 for s in STATES
    }


def test_counts_follow_each_trainjobs_state_and_its_removal() -> None:
    m = Metrics()
    for i in range(3):
        m.set_state(f"ns/tj-{i}", TrainJobState.RUNNING)
    m.set_state("ns/tj-0", TrainJobState.RUNNING)  # unchanged: counted once
    m.set_state("ns/tj-1", TrainJobState.COMPLETE)
    m.set_state("ns/tj-2", None)  # gone
    m.set_state("ns/never-seen", None)
    assert gauge(m) == {s: {"Running": 1, "Complete": 1}.get(s, 0) for s in STATES}
    m.set_state("ns/tj-0", TrainJobState.FAILED)
    m.set_state("ns/tj-1", None)
    assert gauge(m) == {s: {"Failed": 1}.get(s, 0) for s in STATES}
