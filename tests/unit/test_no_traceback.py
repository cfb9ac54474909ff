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
import copy
import io
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mutations import VALUES, Case, dump, mutated_case, mutated_pair
from trainweave.cli import main
from trainweave.integrations.cluster.executor import Executor, adapters_renderer
from trainweave.integrations.views import api, reconcile
from trainweave.integrations.views.observed import Observed
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


class FakeApi:
    """The API server edge: the runtime for any runtime GET, 404 for other GETs, 201 for
    creates; records every request."""

    def __init__(self, runtime: Json, snapshot: str | None = None) -> None:
        self.runtime = runtime
        self.snapshot = snapshot
        self.sent: list[api.Request] = []

    def __call__(self, req: api.Request) -> Json:
        self.sent.append(req)
        if req.method == "GET":
            if "trainingruntimes/" in req.path:
                return copy.deepcopy(self.runtime)
            if "/configmaps/" in req.path and self.snapshot is not None:
                return {
                    "metadata": {"ownerReferences": [{"uid": "tj-uid", "controller": True}]},
                    "data": {"runtime": self.snapshot},
                }
            raise api.ApiError(404, "NotFound")
        return {}


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
    fake = FakeApi(rt, snapshot)
    Executor(fake, adapters_renderer(), lambda: NOW).run(plan, tj)
    if plan.start is None:
        return  # another controller's TrainJob (spec.managedBy), or finished
    statuses = [r.body for r in fake.sent if r.path.endswith("/status") and r.body]
    failed = [
        c
        for s in statuses
        for c in s["status"].get("conditions", [])
        if c["type"] == "Failed" and c["status"] == "True"
    ]
    created = {str((r.body or {}).get("kind")) for r in fake.sent if r.method == "POST"} - {"Event"}
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


# --- the crashes the properties found, one case each ---------------------------------------

NODE = "spec.template.spec.replicatedJobs[0].template.spec.template.spec"


def _tj_env(tj: Json, rt: Json) -> None:
    tj["spec"]["trainer"]["env"] = [{"name": ["A"], "value": "1"}, {"name": ["A"], "value": "2"}]


def _tj_null_field(tj: Json, rt: Json) -> None:
    tj["spec"]["trainer"]["numNodes"] = None


def _tj_unknown_null(tj: Json, rt: Json) -> None:
    tj["spec"]["trainer"]["epochs"] = None


def _rt_unknown_null(tj: Json, rt: Json) -> None:
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["resoures"] = None


def _rt_null_pod_spec(tj: Json, rt: Json) -> None:
    rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"] = (
        None
    )


def _rt_null_arg(tj: Json, rt: Json) -> None:
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["args"] = ["a", None]


def _rt_probe_port(tj: Json, rt: Json) -> None:
    pod = rt["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": [{}]}}


def _cpu(value: object) -> Callable[[Json, Json], None]:
    def edit(tj: Json, rt: Json) -> None:
        tj["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": value}}

    return edit


