"""The CLI end to end: plan on the llm-finetune example, and the habits of every command.

Ambiguous runtimes, nonsense numbers and missing queues are one ``error:`` line each, exit 2,
nothing on stdout; ``-`` reads stdin; a closed stdout and a missing kubeconfig never print a
traceback.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from tests.builders import RuntimeBuilder, make_runtime, make_trainjob
from trainweave import cli
from trainweave.cli import main

Json = dict[str, Any]
EX = Path(__file__).parents[2] / "examples" / "llm-finetune"
ARGS = ["plan", str(EX / "trainjob.yaml"), "--runtime", str(EX / "runtime.yaml")]
TW = [sys.executable, "-m", "trainweave.cli"]


def test_plan_fits_and_prints_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*ARGS, "--queues", str(EX / "queues.yaml"), "--duration", "node=6"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines()[2:6]]
    assert rows == ["dataset-initializer", "model-initializer", "node", "model-exporter"]


def test_plan_exit_1_when_a_step_never_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = list(yaml.safe_load_all((EX / "queues.yaml").read_text()))
    gpu_cq = next(
        d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == "gpu-cq"
    )
    for res in gpu_cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if res["name"] == "nvidia.com/gpu":
            res["nominalQuota"] = "8"
    small = tmp_path / "queues.yaml"
    small.write_text(yaml.safe_dump_all(docs))
    code = main([*ARGS, "--queues", str(small)])
    out = capsys.readouterr().out
    assert code == 1
    assert "node" in out and "nvidia.com/gpu" in out and "never" in out


def test_plan_reads_v1beta1_queues_and_says_once_that_kueue_0_20_drops_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kueue 0.20 stops serving kueue.x-k8s.io/v1beta1 and 0.21 removes it: ``plan`` still reads
    such files, and says so in one line naming them; a v1beta2 file gets no note."""
    docs = list(yaml.safe_load_all((EX / "queues.yaml").read_text()))
    flavors = [d for d in docs if d["kind"] == "ResourceFlavor"]
    queues = [d for d in docs if d["kind"] != "ResourceFlavor"]
    for d in queues:
        d["apiVersion"] = "kueue.x-k8s.io/v1beta1"
        if d["kind"] == "ClusterQueue" and "cohortName" in d["spec"]:
            d["spec"]["cohort"] = d["spec"].pop("cohortName")
    old, new = tmp_path / "old-queues.yaml", tmp_path / "flavors.yaml"
    old.write_text(yaml.safe_dump_all(queues))
    new.write_text(yaml.safe_dump_all(flavors))
    assert main([*ARGS, "--queues", str(new), "--queues", str(old), "--duration", "node=6"]) == 0
    captured = capsys.readouterr()
    assert "model-exporter" in captured.out  # the plan itself, as from v1beta2 files
    notes = [line for line in captured.err.splitlines() if "v1beta1" in line]
    assert len(notes) == 1, captured.err
    assert notes[0].startswith(f"note: {old}: kueue.x-k8s.io/v1beta1 ")
    assert "Kueue 0.20+ no longer serves it" in notes[0] and str(new) not in notes[0]
    assert main([*ARGS, "--queues", str(EX / "queues.yaml")]) == 0
    assert "v1beta1" not in capsys.readouterr().err


@pytest.mark.parametrize("output", ["yaml", "json"])
def test_plan_prints_one_workload_per_step(output: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--queues", str(EX / "queues.yaml"), "-o", output]) == 0
    out = capsys.readouterr().out
    workloads = list(yaml.safe_load_all(out)) if output == "yaml" else json.loads(out)["items"]
    assert [w["metadata"]["name"] for w in workloads] == [
        "llama-support-ft-dataset-initializer-a0",
        "llama-support-ft-model-initializer-a0",
        "llama-support-ft-node-a0",
        "llama-support-ft-model-exporter-a0",
    ]
    assert [sum(ps["count"] for ps in w["spec"]["podSets"]) for w in workloads] == [1, 1, 2, 1]


# --- the inputs of a table case: files by name, written to tmp_path ----------------------------


def _runtime(namespace: str | None = "ml", image: str = "trainer:1", **kw: Any) -> Json:
    rt = make_runtime(**kw)
    rt.container("node")["image"] = image
    doc = rt.build()
    if namespace is None:
        doc["metadata"].pop("namespace", None)
    else:
        doc["metadata"]["namespace"] = namespace
    return doc


def _queues(*drop: str) -> list[Json]:
    """A flavor, a ClusterQueue and the LocalQueue gpu-queue the builder's runtime uses,
    without the objects named in ``drop`` (``kind/name``)."""
    docs: list[Json] = [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "default"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": 8}]}
                        ],
                    }
                ]
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "gpu-queue", "namespace": "ml"},
            "spec": {"clusterQueue": "cq"},
        },
    ]
    return [d for d in docs if f"{d['kind']}/{d['metadata']['name']}" not in drop]


