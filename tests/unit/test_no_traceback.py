"""No traceback for any input: properties over structurally mutated inputs (issue 19).

The CLI (``render`` and ``plan`` in each output) on mutated TrainJob, runtime and queue files,
and on mutated arguments, exits 0, 1 (``plan``: never fits) or 2; on 2 it prints nothing to
stdout and only ``error: FILE: ...`` lines to stderr. The controller's pure reconcile and its
executor turn a mutated TrainJob spec or runtime into children or a ``Failed`` condition with
an input reason and a message naming a field: never an exception (the controller would retry
it with backoff for ever). Fixed seed (``derandomize``), 2100 examples in all.
"""

from __future__ import annotations

import contextlib
import io
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mutations import VALUES, Case, dump, mutated_case, mutated_pair
from tests.unit.cluster_objects import snapshot_map
from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.errors import Failure
from trainweave.cli import main
from trainweave.integrations.cluster.executor import Executor, adapters_renderer, run_once
from trainweave.integrations.views.decide import reconcile
from trainweave.integrations.views.read.bodies import TrainJobBody
from trainweave.integrations.views.read.observed import Observed
from trainweave.labels import Reason

Json = dict[str, Any]
NOW = datetime(2026, 11, 1, 10, 5, tzinfo=UTC)
# a field path, where the message starts or after the source: "spec.trainer.numNodes: ..."
FIELD = re.compile(r"(^|: )(spec|metadata|kind|apiVersion|data)\b.*: \S")
ERROR_REST = re.compile(r"( \(document \d+\))?: \S.*: \S")
INPUT_REASONS = {
    Reason.TRAINING_RUNTIME_NOT_FOUND,
    Reason.INVALID_RUNTIME,
    Reason.INVALID_TRAINJOB,
    Reason.UNSUPPORTED_FIELD,
}


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.function_scoped_fixture,
        ],
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mutated")


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``trainweave argv``; any exception but argparse's
    SystemExit propagates (and fails the test)."""
    out, err = io.StringIO(), io.StringIO()
    stdin = mock.patch("sys.stdin", io.StringIO(""))  # "-" reads an empty standard input
    with stdin, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: usage errors exit 2, --help 0
            assert exc.code in (0, 2), exc.code
            return -int(exc.code or 0) - 100, out.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def check_exit(argv: list[str], files: list[str]) -> int:
    """Run ``argv``; a refusal is exit 2 with only ``error: FILE: ...`` lines."""
    code, out, err = run_cli(argv)
    if code <= -100:  # argparse's own usage error
        return -code - 100
    allowed = {0, 2} | ({1} if argv[0] == "plan" else set())
    assert code in allowed, (code, err)
    if code == 2:
        assert out == ""
        lines = err.splitlines()
        assert lines, "exit 2 without a word"
        sources = {*files, *argv, "(stdin)", "(command line)", "''"}  # "''": an empty name
        bad = [line for line in lines if not _names_source(line, sources)]
        assert not bad, bad
    return code


def _names_source(line: str, sources: set[str]) -> bool:
    """``line`` is ``error: SOURCE[ (document N)]: FIELD: reason``."""
    return any(
        line.startswith(f"error: {src}") and ERROR_REST.match(line, len(f"error: {src}"))
        for src in sources
    )


COMMANDS = (
    ("render",),
    ("render", "-o", "json"),
    ("render", "--controller"),
    ("plan",),
    ("plan", "-o", "yaml"),
    ("plan", "-o", "json"),
)


@_settings(800)
@given(mutated_case(), st.sampled_from(COMMANDS))
def test_cli_on_mutated_files(
    workdir: Path, mutated: tuple[Case, str, str, str], command: tuple[str, ...]
) -> None:
    _, tj_text, rt_text, queues_text = mutated
    files = [str(workdir / n) for n in ("trainjob.yaml", "runtime.yaml", "queues.yaml")]
    for path, text in zip(files, (tj_text, rt_text, queues_text), strict=True):
        Path(path).write_text(text)
    argv = [*command, files[0], "--runtime", files[1]]
    if command[0] == "plan":
        argv += ["--queues", files[2], "--duration", "node=2.5"]
    check_exit(argv, files)


# --- arguments ----------------------------------------------------------------------------

ODD_ARGS = st.sampled_from(
    [
        "--attempt",
        "-1",
        "99999999999999999999999",
        "--attempt=-1",
        "--attempt=nan",
        "--duration",
        "node=nan",
        "node=inf",
        "node=-1",
        "=1",
        "node=",
        "node",
        "node=1e999",
        "node=1=2",
        "--duration=node=0",
        "-o",
        "json",
        "table",
        "xml",
        "--runtime",
        "--queues",
        "--default-queue",
        "",
        "-",
        "--",
        "--unknown",
        "-x",
        "/nonexistent.yaml",
        "/dev/null",
        "/",
        "--no-exit-cleanup",
        "--controller",
        "--version",
        "--service-account",
        "ünï",
        "--help",
    ]
)


@st.composite
def argv_of(draw: st.DrawFn, files: list[str]) -> list[str]:
    tj, rt, queues, empty = files
    base = draw(
        st.sampled_from(
            [
                ["render", tj, "--runtime", rt],
                ["render", tj, "--runtime", rt, "-o", "json"],
                ["plan", tj, "--runtime", rt, "--queues", queues],
            ]
        )
    )
    argv = list(base)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["insert", "drop", "replace", "file"]))
        at = draw(st.integers(1, len(argv)))
        if how == "insert":
            argv.insert(at, draw(ODD_ARGS))
        elif how == "drop" and len(argv) > 1:
            del argv[at - 1 if at == len(argv) else at]
        elif how == "replace" and at < len(argv):
            argv[at] = draw(ODD_ARGS)
        else:
            argv.insert(at, draw(st.sampled_from(["--runtime", "--queues"])))
            argv.insert(at + 1, draw(st.sampled_from([tj, rt, queues, empty, "/"])))
    return argv


@_settings(300)
@given(st.data())
def test_cli_on_mutated_arguments(workdir: Path, data: st.DataObject) -> None:
    case = data.draw(st.sampled_from(_cases()))
    files = [str(workdir / f"arg-{n}.yaml") for n in ("trainjob", "runtime", "queues", "empty")]
    texts = [dump([case.trainjob]), dump([case.runtime]), dump(list(case.queues)), ""]
    for path, text in zip(files, texts, strict=True):
        Path(path).write_text(text)
    check_exit(data.draw(argv_of(files)), files)


def _cases() -> list[Case]:
    from tests.mutations import CASES

    return list(CASES)


# --- the controller -------------------------------------------------------------------------


def cluster_of(tj: Json, rt: Json, snapshot: str | None) -> Transport:
    """The fake API server holding the pair as a cluster would: the TrainJob; the runtime under
    the name and kind its ``runtimeRef`` gives, served with that kind and apiVersion whatever
    the document says (a mutated kind reaches the controller through a snapshot's text); the
    snapshot ConfigMap when given. An object no API server takes (an invalid name or label)
    is absent, as it would be."""
    fake = Transport(FakeApi())
    meta = tj["metadata"]
    ref = TrainJobBody.of(tj).runtime_ref
    kind = "TrainingRuntime" if ref.get("kind") == "TrainingRuntime" else "ClusterTrainingRuntime"
    rt_meta = rt.get("metadata") if isinstance(rt.get("metadata"), dict) else {}
    runtime = {
        **rt,
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": kind,
        "metadata": {
            **(rt_meta or {}),
            "name": str(ref.get("name")),
            "namespace": meta["namespace"],
        },
    }
    docs = [tj, runtime]
    if snapshot is not None:
        docs.append(snapshot_map(snapshot, str(meta["uid"]), str(meta["name"]), meta["namespace"]))
    for doc in docs:
        with contextlib.suppress(Failure):
            fake.server.seed(doc)
    return fake


def created_kinds(fake: Transport, seeded: set[str]) -> set[str]:
    """The kinds of the objects the controller created (uids not in ``seeded``), Events left
    out."""
    return {
        str(o["kind"]) for o in fake.server.everything() if o["metadata"]["uid"] not in seeded
    } - {"Event"}


@_settings(1000)
@given(mutated_pair(), st.booleans())
def test_controller_on_mutated_inputs(
    pair: tuple[Case, Json, Json, str | None], started: bool
) -> None:
    _, tj, rt, snapshot = pair
    tj["metadata"] = {
        **tj["metadata"],
        "namespace": tj["metadata"].get("namespace", "ml"),
        "uid": "tj-uid",
        "creationTimestamp": "2026-11-01T10:00:00Z",
        "annotations": {"trainweave.io/attempts": "1"} if started else {},
    }
    plan = reconcile.actions(Observed(tj), NOW)
    fake = cluster_of(tj, rt, snapshot)
    seeded = {o["metadata"]["uid"] for o in fake.server.everything()}
    run_once(Executor(fake, adapters_renderer(), lambda: NOW), Observed(tj), NOW)
    if plan.start is None:
        return  # another controller's TrainJob (spec.managedBy), or finished
    statuses = [r.body for r in fake.sent if r.path.endswith("/status") and r.body]
    failed = [
        c
        for s in statuses
        for c in s["status"].get("conditions", [])
        if c["type"] == "Failed" and c["status"] == "True"
    ]
    created = created_kinds(fake, seeded)
    if failed:
        cond = failed[-1]
        assert cond["reason"] in INPUT_REASONS, cond
        assert FIELD.search(cond["message"]), repr(cond["message"])
        assert len(cond["message"].splitlines()) == 1, cond["message"]
        assert created == set(), created
        # the next reconcile sees the Failed condition: nothing to start, nothing to write
        tj["status"] = {**(tj.get("status") or {}), **statuses[-1]["status"]}
        again = reconcile.actions(Observed(tj), NOW)
        assert again.start is None and again.requeue_after is None, again
        assert [r for r in again.requests + again.after_start if r.is_write] == [], again
    else:
        assert "Workflow" in created, created


def test_values_strategy_reaches_every_json_type() -> None:
    """The replacement values cover every JSON type, nan and inf included (a sanity check of
    the strategy, not of trainweave)."""
    seen: set[str] = set()

    @settings(max_examples=300, derandomize=True, database=None)
    @given(VALUES)
    def collect(value: Any) -> None:
        seen.add(type(value).__name__)

    collect()
    assert {"NoneType", "bool", "int", "float", "str", "list", "dict"} <= seen
