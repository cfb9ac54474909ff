"""Quota accounting from Kueue Workloads: states, waits, holding, resource-seconds."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.unit.cluster_objects import T0, Json, workload
from trainweave.integrations.views.read import quota

NOW = datetime(2026, 11, 1, 11, 0, tzinfo=UTC)
INFO = {"step": "trainer", "role": "trainer", "attempt": 0}
GPU = {"cpu": "16", "nvidia.com/gpu": "8"}
# (state, reason, wait_seconds, hold_seconds, resource_seconds)
Facts = tuple[str, str, float | None, float, dict[str, float]]

CASES = [
    pytest.param(
        workload("w", pending_reason="WaitingForQuota"),
        ("Pending", "WaitingForQuota", None, 0.0, {}),
        id="waiting-for-quota",
    ),
    pytest.param(
        workload("w", reserved="2026-11-01T10:10:00Z", usage=GPU),
        ("Admitted", "", 600.0, 3000.0, {"cpu": 48000.0, "nvidia.com/gpu": 24000.0}),
        id="admitted-holding-until-now",
    ),
    pytest.param(
        workload("w", reserved="2026-11-01T10:10:00Z", finished="2026-11-01T10:40:00Z", usage=GPU),
        ("Finished", "", 600.0, 1800.0, {"cpu": 28800.0, "nvidia.com/gpu": 14400.0}),
        id="finished-holding-until-finished",
    ),
    pytest.param(
        workload("w", reserved="2026-11-01T10:00:30Z", usage={"cpu": "500m", "memory": "1Gi"}),
        ("Admitted", "", 30.0, 3570.0, {"cpu": 1785.0, "memory": 3570.0 * 1073741824}),
        id="milli-and-binary-quantities",
    ),
]


@pytest.mark.parametrize(("wl", "expected"), CASES)
def test_step_quota(wl: Json, expected: Facts) -> None:
    q = quota.step_quota(wl, INFO, NOW)
    assert (q.state, q.reason, q.wait_seconds, q.hold_seconds, q.resource_seconds) == expected


def test_gpu_hours_and_flavors() -> None:
    wl = workload(
        "w",
        reserved="2026-11-01T10:00:00Z",
        finished="2026-11-01T10:30:00Z",
        usage=GPU,
        flavors={"cpu": "default", "nvidia.com/gpu": "a100"},
        cq="gpu-cq",
    )
    q = quota.step_quota(wl, INFO, NOW)
    assert q.gpu_hours == pytest.approx(4.0)
    assert (q.cluster_queue, q.flavors["nvidia.com/gpu"], q.usage) == ("gpu-cq", "a100", GPU)


def test_encode_decode_round_trip() -> None:
    recs = [quota.step_quota(workload("w", reserved="2026-11-01T10:10:00Z", usage=GPU), INFO, NOW)]
    text = quota.encode(recs)
    assert " " not in text  # compact
    assert quota.decode(text) == recs
    assert quota.decode("not json") == []


def test_vanished_workload_is_kept_as_released() -> None:
    admitted = quota.step_quota(workload("a", reserved="2026-11-01T10:10:00Z"), INFO, NOW)
    done = quota.step_quota(workload("b", reserved=T0, finished="2026-11-01T10:01:00Z"), INFO, NOW)
    merged = quota.merge([admitted, done], [])
    assert {q.workload: q.state for q in merged} == {"a": "Released", "b": "Finished"}
    assert quota.signature(merged) != quota.signature([admitted, done])


def test_a_workload_first_seen_plain_pending_is_no_change_worth_a_write() -> None:
    plain = quota.step_quota(workload("w"), INFO, NOW)
    assert plain.state == "Pending" and plain.reason == ""
    assert not quota.changed([], quota.merge([], [plain]))
    waiting = quota.step_quota(workload("w", pending_reason="WaitingForQuota"), INFO, NOW)
    assert quota.changed([], quota.merge([], [waiting]))  # a reason is news
    admitted = quota.step_quota(workload("w", reserved="2026-11-01T10:10:00Z"), INFO, NOW)
    assert quota.changed([], [admitted])
    # once written (with another change), a plain Pending record is compared like any other
    other = quota.step_quota(workload("x", reserved=T0), INFO, NOW)
    written = quota.merge([], [plain, other])
    assert not quota.changed(written, quota.merge(written, [plain, other]))
    assert quota.changed(written, quota.merge(written, [other]))  # w gone: Released


def test_transitions_fire_once() -> None:
    pending = quota.step_quota(workload("w", pending_reason="WaitingForQuota"), INFO, NOW)
    admitted = quota.step_quota(
        workload(
            "w",
            reserved="2026-11-01T10:10:00Z",
            usage={"nvidia.com/gpu": "1"},
            flavors={"nvidia.com/gpu": "a100"},
        ),
        INFO,
        NOW,
    )
    finished = quota.step_quota(
        workload(
            "w",
            reserved="2026-11-01T10:10:00Z",
            finished="2026-11-01T10:20:00Z",
            usage={"nvidia.com/gpu": "1"},
            flavors={"nvidia.com/gpu": "a100"},
        ),
        INFO,
        NOW,
    )
    assert quota.transitions([], [pending]) == []
    first = quota.transitions([pending], [admitted])
    assert first == [quota.MetricEvent("wait", (("queue", "cpu"), ("role", "trainer")), 600.0)]
    second = quota.transitions([admitted], [finished])
    assert second == [
        quota.MetricEvent(
            "reserved",
            (("cluster_queue", "cq"), ("flavor", "a100"), ("resource", "nvidia.com/gpu")),
            600.0,
        )
    ]
    assert quota.transitions([finished], [finished]) == []


def test_totals_by_cluster_queue() -> None:
    recs = [
        quota.step_quota(
            workload(
                "a", reserved=T0, finished="2026-11-01T10:01:00Z", usage={"cpu": "1"}, cq="cpu-cq"
            ),
            INFO,
            NOW,
        ),
        quota.step_quota(
            workload(
                "b",
                reserved=T0,
                finished="2026-11-01T10:30:00Z",
                usage={"nvidia.com/gpu": "2"},
                cq="gpu-cq",
            ),
            INFO,
            NOW,
        ),
    ]
    tot = quota.totals(recs)
    assert tot["resourceSeconds"] == {"cpu-cq": {"cpu": 60.0}, "gpu-cq": {"nvidia.com/gpu": 3600.0}}
    assert tot["gpuHours"] == pytest.approx(1.0)


def test_decode_reads_states_as_the_enum_and_skips_unknown_ones() -> None:
    """A record whose state this version does not know (written by a newer one) is left out;
    the others still count."""
    text = json.dumps(
        {"steps": [{"workload": "a", "state": "Admitted"}, {"workload": "b", "state": "Parked"}]}
    )
    (record,) = quota.decode(text)
    assert (record.workload, record.state) == ("a", quota.QuotaState.ADMITTED)
    assert record.state in quota.HOLDING


def test_evictions_are_kept_in_the_record() -> None:
    """Kueue's schedulingStats.evictions (per reason and cause) summed per reason, and kept in
    the annotation once the Workload is gone."""
    wl = {
        "metadata": {"name": "ft-node-a0", "creationTimestamp": "2026-11-01T10:00:00Z"},
        "spec": {"queueName": "gpu"},
        "status": {
            "conditions": [],
            "schedulingStats": {
                "evictions": [
                    {"reason": "PodsReadyTimeout", "underlyingCause": "WaitForStart", "count": 1},
                    {"reason": "Preempted", "underlyingCause": "InClusterQueue", "count": 2},
                    {
                        "reason": "PodsReadyTimeout",
                        "underlyingCause": "WaitForRecovery",
                        "count": 1,
                    },
                ]
            },
        },
    }
    q = quota.step_quota(wl, {"step": "node", "role": "trainer"}, datetime(2026, 11, 1, tzinfo=UTC))
    assert q.evictions == {"PodsReadyTimeout": 2, "Preempted": 2}
    (back,) = quota.decode(quota.encode([q]))
    assert back.evictions == q.evictions
    assert '"evictions":{"PodsReadyTimeout":2,"Preempted":2}' in quota.encode([q])