def _write(tmp_path: Path, files: dict[str, list[Json]]) -> dict[str, str]:
    paths = {}
    for name, docs in files.items():
        path = tmp_path / f"{name.lower()}.yaml"
        path.write_text(yaml.safe_dump_all(docs))
        paths[name] = str(path)
    return paths


def _fill(text: str, paths: dict[str, str]) -> str:
    for name in sorted(paths, key=len, reverse=True):  # AB before A
        text = text.replace(f"<{name}>", paths[name])
    return text


class Case(NamedTuple):
    """Files (name -> documents), the argv with ``<NAME>`` for their paths, the exact stderr."""

    id: str
    files: dict[str, list[Json]]
    argv: list[str]
    errors: list[str]


TJ = make_trainjob()
TJ_NO_NS = {**TJ, "metadata": {"name": "tj"}}
RENDER = ["render", "<TJ>", "--runtime", "<A>"]
PLAN = ["plan", "<TJ>", "--runtime", "<A>", "--queues", "<Q>"]
DUP = "which one is meant is ambiguous, keep one"
NOT_FOUND = (
    "Trainer looks a TrainingRuntime up in the TrainJob's namespace only; its webhook would"
    ' answer: trainingruntimes.trainer.kubeflow.org "rt" not found'
)
NEVER = "is not in the queue files: Kueue would never admit the step"
HOURS = "HOURS must be a finite number, 0 or more"
SHAPE = "must be STEP=HOURS (e.g. node=6)"

