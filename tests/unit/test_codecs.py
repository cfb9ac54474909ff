"""trainweave.codecs: every annotation and label value trainweave writes reads back the same, and
the forms earlier releases wrote (which running Workflows and Workloads still carry across an
upgrade) decode to what they meant."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainweave import codecs
from trainweave.codecs import Stop
from trainweave.labels import StoppedFor
from trainweave.model import ExitCodeRule, RetryPolicy

NAME = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?", fullmatch=True)
RULES = st.builds(
    ExitCodeRule,
    st.sampled_from(["FailJob", "Ignore", "Count"]),
    st.sampled_from(["In", "NotIn"]),
    st.lists(st.integers(0, 255), max_size=4).map(tuple),
    st.booleans(),
    st.none() | NAME,
)
POLICIES = st.builds(
    RetryPolicy,
    st.integers(0, 1000),
    st.lists(RULES, max_size=3).map(tuple),
    shared=st.booleans(),
    judged=st.booleans(),
    per_index=st.booleans(),
)
LIMITS = st.dictionaries(NAME, st.dictionaries(NAME, POLICIES, min_size=1), max_size=3)


@given(LIMITS)
def test_backoff_limits_round_trip(limits: dict[str, dict[str, RetryPolicy]]) -> None:
    text = codecs.encode_backoff_limits(limits)
    assert codecs.decode_backoff_limits(text) == limits
    assert (text is None) == (not limits)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            # 5960ddf: shared budgets only, four-item rules, no "shared"
            '{"node":{"node":{"backoffLimit":3,"rules":[["Ignore","In",[143],false],'
            '["Count","In",[],true]]}}}',
            {
                "node": {
                    "node": RetryPolicy(
                        3,
                        (
                            ExitCodeRule("Ignore", "In", (143,)),
                            ExitCodeRule("Count", "In", (), True),
                        ),
                        shared=True,
                    )
                }
            },
            id="first-form",
        ),
        pytest.param(
            # c11b3b1 on (examples/*/rendered.yaml): every field
            '{"node":{"node":{"backoffLimit":6,"rules":[],"shared":true,"judged":false,'
            '"perIndex":false}}}',
            {"node": {"node": RetryPolicy(6, shared=True)}},
            id="rendered-example",
        ),
        pytest.param(
            '{"trainer":{"node":{"backoffLimit":0,"rules":[["FailJob","In",[1],false,"sidecar"]],'
            '"shared":false,"judged":true,"perIndex":true}}}',
            {
                "trainer": {
                    "node": RetryPolicy(
                        0,
                        (ExitCodeRule("FailJob", "In", (1,), False, "sidecar"),),
                        judged=True,
                        per_index=True,
                    )
                }
            },
            id="container-rule",
        ),
        pytest.param(None, {}, id="absent"),
        pytest.param("", {}, id="empty"),
        pytest.param("{not json", {}, id="not-json"),
        pytest.param("[1]", {}, id="not-a-map"),
        pytest.param('{"node":[1]}', {}, id="step-not-a-map"),
        pytest.param(
            '{"node":{"a":{"backoffLimit":"x"},"b":7,"c":{"backoffLimit":1}}}',
            {"node": {"c": RetryPolicy(1, shared=True)}},
            id="only-what-reads-back",
        ),
    ],
)
def test_backoff_limits_forms(text: str | None, want: codecs.BackoffLimits) -> None:
    assert codecs.decode_backoff_limits(text) == want


@given(POLICIES)
def test_policy_wire_round_trip(policy: RetryPolicy) -> None:
    wire = json.loads(json.dumps(codecs.policy_wire(policy)))
    assert codecs.policy_of_wire(wire) == policy


STOPS = st.sampled_from([StoppedFor.SUSPEND, StoppedFor.DELETED, StoppedFor.FINISHED]).map(
    Stop
) | NAME.map(lambda job: Stop(StoppedFor.JOB_FAILED, job))


@given(STOPS)
def test_stop_round_trip(stop: Stop) -> None:
    assert codecs.decode_stop(codecs.encode_stop(stop)) == stop


@pytest.mark.parametrize(
    ("text", "want", "failed_job"),
    [
        pytest.param("suspend", Stop(StoppedFor.SUSPEND), "", id="suspend"),
        pytest.param("deleted", Stop(StoppedFor.DELETED), "", id="deleted"),
        pytest.param("finished", Stop(StoppedFor.FINISHED), "", id="finished"),
        pytest.param("job-failed/node", Stop(StoppedFor.JOB_FAILED, "node"), "node", id="job"),
        # before c11b3b1 the controller wrote backoff-limit/<job>
        pytest.param("backoff-limit/node", Stop(StoppedFor.JOB_FAILED, "node"), "node", id="old"),
        pytest.param("", None, "", id="empty"),
        pytest.param(None, None, "", id="absent"),
        # a value this version does not know is still a stop, of no job
        pytest.param("drained", Stop(None), "", id="unknown"),
        pytest.param("job-failed", Stop(None), "", id="job-failed-without-job"),
    ],
)
def test_stop_forms(text: str | None, want: Stop | None, failed_job: str) -> None:
    got = codecs.decode_stop(text)
    assert got == want
    assert (got.failed_job if got else "") == failed_job


def test_old_job_failed_is_written_in_the_new_form() -> None:
    assert codecs.encode_stop(Stop(StoppedFor.JOB_FAILED_OLD, "node")) == "job-failed/node"
    with pytest.raises(ValueError, match="no known reason"):
        codecs.encode_stop(Stop(None))


@given(st.integers(-(10**6), 10**9))
def test_int_round_trip(n: int) -> None:
    assert codecs.decode_int(codecs.encode_int(n)) == n


@pytest.mark.parametrize(
    ("text", "want"),
    [("3", 3), (None, 0), ("", 0), ("three", 0), (" 2 ", 2)],
    ids=["int", "absent", "empty", "not-a-number", "blanks"],
)
def test_int_forms(text: str | None, want: int) -> None:
    assert codecs.decode_int(text) == want


@given(st.lists(NAME, max_size=5))
def test_names_round_trip(names: list[str]) -> None:
    assert codecs.decode_names(codecs.encode_names(names)) == names


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("init,model", ["init", "model"]),
        ("trainweave.io/predecessors, other/gate", ["trainweave.io/predecessors", "other/gate"]),
        (",a,,b,", ["a", "b"]),
        ("", []),
        (None, []),
    ],
    ids=["kept-after", "gates-with-blanks", "empty-items", "empty", "absent"],
)
def test_names_forms(text: str | None, want: list[str]) -> None:
    assert codecs.decode_names(text) == want


@given(st.integers(0, 10**9))
def test_seconds_round_trip(seconds: int) -> None:
    assert codecs.decode_seconds(codecs.encode_seconds(seconds)) == seconds


@pytest.mark.parametrize(
    ("text", "want"),
    [("600", 600.0), ("1.5", 1.5), ("", None), (None, None), ("soon", None)],
    ids=["int", "float", "empty", "absent", "not-a-number"],
)
def test_seconds_forms(text: str | None, want: float | None) -> None:
    assert codecs.decode_seconds(text) == want
