"""The real-containers workloads (``examples/real/*.py``) run for real, as subprocesses.

Both initializers, a 2-rank trainer on loopback (a real TCP rendezvous and all-reduce) and the
exporter, in a temporary ``$WORKSPACE``; failures end with the exit codes the runtime's
podFailurePolicy names. The image has Debian bookworm's python3-minimal only, so the programs
import nothing outside it (checked below). ``TRAINWEAVE_WORKLOAD_PYTHON`` runs them with another
interpreter (a command line), e.g. python3-minimal unpacked with ``dpkg -x`` into $ROOT behind a
two-line wrapper script: ``PYTHONHOME=$ROOT/usr exec $ROOT/usr/bin/python3.11 -s -S "$@"``.
"""

from __future__ import annotations

import ast
import http.server
import importlib.util
import json
import os
import re
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from trainweave import trainer_status
from trainweave.integrations.cluster.status_server import ServerTLS

REAL = Path(__file__).parents[2] / "examples" / "real"
PYTHON = shlex.split(os.environ.get("TRAINWEAVE_WORKLOAD_PYTHON", "")) or [sys.executable]
TIMEOUT = 20.0
SMALL = {"DATASET_ROWS": "400", "FEATURES": "3", "TRAIN_STEPS": "20", "LEARNING_RATE": "0.1"}
STEP_LINE = re.compile(r"^step=(\d+) loss=([0-9.e+-]+) rank=(\d+) world=(\d+)$", re.M)
FINAL_LINE = re.compile(r"^rank=(\d+) world=\d+: final loss=\S+ model_sha256=([0-9a-f]{64})$", re.M)

# python3.11-minimal's stdlib (``dpkg -c`` of libpython3.11-minimal 3.11.2-6+deb12u9) and the
# modules its interpreter has built in; json and dataclasses are not among them.
PYTHON3_MINIMAL = frozenset(
    [
        "__future__",
        "abc",
        "argparse",
        "ast",
        "base64",
        "bisect",
        "codecs",
        "collections",
        "contextlib",
        "copy",
        "datetime",
        "enum",
        "errno",
        "fnmatch",
        "functools",
        "glob",
        "hashlib",
        "heapq",
        "io",
        "itertools",
        "math",
        "operator",
        "os",
        "pathlib",
        "random",
        "re",
        "select",
        "selectors",
        "signal",
        "socket",
        "stat",
        "string",
        "struct",
        "subprocess",
        "ssl",  # ssl.py and _ssl ship in libpython3.11-minimal (progress.py)
        "sys",
        "tempfile",
        "textwrap",
        "threading",
        "time",
        "traceback",
        "types",
        "typing",
        "urllib",  # urllib.parse only (http.client does not ship)
        "warnings",
        "weakref",
        "zlib",
    ]
)
# examples/real's own modules, copied next to the programs in the image
SIBLINGS = frozenset(p.stem for p in REAL.glob("*.py"))