AMBIGUOUS = [
    Case(
        "two-files-different-content",
        {"TJ": [TJ], "A": [_runtime()], "B": [_runtime(image="trainer:2")]},
        [*RENDER, "--runtime", "<B>"],
        [
            f"<B>: metadata.name: duplicate TrainingRuntime 'rt', with different content; the"
            f" first is in <A>: {DUP}"
        ],
    ),
    Case(
        "two-files-identical",
        {"TJ": [TJ], "A": [_runtime()], "B": [_runtime()]},
        [*RENDER, "--runtime", "<B>"],
        [
            f"<B>: metadata.name: duplicate TrainingRuntime 'rt', an identical copy; the first"
            f" is in <A>: {DUP}"
        ],
    ),
    Case(
        "two-documents-of-one-file",
        {"TJ": [TJ], "A": [_runtime(), _runtime(image="trainer:2")]},
        RENDER,
        [
            f"<A> (document 2): metadata.name: duplicate TrainingRuntime 'rt', with different"
            f" content; the first is in document 1: {DUP}"
        ],
    ),
    Case(
        "duplicate-cluster-runtime-namespace-ignored",
        {
            "TJ": [make_trainjob(kind="ClusterTrainingRuntime")],
            "A": [_runtime(None, kind="ClusterTrainingRuntime")],
            "B": [_runtime("elsewhere", kind="ClusterTrainingRuntime")],
        },
        [*RENDER, "--runtime", "<B>"],
        [
            f"<B>: metadata.name: duplicate ClusterTrainingRuntime 'rt', with different content;"
            f" the first is in <A>: {DUP}"
        ],
    ),
    Case(
        "runtime-of-another-namespace",
        {"TJ": [TJ], "A": [_runtime("team-b")]},
        RENDER,
        [f"<A>: metadata.namespace: 'team-b' is not the TrainJob's namespace 'ml': {NOT_FOUND}"],
    ),
    Case(
        "trainjob-namespace-unset-is-default",
        {"TJ": [TJ_NO_NS], "A": [_runtime("ml")]},
        RENDER,
        [
            "<A>: metadata.namespace: 'ml' is not the TrainJob's namespace 'default' (unset:"
            f" default): {NOT_FOUND}"
        ],
    ),
    Case(
        "runtime-without-namespace-beside-one-in-it",
        {"TJ": [TJ], "A": [_runtime(None)], "B": [_runtime("ml")]},
        [*RENDER, "--runtime", "<B>"],
        [
            "<A>: metadata.namespace: is not set, and TrainingRuntime 'rt' of namespace 'ml' is"
            " also in <B>: both would serve the TrainJob, which is ambiguous; keep one"
        ],
    ),
    Case(
        "not-a-runtime-in-runtime-file",
        {"TJ": [TJ], "A": [_runtime(), _queues()[0]]},
        RENDER,
        [
            "<A> (document 2): kind: expected a TrainingRuntime or ClusterTrainingRuntime, got"
            " 'ResourceFlavor'"
        ],
    ),
    Case(
        "same-runtime-file-twice",
        {"TJ": [TJ], "A": [_runtime()]},
        [*RENDER, "--runtime", "<A>"],
        ["(command line): --runtime: '<A>' is given more than once"],
    ),
    Case(
        "stdin-twice",
        {"TJ": [TJ], "A": [_runtime()]},
        ["plan", "-", "--runtime", "<A>", "--queues", "-"],
        ["(command line): -: standard input can be read once, given for TRAINJOB, --queues"],
    ),
    Case(
        "negative-attempt",
        {"TJ": [TJ], "A": [_runtime()]},
        [*RENDER, "--attempt", "-1"],
        ["(command line): --attempt: must be 0 or more, got -1"],
    ),
]
MISSING_QUEUES = [
    Case(
        "missing-local-queue",
        {"TJ": [TJ], "A": [_runtime()], "Q": _queues("LocalQueue/gpu-queue")},
        PLAN,
        [f"<Q>: step node: LocalQueue ml/gpu-queue {NEVER}"],
    ),
    Case(
        "missing-cluster-queue",
        {"TJ": [TJ], "A": [_runtime()], "Q": _queues("ClusterQueue/cq")},
        [*PLAN, "-o", "yaml"],
        [f"<Q>: step node: ClusterQueue 'cq' (of LocalQueue gpu-queue) {NEVER}"],
    ),
    Case(
        "missing-resource-flavor",
        {"TJ": [TJ], "A": [_runtime()], "Q": _queues("ResourceFlavor/default")},
        PLAN,
        [f"<Q>: step node: ResourceFlavor 'default' (of ClusterQueue cq) {NEVER}"],
    ),
]
DURATIONS = [
    Case(
        f"duration-{pair}",
        {"TJ": [TJ], "A": [_runtime()], "Q": _queues()},
        [*PLAN, "--duration", pair],
        [f"(command line): --duration: {pair!r}: {why}"],
    )
    for pair, why in [
        ("node=nan", HOURS),
        ("node=inf", HOURS),
        ("node=-1", HOURS),
        ("node=1e999", HOURS),
        ("node=abc", HOURS),
        ("abc", SHAPE),
        ("=3", SHAPE),
        ("node=", SHAPE),
        ("unknownstep=1", "names no step; the steps are node"),
    ]
] + [
    Case(
        "duration-twice",
        {"TJ": [TJ], "A": [_runtime()], "Q": _queues()},
        [*PLAN, "--duration", "node=1", "--duration", "node=2"],
        ["(command line): --duration: 'node=2': step 'node' is given twice"],
    )
]
CASES = AMBIGUOUS + MISSING_QUEUES + DURATIONS


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_refused_with_exact_lines(
    case: Case,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    paths = _write(tmp_path, case.files)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code = main([_fill(a, paths) for a in case.argv])
    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()) == (
        2,
        "",
        [_fill(f"error: {e}", paths) for e in case.errors],
    )


