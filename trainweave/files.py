"""Reading input files: YAML documents paired with the file they came from.

How ``trainweave render`` and ``plan`` read their inputs. A file that is not YAML, or a
document that is not a mapping, is an InputError naming the file; a map key given twice, an
alias bomb, nesting past 100 levels or a file past 16 MiB too (``trainweave.yamlin``). ``-``
reads standard input (named ``(stdin)`` in errors). ``load`` reads the TrainJob file and every
runtime file once and picks the runtime the TrainJob refers to, as Trainer v2.3.0 looks it up:
a ``TrainingRuntime`` in the TrainJob's namespace, a ``ClusterTrainingRuntime`` by name alone.
A runtime defined twice in the files (two files, or two documents of one file) is an error
naming both, as a queue defined twice is (``trainweave.queues``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainweave import yamlin
from trainweave.errors import InputError, InputErrors
from trainweave.inputs import Runtime, TrainJob, parse_runtime, parse_trainjob
from trainweave.labels import Reason

Document = tuple[dict[str, Any], str]
STDIN = "-"
STDIN_NAME = "(stdin)"
_RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")


def documents(path: str) -> list[Document]:
    """Every non-empty YAML document in ``path`` (``-``: standard input), with its source."""
    if not path:  # Path("") is the working directory: "Is a directory", naming no file
        raise InputErrors([InputError("(file)", "is an empty file name", "''")])
    source = STDIN_NAME if path == STDIN else path
    text = _read(path, source)
    loaded = [d for d in yamlin.load_all(text, source) if d is not None]
    bad = [i for i, d in enumerate(loaded) if not isinstance(d, dict)]
    if bad:
        raise InputErrors(
            InputError(f"(document {i + 1})", "is not a mapping", source) for i in bad
        )
    try:
        return [(_json_keys(d, ""), source) for d in loaded]
    except _KeyError as exc:
        raise InputErrors([InputError(exc.path or "(document)", exc.reason, source)]) from None


def _read(path: str, source: str) -> str:
    """The text of ``path``, at most ``yamlin.MAX_BYTES`` of it (a larger file is refused
    before it is read whole)."""
    limit = yamlin.MAX_BYTES
    try:
        if path == STDIN:
            text = sys.stdin.read(limit + 1)  # characters: at least as many bytes
            size = len(text.encode()) if len(text) <= limit else limit + 1
        else:
            with Path(path).open("rb") as f:
                data = f.read(limit + 1)
            size, text = len(data), data.decode()
    except OSError as exc:
        raise InputErrors([InputError("(file)", exc.strerror or str(exc), source)]) from None
    except UnicodeDecodeError as exc:
        raise InputErrors([InputError("(file)", f"is not UTF-8 text: {exc}", source)]) from None
    if size > limit:
        raise InputErrors(
            [
                InputError(
                    "(file)",
                    f"is larger than {limit // (1024 * 1024)} MiB, the most trainweave reads"
                    " from one file: refused",
                    source,
                )
            ]
        )
    return text


class _KeyError(Exception):
    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason


def _json_keys(value: Any, path: str) -> Any:
    """``value`` with every map key a string, as kubectl sends YAML as JSON: ``1:`` is ``"1"``,
    ``true:`` is ``"true"``, a ``null`` key an error (sigs.k8s.io/yaml@v1.6.0 yaml.go
    ``convertToJSONableObject``)."""
    if isinstance(value, list):
        return [_json_keys(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key is None or not isinstance(key, str | int | float):
            raise _KeyError(path, f"unsupported map key {'null' if key is None else repr(key)}")
        name = str(yamlin.key_name(key))
        out[name] = _json_keys(item, f"{path}.{name}" if path else name)
    return out


@dataclass(frozen=True)
class Inputs:
    """A TrainJob, the runtime it refers to, and the files each came from."""

    trainjob: TrainJob
    trainjob_source: str
    runtime: Runtime
    runtime_source: str


@dataclass(frozen=True)
class _RuntimeDoc:
    doc: dict[str, Any]
    source: str
    index: int  # 1-based, within its file
    of: int  # documents in its file

    @property
    def where(self) -> str:
        return self.source if self.of == 1 else f"{self.source} (document {self.index})"

    @property
    def meta(self) -> dict[str, Any]:
        meta = self.doc.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def key(self) -> tuple[str, str, str]:
        """(kind, namespace, name): a ClusterTrainingRuntime has no namespace."""
        kind = str(self.doc.get("kind"))
        ns = str(self.meta.get("namespace") or "") if kind == "TrainingRuntime" else ""
        return kind, ns, str(self.meta.get("name") or "")


def load(trainjob_file: str, runtime_files: Sequence[str]) -> Inputs:
    """The TrainJob in ``trainjob_file`` and the runtime it refers to among ``runtime_files``.

    Each file is read once. Raises InputErrors naming the file (and document) of each problem.
    """
    docs = documents(trainjob_file)
    tj_source = STDIN_NAME if trainjob_file == STDIN else trainjob_file
    if len(docs) != 1:
        found = f"must hold one TrainJob, found {len(docs)} documents"
        raise InputErrors([InputError("(file)", found, tj_source)])
    job = parse_trainjob(*docs[0])
    repeated = sorted({f for f in runtime_files if list(runtime_files).count(f) > 1})
    if repeated:
        raise InputErrors(
            InputError("--runtime", f"{f!r} is given more than once", "(command line)")
            for f in repeated
        )
    runtimes: list[_RuntimeDoc] = []
    for f in runtime_files:
        file_docs = documents(f)
        runtimes += [_RuntimeDoc(d, s, i + 1, len(file_docs)) for i, (d, s) in enumerate(file_docs)]
    errors = [
        InputError(
            "kind",
            f"expected a TrainingRuntime or ClusterTrainingRuntime, got {r.doc.get('kind')!r}",
            r.where,
            Reason.INVALID_RUNTIME,
        )
        for r in runtimes
        if r.doc.get("kind") not in _RUNTIME_KINDS
    ]
    runtimes = [r for r in runtimes if r.doc.get("kind") in _RUNTIME_KINDS]
    errors += _duplicates(runtimes)
    if errors:
        raise InputErrors(errors)
    chosen = _lookup(job, tj_source, runtimes, runtime_files)
    return Inputs(job, tj_source, parse_runtime(chosen.doc, chosen.where), chosen.where)


def _duplicates(runtimes: list[_RuntimeDoc]) -> list[InputError]:
    """A (kind, namespace, name) given twice is ambiguous, identical copies included."""
    first: dict[tuple[str, str, str], _RuntimeDoc] = {}
    errors = []
    for r in runtimes:
        seen = first.setdefault(r.key, r)
        if seen is r:
            continue
        same = "an identical copy" if seen.doc == r.doc else "with different content"
        earlier = f"document {seen.index}" if seen.source == r.source else seen.where
        errors.append(
            InputError(
                "metadata.name",
                f"duplicate {r.key[0]} {r.key[2]!r}, {same}; the first is in {earlier}:"
                " which one is meant is ambiguous, keep one",
                r.where,
                Reason.INVALID_RUNTIME,
            )
        )
    return errors


def _lookup(
    job: TrainJob, tj_source: str, runtimes: list[_RuntimeDoc], runtime_files: Sequence[str]
) -> _RuntimeDoc:
    """The runtime Trainer v2.3.0 would read for ``job``.

    ``pkg/runtime/core/trainingruntime.go`` gets a TrainingRuntime at
    ``client.ObjectKey{Namespace: trainJob.Namespace, Name: trainJob.Spec.RuntimeRef.Name}``
    (its webhook ``ValidateObjects`` then says "specified trainingRuntime must be created before
    the TrainJob is created"); a ClusterTrainingRuntime is cluster-scoped. A runtime document
    without a namespace matches any (``kubectl apply -n`` decides it).
    """
    ref = job.spec.runtime_ref
    namespace = job.metadata.namespace or "default"
    named = [r for r in runtimes if r.key[0] == ref.kind and r.key[2] == ref.name]
    here = [r for r in named if r.key[1] in ("", namespace)]
    if len(here) > 1:  # keys are unique: one without a namespace, one in the TrainJob's
        other = next(r for r in here if r.key[1])
        raise InputErrors(
            [
                InputError(
                    "metadata.namespace",
                    f"is not set, and {ref.kind} {ref.name!r} of namespace {namespace!r} is also"
                    f" in {other.where}: both would serve the TrainJob, which is ambiguous;"
                    " keep one",
                    next(r for r in here if not r.key[1]).where,
                    Reason.INVALID_RUNTIME,
                )
            ]
        )
    if here:
        return here[0]
    if named:
        unset = " (unset: default)" if not job.metadata.namespace else ""
        raise InputErrors(
            [
                InputError(
                    "metadata.namespace",
                    f"{r.key[1]!r} is not the TrainJob's namespace {namespace!r}{unset}: Trainer"
                    " looks a TrainingRuntime up in the TrainJob's namespace only; its webhook"
                    " would"
                    f' answer: trainingruntimes.trainer.kubeflow.org "{ref.name}" not found',
                    r.where,
                    Reason.TRAINING_RUNTIME_NOT_FOUND,
                )
                for r in named
            ]
        )
    files = ", ".join(STDIN_NAME if f == STDIN else f for f in runtime_files)
    raise InputErrors(
        [
            InputError(
                "spec.runtimeRef",
                f"no {ref.kind} named {ref.name!r} in {files}",
                tj_source,
                Reason.TRAINING_RUNTIME_NOT_FOUND,
            )
        ]
    )
