"""The crashes ``test_no_traceback``'s properties found, one case each: each is now an input
error naming its field (or, for a valid input, a render), never a traceback."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.mutations import CASES, dump
from tests.unit.cluster_objects import snapshot_map
from tests.unit.fakeapi import Transport
from tests.unit.test_no_traceback import NOW, run_cli
from trainweave.integrations.cluster.executor import Executor, adapters_renderer, run_once
from trainweave.integrations.views.read.observed import Observed

Json = dict[str, Any]


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


TORCH = next(c for c in CASES if c.name == "torch-distributed")


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
    """PyYAML's message spans five lines (context, snippet, caret); an error is one (libyaml's
    words: ``trainweave.yamlin`` uses its loader)."""
    (tmp_path / "tj.yaml").write_text("kind: TrainJob\nspec:\n  a: 1\n b: 2\n")
    code, out, err = run_cli(["render", str(tmp_path / "tj.yaml"), "--runtime", "x.yaml"])
    assert (code, out, err) == (
        2,
        "",
        f"error: {tmp_path / 'tj.yaml'}: line 4: invalid YAML: did not find expected key"
        " (column 2)\n",
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


def served(tj: Json, runtime: Json, *more: Json) -> Transport:
    """The fake API server holding the TrainJob, its runtime (under the name and kind its
    runtimeRef gives) and ``more``."""
    ref = tj["spec"]["runtimeRef"]
    meta = {"name": ref["name"], "namespace": tj["metadata"]["namespace"]}
    kind = ref.get("kind") or "ClusterTrainingRuntime"
    return Transport.of(tj, {**runtime, "kind": kind, "metadata": meta}, *more)


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
    fake = served(tj, TORCH.runtime)
    run_once(Executor(fake, adapters_renderer(), lambda: NOW), Observed(tj), NOW)
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
            "line 2: invalid YAML: found character that cannot start any token (column 1)",
            id="not-yaml",  # was yaml.ScannerError out of Executor.start: retried for ever
        ),
        pytest.param("[a, b]\n", "is not a YAML mapping", id="a-list"),  # was ValueError
    ],
)
def test_an_edited_snapshot_configmap_fails_the_trainjob(text: str, message: str) -> None:
    tj = copy.deepcopy(TORCH.trainjob)
    tj["metadata"].update(uid="tj-uid", creationTimestamp="2026-11-01T10:00:00Z")
    fake = served(
        tj, TORCH.runtime, snapshot_map(text, "tj-uid", "mnist", tj["metadata"]["namespace"])
    )
    run_once(Executor(fake, adapters_renderer(), lambda: NOW), Observed(tj), NOW)
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
    path out of the condition message (``rollup.clip`` keeps its first 4056 characters). The API
    server serves a runtime of its own kind: such a kind comes from the text of the snapshot
    ConfigMap, read when the runtime is gone."""
    tj = copy.deepcopy(TORCH.trainjob)
    tj["metadata"].update(uid="tj-uid", creationTimestamp="2026-11-01T10:00:00Z")
    text = dump([{**TORCH.runtime, "kind": "a" * 5000}])
    fake = Transport.of(tj, snapshot_map(text, "tj-uid", "mnist", tj["metadata"]["namespace"]))
    run_once(Executor(fake, adapters_renderer(), lambda: NOW), Observed(tj), NOW)
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