def _memory(value: str) -> Callable[[Json, Json], None]:
    def edit(tj: Json, rt: Json) -> None:
        tj["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"memory": value}}

    return edit


TORCH = next(c for c in _cases() if c.name == "torch-distributed")


@pytest.mark.parametrize(
    ("edit", "code", "errors"),
    [
        pytest.param(
            _tj_env,
            2,
            [
                "TJ: spec.trainer.env[0].name: ['A'] is not a valid environment variable name"
                " (printable ASCII, not '=', not empty)",
                "TJ: spec.trainer.env[1].name: ['A'] is not a valid environment variable name"
                " (printable ASCII, not '=', not empty)",
            ],
            id="env-name-a-list",  # was TypeError: unhashable type: 'list' (inputs._unique_names)
        ),
        pytest.param(_tj_null_field, 0, [], id="null-field-is-absent"),  # as the API server prunes
        pytest.param(
            _tj_unknown_null,
            2,
            ["TJ: spec.trainer.epochs: unknown field"],
            id="unknown-field-null",  # unknown, null or not (strict field validation)
        ),
        pytest.param(
            _rt_unknown_null,
            2,
            [f"RT: {NODE}.containers[0].resoures: unknown field in V1Container"],
            id="unknown-pod-field-null",
        ),
        pytest.param(
            _rt_null_pod_spec,
            2,
            [f"RT: {NODE}.containers: must hold at least one container"],
            id="null-pod-spec",  # was AttributeError: 'NoneType' object has no attribute 'get'
        ),
        pytest.param(
            _rt_null_arg,
            2,
            [f"RT: {NODE}.containers[0].args[1]: must not be null"],
            id="null-list-item",  # was pydantic ValidationError from the Argo Container model
        ),
        pytest.param(
            _rt_probe_port,
            2,
            [
                f"RT: {NODE}.containers[0].readinessProbe.tcpSocket.port: [{{}}] is not a port"
                " number or name"
            ],
            id="probe-port-a-list",  # was pydantic ValidationError from the Argo Container model
        ),
        pytest.param(_memory("1Ei"), 0, [], id="exbibytes"),  # was ValueError: int("i")
        pytest.param(_memory("1E"), 0, [], id="exabytes"),  # was ValueError: int("")
        pytest.param(
            _cpu(float("nan")),
            2,
            ["TJ: spec.trainer.resourcesPerNode.requests.cpu: nan is not a quantity"],
            id="nan-quantity",  # was decimal.InvalidOperation
        ),
        pytest.param(
            _cpu(float("inf")),
            2,
            ["TJ: spec.trainer.resourcesPerNode.requests.cpu: inf is not a quantity"],
            id="inf-quantity",  # was OverflowError: cannot convert Infinity to integer
        ),
        pytest.param(
            _cpu("1e999999999"),
            2,
            [
                "TJ: spec.trainer.resourcesPerNode.requests.cpu: '1e999999999' is too large a quantity"
            ],
            id="quantity-exponent-overflow",  # was decimal.Overflow
        ),
    ],
)
def test_found_crash_is_an_input_error(
    tmp_path: Path, edit: Callable[[Json, Json], None], code: int, errors: list[str]
) -> None:
    tj, rt = copy.deepcopy(TORCH.trainjob), copy.deepcopy(TORCH.runtime)
    edit(tj, rt)
    files = {"TJ": tmp_path / "tj.yaml", "RT": tmp_path / "rt.yaml"}
    files["TJ"].write_text(dump([tj]))
    files["RT"].write_text(dump([rt]))
    got, out, err = run_cli(["render", str(files["TJ"]), "--runtime", str(files["RT"])])
    for name, path in files.items():
        err = err.replace(str(path), name)
    assert (got, [e for e in err.splitlines() if not e.startswith("note: ")]) == (
        code,
        [f"error: {e}" for e in errors],
    )
    assert (out == "") == (code == 2)


def test_a_yaml_error_is_one_line(tmp_path: Path) -> None:
    """PyYAML's message spans five lines (context, snippet, caret); an error is one."""
    (tmp_path / "tj.yaml").write_text("kind: TrainJob\nspec:\n  a: 1\n b: 2\n")
    code, out, err = run_cli(["render", str(tmp_path / "tj.yaml"), "--runtime", "x.yaml"])
    assert (code, out, err) == (
        2,
        "",
        f"error: {tmp_path / 'tj.yaml'}: line 4: invalid YAML: expected <block end>, but found"
        " '<block mapping start>' (column 2)\n",
    )


def test_map_keys_are_strings_as_kubectl_sends_them(tmp_path: Path) -> None:
    """YAML's ``true:`` and ``1:`` keys are JSON's ``"true"`` and ``"1"`` (a bool key crashed the
    resource-name check with AttributeError); a ``null`` key is an error."""
    tj = tmp_path / "tj.yaml"
    tj.write_text(dump([{**TORCH.trainjob, "spec": {**TORCH.trainjob["spec"], True: 1}}]))
    rt = tmp_path / "rt.yaml"
    rt.write_text(dump([TORCH.runtime]))
    assert run_cli(["render", str(tj), "--runtime", str(rt)]) == (
        2,
        "",
        f"error: {tj}: spec.true: unknown field\n",
    )
    tj.write_text("kind: TrainJob\nspec:\n  ~: 1\n")
    assert run_cli(["render", str(tj), "--runtime", str(rt)]) == (
        2,
        "",
        f"error: {tj}: spec: unsupported map key null\n",
    )


def test_an_empty_file_name_is_named() -> None:
    """``Path("")`` is the working directory: the error was ``error: (file): Is a directory``."""
    assert run_cli(["render", "", "--runtime", "x.yaml"]) == (
        2,
        "",
        "error: '': (file): is an empty file name\n",
    )


@pytest.mark.parametrize(
    ("deadline", "created"),
    [
        pytest.param([{}], False, id="a-list"),  # was TypeError in TrainJobBody (int([{}]))
        pytest.param("1d", False, id="a-string"),  # was ValueError
        pytest.param(2**62, True, id="past-year-9999"),  # int64, was OverflowError in rollup
    ],
)
def test_controller_deadline_of_any_value(deadline: object, created: bool) -> None:
    tj = copy.deepcopy(TORCH.trainjob)
    tj["spec"]["activeDeadlineSeconds"] = deadline
    tj["metadata"].update(uid="tj-uid", creationTimestamp="2026-11-01T10:00:00Z")
    plan = reconcile.actions(Observed(tj), NOW)
    fake = FakeApi(TORCH.runtime)
    Executor(fake, adapters_renderer(), lambda: NOW).run(plan, tj)
    kinds = {str((r.body or {}).get("kind")) for r in fake.sent if r.method == "POST"}
    assert ("Workflow" in kinds) == created
    if not created:
        status = next(r.body for r in fake.sent if r.path.endswith("/status"))
        assert status is not None
        cond = status["status"]["conditions"][-1]
        assert (cond["type"], cond["reason"]) == ("Failed", "InvalidTrainJob")
        assert cond["message"].startswith("TrainJob: spec.activeDeadlineSeconds: ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "spec:\n\tx: 1\n",
            "invalid YAML: found character '\\t' that cannot start any token",
            id="not-yaml",  # was yaml.ScannerError out of Executor.start: retried for ever
        ),
        pytest.param("[a, b]\n", "is not a YAML mapping", id="a-list"),  # was ValueError
    ],
)
def test_an_edited_snapshot_configmap_fails_the_trainjob(text: str, message: str) -> None:
    tj = copy.deepcopy(TORCH.trainjob)
    tj["metadata"].update(uid="tj-uid", creationTimestamp="2026-11-01T10:00:00Z")
    fake = FakeApi(TORCH.runtime, snapshot=text)
    Executor(fake, adapters_renderer(), lambda: NOW).run(reconcile.actions(Observed(tj), NOW), tj)
    status = next(r.body for r in fake.sent if r.path.endswith("/status"))
    assert status is not None
    cond = status["status"]["conditions"][-1]
    assert (cond["type"], cond["reason"], cond["message"]) == (
        "Failed",
        "InvalidRuntime",
        f"ConfigMap mnist-runtime-snapshot: data.runtime: {message}",
    )