def run(
    program: str, env: dict[str, str], timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PYTHON, str(REAL / program)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start(program: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*PYTHON, str(REAL / program)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = TIMEOUT) -> tuple[int, str, str]:
    """Wait for the process to exit (killed past ``timeout``): (exit code, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{proc.args!r} did not exit in {timeout}s:\n{out}\n{err}")
    return proc.returncode, out, err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def torch_env(base: dict[str, str], node_rank: int, port: int, nnodes: int = 2) -> dict[str, str]:
    """The PET_* env adapters/trainjob/policies/torch.py gives node pods, on loopback."""
    return {
        **base,
        "PET_NNODES": str(nnodes),
        "PET_NPROC_PER_NODE": "1",
        "PET_NODE_RANK": str(node_rank),
        "PET_MASTER_ADDR": "127.0.0.1",
        "PET_MASTER_PORT": str(port),
    }


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PET_")}
    for name in (
        "LOCAL_RANK",
        "RANK",
        "WORLD_SIZE",
        "FAIL_WITH_EXIT_CODE",
        "STEP_SLEEP_SECONDS",
        "STEP_TIMEOUT_SECONDS",
        *SMALL,
    ):
        clean.pop(name, None)
    return {**clean, **SMALL, "WORKSPACE": str(tmp_path), "RENDEZVOUS_TIMEOUT_SECONDS": "10"}


@pytest.fixture
def initialized(env: dict[str, str]) -> dict[str, str]:
    """``env`` after both initializers ran."""
    for program in ("dataset_initializer.py", "model_initializer.py"):
        result = run(program, env)
        assert result.returncode == 0, result.stderr
    return env


def test_initializers_write_the_dataset_the_model_and_a_checksum(
    initialized: dict[str, str],
) -> None:
    root = Path(initialized["WORKSPACE"])
    lines = (root / "dataset" / "train.csv").read_text().splitlines()
    assert lines[0] == "x1,x2,x3,y" and len(lines) == 1 + 400
    assert [
        line.split("  ")[1] for line in (root / "dataset" / "SHA256SUMS").read_text().splitlines()
    ] == [
        "train.csv",
        "meta.json",
    ]
    model = json.loads((root / "model" / "model.json").read_text())
    assert model["weights"] == [0.0, 0.0, 0.0] and model["bias"] == 0.0


def test_two_ranks_rendezvous_train_agree_and_export(initialized: dict[str, str]) -> None:
    port = free_port()
    ranks = [start("trainer.py", torch_env(initialized, rank, port)) for rank in (1, 0)]
    results = {rank: finish(proc) for rank, proc in zip((1, 0), ranks, strict=True)}
    for rank, (code, out, err) in results.items():
        assert code == 0, f"rank {rank} exited {code}:\n{out}\n{err}"

    losses = {}
    for rank, (_, out, _) in results.items():
        steps = [(int(s), float(loss), int(r), int(w)) for s, loss, r, w in STEP_LINE.findall(out)]
        assert [(s, r, w) for s, _, r, w in steps] == [(10, rank, 2), (20, rank, 2)]
        losses[rank] = [loss for _, loss, _, _ in steps]
    assert losses[0] == losses[1]
    assert losses[0][-1] < losses[0][0]

    hashes = {int(r): h for _, (_, out, _) in results.items() for r, h in FINAL_LINE.findall(out)}
    assert set(hashes) == {0, 1} and hashes[0] == hashes[1]
    trained = json.loads((Path(initialized["WORKSPACE"]) / "output" / "model.json").read_text())
    assert trained["model_sha256"] == hashes[0] and trained["world_size"] == 2
    assert trained["final_loss"] < trained["initial_loss"] / 10

    exported = run("exporter.py", initialized)
    assert exported.returncode == 0, exported.stderr
    assert "learned weights=" in exported.stdout
    text = (Path(initialized["WORKSPACE"]) / "export" / "model.txt").read_text()
    assert f"model_sha256 = {hashes[0]}" in text


def test_fail_with_exit_code_exits_with_it_before_training(initialized: dict[str, str]) -> None:
    env = {**torch_env(initialized, 0, free_port(), nnodes=1), "FAIL_WITH_EXIT_CODE": "3"}
    code, out, err = finish(start("trainer.py", env))
    assert code == 3
    assert "FAIL_WITH_EXIT_CODE=3" in err and "step=" not in out
    assert not (Path(initialized["WORKSPACE"]) / "output").exists()


def test_a_dataset_that_does_not_match_its_checksum_fails_as_bad_data(
    initialized: dict[str, str],
) -> None:
    dataset = Path(initialized["WORKSPACE"]) / "dataset" / "train.csv"
    header, first, *rest = dataset.read_text().splitlines()
    dataset.write_text("\n".join([header, first + "1", *rest]) + "\n")  # one digit more
    code, out, err = finish(start("trainer.py", torch_env(initialized, 0, free_port(), nnodes=1)))
    assert code == 3, f"{out}\n{err}"
    assert "checksum mismatch" in err and "train.csv" in err


def test_a_rank_without_its_master_times_out_as_a_rendezvous_failure(
    initialized: dict[str, str],
) -> None:
    env = {**torch_env(initialized, 1, free_port()), "RENDEZVOUS_TIMEOUT_SECONDS": "1"}
    code, out, err = finish(start("trainer.py", env))
    assert code == 4, f"{out}\n{err}"
    assert "waiting for the master 127.0.0.1" in out and "rendezvous timeout" in err


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PET_NNODES", "two", "PET_NNODES='two' is not an integer"),
        ("PET_NODE_RANK", "2", "PET_NODE_RANK=2 is not below PET_NNODES=2"),
        ("PET_MASTER_PORT", "", "PET_MASTER_PORT is not set"),
        ("STEP_SLEEP_SECONDS", "-1", "STEP_SLEEP_SECONDS=-1.0 is not in [0, "),
        (
            "STEP_SLEEP_SECONDS",
            "60",
            "STEP_SLEEP_SECONDS=60.0 is not in [0, STEP_TIMEOUT_SECONDS=60)",
        ),
    ],
    ids=[
        "nnodes-not-a-number",
        "rank-out-of-range",
        "no-master-port",
        "negative-step-sleep",
        "step-sleep-past-step-timeout",
    ],
)
def test_bad_torch_env_fails_as_bad_configuration(
    initialized: dict[str, str], name: str, value: str, message: str
) -> None:
    env = {**torch_env(initialized, 0, free_port()), name: value}
    code, _, err = finish(start("trainer.py", env))
    assert code == 2 and message in err


def test_step_sleep_stretches_the_run_and_sigterm_kills_it_mid_run(
    initialized: dict[str, str],
) -> None:
    """STEP_SLEEP_SECONDS pauses after each step (tests/e2e/test_real_preempt.py preempts such a
    run); SIGTERM mid-run kills the process with the signal, which the kubelet reports as exit
    code 143, the code Argo's retry expression treats as a disruption (adapters/argo/retry.py)."""
    env = {
        **torch_env(initialized, 0, free_port(), nnodes=1),
        "TRAIN_STEPS": "4",
        "STEP_SLEEP_SECONDS": "0.3",
    }
    began = time.monotonic()
    code, out, err = finish(start("trainer.py", env))
    assert code == 0, f"{out}\n{err}"
    assert time.monotonic() - began >= 4 * 0.3
    assert len(FINAL_LINE.findall(out)) == 1

    proc = start("trainer.py", {**env, "TRAIN_STEPS": "1000"})
    assert proc.stdout is not None
    while "rendezvous complete" not in (line := proc.stdout.readline()):
        assert line, "the trainer exited before training"
    proc.send_signal(signal.SIGTERM)
    code, out, _ = finish(proc)
    assert code == -signal.SIGTERM
    assert "final loss=" not in out


@pytest.mark.parametrize("program", sorted(p.name for p in REAL.glob("*.py")))
def test_programs_import_only_what_python3_minimal_ships(program: str) -> None:
    tree = ast.parse((REAL / program).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert imported - PYTHON3_MINIMAL - SIBLINGS == set()


def load_minijson() -> ModuleType:
    spec = importlib.util.spec_from_file_location("minijson", REAL / "minijson.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "value",
    [
        {"weights": [0.1, -2.5e-07, 1e300, 3.0], "bias": -0.0, "n": 7},
        ['a"b\\c\n\t\u0001é', True, False, None, [], {}],
        {"nested": {"list": [1, [2, [3.25]]], "empty": ""}},
    ],
    ids=["model", "scalars-and-escapes", "nested"],
)
def test_minijson_reads_what_json_reads_and_round_trips(value: Any) -> None:
    minijson = load_minijson()
    assert minijson.loads(json.dumps(value, indent=2)) == value
    assert json.loads(minijson.dumps(value)) == value
    assert minijson.loads(minijson.dumps(value)) == value


def test_nproc_per_node_starts_local_workers_as_torchrun_does(initialized: dict[str, str]) -> None:
    env = {**torch_env(initialized, 0, free_port(), nnodes=1), "PET_NPROC_PER_NODE": "2"}
    code, out, err = finish(start("trainer.py", env))
    assert code == 0, f"{out}\n{err}"
    assert sorted((r, w) for _, _, r, w in STEP_LINE.findall(out)) == [
        ("0", "2"),
        ("0", "2"),
        ("1", "2"),
        ("1", "2"),
    ]
    assert len({h for _, h in FINAL_LINE.findall(out)}) == 1


def test_rank_0_reports_progress_and_loss_as_trainer_status_takes_it(
    initialized: dict[str, str], tmp_path: Path
) -> None:
    """With Trainer's KUBEFLOW_TRAINER_SERVER_* env, rank 0 POSTs an UpdateTrainJobStatusRequest
    every 10 steps and the final loss at the end, over TLS checked against the CA file, with the
    token as the bearer; each body decodes as Trainer's status server decodes it. Rank 1 sends
    nothing."""
    (tmp_path / "tls").mkdir()
    tls = ServerTLS.generate(["127.0.0.1"], str(tmp_path / "tls"))
    (tmp_path / "ca.crt").write_text(tls.ca_pem)
    (tmp_path / "token").write_text("a-token\n")
    got: list[tuple[str, str, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            size = int(self.headers["Content-Length"])
            got.append((self.path, self.headers["Authorization"], self.rfile.read(size)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls.cert_file, tls.key_file)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"https://127.0.0.1:{server.server_address[1]}/apis/status"
    status_env = {
        "KUBEFLOW_TRAINER_SERVER_URL": url,
        "KUBEFLOW_TRAINER_SERVER_TOKEN": str(tmp_path / "token"),
        "KUBEFLOW_TRAINER_SERVER_CA_CERT": str(tmp_path / "ca.crt"),
    }
    port = free_port()
    try:
        ranks = [
            start("trainer.py", {**torch_env(initialized, rank, port), **status_env})
            for rank in (1, 0)
        ]
        results = [finish(proc) for proc in ranks]
    finally:
        server.shutdown()
    assert [code for code, _, _ in results] == [0, 0], results
    out0 = results[1][1]
    assert "progress: not reported" not in out0, out0
    final = re.search(r"rank=0 world=2: final loss=(\S+)", out0)
    assert final is not None, out0
    assert {(path, auth) for path, auth, _ in got} == {("/apis/status", "Bearer a-token")}
    statuses = [trainer_status.decode(body) for _, _, body in got]
    assert [(s or {})["progressPercentage"] for s in statuses] == [50, 100]
    last = statuses[-1] or {}
    assert last["estimatedRemainingSeconds"] == 0
    assert last["metrics"] == [{"name": "loss", "value": final[1]}]