@pytest.mark.parametrize(
    "files",
    [
        {"A": [_runtime("team-b")], "B": [_runtime("ml")]},
        {"A": [_runtime(None)]},
        {"A": [_runtime("ml"), _runtime("other", image="trainer:2")]},
    ],
    ids=["right-namespace-beside-another", "no-namespace", "other-namespace-in-one-file"],
)
def test_runtime_lookup_as_trainer(
    files: dict[str, list[Json]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A TrainingRuntime of the TrainJob's namespace (or of none) serves it; one of another
    namespace is another object, not a duplicate."""
    paths = _write(tmp_path, {"TJ": [TJ], **files})
    runtimes = [arg for name in files for arg in ("--runtime", paths[name])]
    assert main(["render", paths["TJ"], *runtimes, "-o", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    workflow = next(i for i in out["items"] if i["kind"] == "Workflow")
    images = [
        c["image"]
        for t in workflow["spec"]["templates"]
        for c in (t.get("containerSet") or {}).get("containers", [])
    ]
    assert images == ["trainer:1"]


def test_zero_hours_is_a_duration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = _write(tmp_path, {"TJ": [TJ], "A": [_runtime()], "Q": _queues()})
    assert main([_fill(a, paths) for a in PLAN] + ["--duration", "node=0"]) == 0
    assert "node" in capsys.readouterr().out


def test_render_errors_name_the_runtime_file_they_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error found while rendering names the file of the chosen runtime, not the first
    ``--runtime`` file."""
    bad = make_runtime()
    bad.container("node")["restartPolicyRules"] = [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
    ]
    paths = _write(tmp_path, {"TJ": [TJ], "A": [_runtime(name="another")], "B": [bad.build()]})
    code = main(["render", paths["TJ"], "--runtime", paths["A"], "--runtime", paths["B"]])
    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()) == (
        2,
        "",
        [
            f"error: {paths['B']}: spec.template.spec.replicatedJobs[0].template.spec.template"
            ".spec.containers[0].restartPolicyRules: is not supported by Argo's Container type"
        ],
    )


# --- stdin ------------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["TJ", "A", "Q"], ids=["trainjob", "runtime", "queues"])
def test_dash_reads_stdin(
    which: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {"TJ": [TJ], "A": [_runtime()], "Q": _queues()}
    paths = _write(tmp_path, files)
    want_code = main([_fill(a, paths) for a in PLAN])
    want = capsys.readouterr().out
    monkeypatch.setattr(sys, "stdin", io.StringIO(yaml.safe_dump_all(files[which])))
    argv = [("-" if a == f"<{which}>" else _fill(a, paths)) for a in PLAN]
    assert (main(argv), capsys.readouterr().out) == (want_code, want)


def test_stdin_errors_name_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    paths = _write(tmp_path, {"A": [_runtime()]})
    monkeypatch.setattr(sys, "stdin", io.StringIO("kind: [\n"))
    code = main(["render", "-", "--runtime", paths["A"]])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith("error: (stdin): line 2: invalid YAML:")


# --- the backoffLimit note -------------------------------------------------------------------


def _limit(rt: RuntimeBuilder) -> None:
    rt.job_spec("node")["backoffLimit"] = 3


def _per_index(rt: RuntimeBuilder) -> None:
    rt.job_spec("node").update(completionMode="Indexed", backoffLimitPerIndex=1)


def _exporter_of_two_pods(rt: RuntimeBuilder) -> None:
    rt.with_exporter()
    rt.job_spec("exporter").update(parallelism=2, completions=2, backoffLimit=1)


@pytest.mark.parametrize(
    ("edit", "num_nodes", "noted"),
    [
        (_limit, 2, "node"),
        (None, 2, None),
        (_limit, 1, None),
        (_per_index, 2, None),
        (_exporter_of_two_pods, 1, "exporter"),
    ],
    ids=[
        "set-shared-by-nodes",
        "default-6-not-set",
        "set-one-pod",
        "per-index",
        "set-2-completions",
    ],
)
def test_backoff_limit_note_only_when_the_runtime_sets_one(
    edit: Callable[[RuntimeBuilder], None] | None,
    num_nodes: int,
    noted: str | None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The note names a Job whose runtime sets a backoffLimit that several pods share."""
    rt = make_runtime()
    if edit is not None:
        edit(rt)
    tj = copy.deepcopy(TJ)
    tj["spec"]["trainer"] = {"numNodes": num_nodes}
    paths = _write(tmp_path, {"TJ": [tj], "A": [rt.build()]})
    assert main(["render", paths["TJ"], "--runtime", paths["A"]]) == 0
    err = capsys.readouterr().err
    want = (
        f"note: backoffLimit of {noted} is shared by all its pods; only the trainweave controller"
        " keeps that budget (applied alone, Argo gives each pod the whole budget)\n"
    )
    assert err == (want if noted else "")


# --- options every command shares ------------------------------------------------------------


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert (exc.value.code, capsys.readouterr().out) == (0, f"trainweave {version('trainweave')}\n")


@pytest.mark.parametrize(
    ("command", "choices"),
    [
        ("render", ["yaml", "json"]),
        ("plan", ["table", "yaml", "json"]),
        ("status", ["table", "json"]),
        ("queues", ["table", "yaml", "json"]),
    ],
)
def test_output_formats_are_named_alike(command: str, choices: list[str]) -> None:
    """``-o``: each command takes the formats it can print, among table|yaml|json, first the
    default."""
    parser = _subcommands()[command]
    (action,) = [a for a in parser._actions if "-o" in a.option_strings]
    assert (action.option_strings, list(action.choices or []), action.default) == (
        ["-o", "--output"],
        choices,
        choices[0],
    )


def test_every_repeatable_option_says_so() -> None:
    repeatable = {
        (name, a.option_strings[0]): "repeatable" in (a.help or "")
        for name, parser in _subcommands().items()
        for a in parser._actions
        if isinstance(a, argparse._AppendAction)
    }
    assert repeatable == {
        ("render", "--runtime"): True,
        ("plan", "--runtime"): True,
        ("plan", "--queues"): True,
        ("plan", "--duration"): True,
    }


# --- no traceback: a closed stdout, no kubeconfig ----------------------------------------------


def test_closed_stdout_is_a_quiet_exit(tmp_path: Path) -> None:
    """``trainweave render ... | head -1``: more output than a pipe holds, the reader stops after
    one line; the CLI exits 141 (128 + SIGPIPE) with nothing on stderr."""
    tj = yaml.safe_load((EX / "trainjob.yaml").read_text())
    tj["spec"]["trainer"]["numNodes"] = 200  # about 150 kB of JSON, over the 64 kB pipe buffer
    (tmp_path / "tj.yaml").write_text(yaml.safe_dump(tj))
    argv = ["render", str(tmp_path / "tj.yaml"), "--runtime", str(EX / "runtime.yaml")]
    with subprocess.Popen(
        [*TW, *argv, "-o", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline() == b"{\n"
        proc.stdout.close()
        err = proc.stderr.read()
    assert (proc.returncode, err) == (cli.EXIT_BROKEN_PIPE, b"")


NO_CONFIG = (
    "error: (kubeconfig): none found (no --kubeconfig, $KUBECONFIG or ~/.kube/config) and not"
    " running in a cluster (Service host/port is not set.)"
)


@pytest.mark.parametrize(
    ("argv", "kubeconfig", "line"),
    [
        (["status", "ft"], None, NO_CONFIG),
        (["queues"], None, NO_CONFIG),
        (["controller"], None, NO_CONFIG),
        (["status", "ft"], "/nowhere/config", "error: /nowhere/config: (kubeconfig): no such file"),
        (["queues", "-o", "json"], "/nowhere", "error: /nowhere: (kubeconfig): no such file"),
        (
            ["queues"],
            "EMPTY",
            "error: EMPTY: (kubeconfig): Invalid kube-config file. Expected key current-context"
            " in EMPTY",
        ),
        (["status", "ft"], "NOT-YAML", "error: NOT-YAML: (kubeconfig): while parsing"),
    ],
    ids=[
        "status-none",
        "queues-none",
        "controller-none",
        "status-nowhere",
        "queues-nowhere",
        "queues-empty",
        "status-not-yaml",
    ],
)
def test_no_usable_kubeconfig_is_one_line(
    argv: list[str],
    kubeconfig: str | None,
    line: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not in a cluster (no KUBERNETES_SERVICE_HOST), HOME without ~/.kube."""
    from kubernetes.config import kube_config

    for var in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    # the client reads $KUBECONFIG once, when imported
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", "~/.kube/config")
    for name, text in (("EMPTY", "kind: Config\n"), ("NOT-YAML", "kind: [\n")):
        if kubeconfig == name:
            kubeconfig = str(tmp_path / name.lower())
            Path(kubeconfig).write_text(text)
            line = line.replace(name, kubeconfig)
    if kubeconfig is not None:
        monkeypatch.setenv("KUBECONFIG", kubeconfig)
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()[0][: len(line)], len(err.splitlines())) == (
        2,
        "",
        line,
        1,
    )


@pytest.mark.parametrize(
    ("flag", "line"),
    [
        ("--kept-position-cap=0", "error: (command line): --kept-position-cap: must be a positive"),
        ("--settle-ms=-1", "error: (command line): --settle-ms: must be 0 or a positive number"),
    ],
)
def test_a_bad_controller_setting_is_one_line_before_anything_runs(
    flag: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["controller", "--kubeconfig", "/nowhere", flag])
    out, err = capsys.readouterr()
    assert (code, out, err.splitlines()[0][: len(line)], len(err.splitlines())) == (2, "", line, 1)


@pytest.mark.parametrize(
    ("flag", "line"),
    [
        (
            ["--bind", "nonsense"],
            "argument --bind: 'nonsense' is not HOST:PORT with a port 0-65535 (e.g."
            " 127.0.0.1:8080, :8080, [::1]:8080)",
        ),
        (
            ["--bind", "127.0.0.1:99999"],
            "argument --bind: '127.0.0.1:99999' is not HOST:PORT with a port 0-65535 (e.g."
            " 127.0.0.1:8080, :8080, [::1]:8080)",
        ),
        (
            ["--trainjob-status-bind", "10443"],
            "argument --trainjob-status-bind: '10443' is not HOST:PORT with a port 0-65535 (e.g."
            " 127.0.0.1:8080, :8080, [::1]:8080)",
        ),
        (
            ["--log-level", "LOUD"],
            # the choices' quoting differs between Python versions
            "argument --log-level: invalid choice: 'LOUD' (choose from ",
        ),
        (["--workers", "0"], "argument --workers: '0' is not a whole number of 1 or more"),
        (["--workers", "-3"], "argument --workers: '-3' is not a whole number of 1 or more"),
        (["--workers", "two"], "argument --workers: 'two' is not a whole number of 1 or more"),
    ],
    ids=[
        "bind",
        "bind-port",
        "status-bind",
        "log-level",
        "workers-0",
        "workers-neg",
        "workers-word",
    ],
)
def test_a_bad_controller_flag_is_a_usage_error_without_traceback(
    flag: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each used to start (``--workers 0``) or end in a traceback (``--bind nonsense``)."""
    with pytest.raises(SystemExit) as raised:
        main(["controller", "--kubeconfig", "/nowhere", *flag])
    out, err = capsys.readouterr()
    assert (raised.value.code, out) == (2, "")
    assert err.startswith("usage: trainweave controller ")
    assert err.splitlines()[-1].startswith(f"trainweave controller: error: {line}")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "flag",
    [["--bind", ":8080"], ["--bind", "[::1]:0"], ["--log-level", "debug"], ["--workers", "4"]],
    ids=["bind-any-host", "bind-ipv6", "log-level-lowercase", "workers"],
)
def test_a_good_controller_flag_reaches_the_kubeconfig_check(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["controller", "--kubeconfig", "/nowhere", *flag]) == 2
    assert capsys.readouterr().err == "error: /nowhere: (kubeconfig): no such file\n"


def test_no_kubeconfig_from_the_shell(tmp_path: Path) -> None:
    """The same, as a user runs it: a fresh process, its environment without any kubeconfig."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "HOME"))}
    env["HOME"] = str(tmp_path)
    done = subprocess.run([*TW, "queues"], env=env, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", NO_CONFIG + "\n")


@pytest.mark.parametrize(
    "argv", [["status", "ft"], ["queues", "-o", "yaml"]], ids=["status", "queues"]
)
def test_unreachable_cluster_is_one_line_on_stderr(
    argv: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An API error (here: nothing listens on the server's port) is exit 1, one line on stderr,
    nothing on stdout."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    (tmp_path / "config").write_text(yaml.safe_dump(config))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "config"))
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out, len(err.splitlines())) == (1, "", 1)
    assert err.startswith("error: ConnectionRefusedError: https://127.0.0.1:1: ")  # no stray 0
    assert "Connection refused" in err


@pytest.mark.parametrize(("flags", "judged"), [([], True), (["--no-judge-first"], False)])
def test_no_judge_first_reaches_the_controller_config(
    flags: list[str], judged: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.unit.controller_flags import config_of

    assert config_of(flags, tmp_path, monkeypatch).judge_first is judged