def test_a_runtime_of_a_long_kind_is_named_by_its_field() -> None:
    """The runtime's ``kind`` was the message's source: 5000 characters of it pushed the field
    path out of the condition message (``rollup.clip`` keeps its first 4056 characters)."""
    tj = copy.deepcopy(TORCH.trainjob)
    tj["metadata"].update(uid="tj-uid", creationTimestamp="2026-11-01T10:00:00Z")
    fake = FakeApi({**TORCH.runtime, "kind": "a" * 5000})
    Executor(fake, adapters_renderer(), lambda: NOW).run(reconcile.actions(Observed(tj), NOW), tj)
    status = next(r.body for r in fake.sent if r.path.endswith("/status"))
    assert status is not None
    cond = status["status"]["conditions"][-1]
    assert (cond["reason"], cond["message"][:60]) == (
        "InvalidRuntime",
        "runtime: kind: expected trainer.kubeflow.org/v1alpha1 Traini",
    )


def test_plan_of_resource_hours_past_28_digits(tmp_path: Path) -> None:
    """Decimal.quantize raised InvalidOperation printing 10**30 hours (28-digit context)."""
    files = [tmp_path / n for n in ("tj.yaml", "rt.yaml", "queues.yaml")]
    for path, docs in zip(
        files, ([TORCH.trainjob], [TORCH.runtime], list(TORCH.queues)), strict=True
    ):
        path.write_text(dump(docs))
    argv = ["plan", str(files[0]), "--runtime", str(files[1]), "--queues", str(files[2])]
    code, out, err = run_cli([*argv, "--duration", f"node={10**30}"])
    assert (code, err) == (0, "")
    assert f" {4 * 10**30}.00 " in out  # nvidia.com/gpu: 4 GPUs for 10**30 hours
