"""What the real workloads share: the workspace layout, exit codes, env parsing, the dataset.

Layout under ``$WORKSPACE`` (default ``/workspace``, the runtime's shared PVC)::

    dataset/train.csv     x1..xk,y rows (dataset_initializer.py)
    dataset/meta.json     seed, rows, the true weights and bias
    dataset/SHA256SUMS    ``sha256sum -c`` format, over train.csv and meta.json
    model/model.json      the initial model (model_initializer.py)
    output/model.json     the trained model and its losses (trainer.py, rank 0)
    export/model.txt      the exported model (exporter.py)

Exit codes, so a runtime's podFailurePolicy can tell permanent from transient failures:
2 bad configuration, 3 bad data (both permanent), 4 rendezvous or peer lost (transient),
1 anything unexpected. Python 3.11 stdlib of python3-minimal only (see minijson.py).
"""

from __future__ import annotations

import hashlib
import math
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import minijson

EXIT_UNEXPECTED = 1
EXIT_CONFIG = 2
EXIT_DATA = 3
EXIT_RENDEZVOUS = 4

DATASET_FILE = "train.csv"
META_FILE = "meta.json"
SUMS_FILE = "SHA256SUMS"

Model = dict[str, Any]
Rows = list[tuple[list[float], float]]


class WorkloadError(Exception):
    """A failure with the exit code it ends the program with."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def fail(message: str, code: int) -> NoReturn:
    raise WorkloadError(message, code)


def run(program: str, main: Any) -> NoReturn:
    """Call ``main()``; exit 0, or print ``<program>: error: ...`` and exit with its code."""
    try:
        main()
    except WorkloadError as e:
        print(f"{program}: error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.code)
    except KeyboardInterrupt:
        print(f"{program}: interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    sys.exit(0)


def root() -> Path:
    return Path(os.environ.get("WORKSPACE") or "/workspace")


def env_int(name: str, default: int | None = None, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        if default is None:
            fail(f"{name} is not set", EXIT_CONFIG)
        return default
    try:
        value = int(raw)
    except ValueError:
        fail(f"{name}={raw!r} is not an integer", EXIT_CONFIG)
    if value < minimum:
        fail(f"{name}={value} is below {minimum}", EXIT_CONFIG)
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        fail(f"{name}={raw!r} is not a number", EXIT_CONFIG)
    if not math.isfinite(value):
        fail(f"{name}={raw!r} is not a finite number", EXIT_CONFIG)
    return value


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sums(folder: Path, names: list[str]) -> str:
    """Write ``SHA256SUMS`` over ``names``; return the checksum of that file itself."""
    lines = "".join(f"{sha256_file(folder / n)}  {n}\n" for n in names)
    (folder / SUMS_FILE).write_text(lines)
    return hashlib.sha256(lines.encode()).hexdigest()


def verify_sums(folder: Path) -> str:
    """Check every line of ``SHA256SUMS``; return its own checksum (the dataset's identity)."""
    sums = folder / SUMS_FILE
    try:
        text = sums.read_text()
    except OSError as e:
        fail(f"cannot read the dataset checksum file {sums}: {e.strerror}", EXIT_DATA)
    for line in text.splitlines():
        expected, _, name = line.partition("  ")
        if not name:
            fail(f"{sums}: malformed line {line!r}", EXIT_DATA)
        try:
            actual = sha256_file(folder / name)
        except OSError as e:
            fail(f"cannot read {folder / name}: {e.strerror}", EXIT_DATA)
        if actual != expected:
            fail(
                f"checksum mismatch for {folder / name}: {SUMS_FILE} says {expected}, "
                f"the file has {actual}",
                EXIT_DATA,
            )
    return hashlib.sha256(text.encode()).hexdigest()


def read_json(path: Path) -> Any:
    try:
        return minijson.loads(path.read_text())
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}", EXIT_DATA)
    except ValueError as e:
        fail(f"{path} is not valid JSON: {e}", EXIT_DATA)


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(minijson.dumps(value) + "\n")
    tmp.replace(path)


def read_rows(path: Path, features: int) -> Rows:
    """The dataset's rows as (x, y); the header must be x1..xk,y for ``features`` = k."""
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}", EXIT_DATA)
    header = [f"x{i + 1}" for i in range(features)] + ["y"]
    if not lines or lines[0].split(",") != header:
        fail(f"{path}: header is not {','.join(header)}", EXIT_DATA)
    rows: Rows = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            values = [float(v) for v in line.split(",")]
        except ValueError:
            fail(f"{path}:{number}: not numbers: {line!r}", EXIT_DATA)
        if len(values) != features + 1:
            fail(f"{path}:{number}: {len(values)} columns, expected {features + 1}", EXIT_DATA)
        rows.append((values[:-1], values[-1]))
    return rows


def read_model(path: Path) -> Model:
    """A model file: ``features``, ``weights`` (k floats) and ``bias``, checked."""
    model = read_json(path)
    if not isinstance(model, dict):
        fail(f"{path}: not a JSON object", EXIT_DATA)
    weights, bias, features = model.get("weights"), model.get("bias"), model.get("features")
    if (
        not isinstance(features, int)
        or not isinstance(weights, list)
        or len(weights) != features
        or not all(isinstance(w, (int, float)) for w in weights)
        or not isinstance(bias, (int, float))
    ):
        fail(f"{path}: needs features (int), weights ({features} numbers) and bias", EXIT_DATA)
    model["weights"] = [float(w) for w in weights]
    model["bias"] = float(bias)
    return model


def parameters(model: Model) -> list[float]:
    """Weights then bias: the vector the trainer updates."""
    return [*model["weights"], model["bias"]]


def model_sha256(params: list[float]) -> str:
    return hashlib.sha256(minijson.dumps(params).encode()).hexdigest()


def squared_error(params: list[float], rows: Rows) -> tuple[float, list[float]]:
    """(sum of squared errors, gradient of that sum) of ``params`` over ``rows``."""
    *weights, bias = params
    total = 0.0
    grad = [0.0] * len(params)
    for x, y in rows:
        residual = sum(w * v for w, v in zip(weights, x, strict=True)) + bias - y
        total += residual * residual
        for j, v in enumerate(x):
            grad[j] += 2.0 * residual * v
        grad[-1] += 2.0 * residual
    return total, grad


def mean_squared_error(params: list[float], rows: Rows) -> float:
    return squared_error(params, rows)[0] / max(1, len(rows))
