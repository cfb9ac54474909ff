"""The inventory of the API server's rule families in docs/inputs.md cannot drift.

Its table lists every validate function that Kubernetes' ``ValidatePodSpec``,
``ValidateJobSpec`` and ``ValidateObjectMeta`` call (the pinned modules, hack/versions.env),
where it is (``ALIAS:LINE``), and whether trainweave judges it offline (``offline``, ``partly``:
naming the trainweave function or test case that does) or leaves it to the API server
(``server-only``). The schema tier parses the Go sources and fails when a function called from
an entry point has no row, or a row's line is not that function's ``func``; the unit tier fails
when an offline row names a function or a ``tests/pod_cases.py`` case that does not exist, or the counts the doc states
are not the table's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from tests import pod_cases
from tests.crds import module_dir

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "inputs.md"
PINS = dict(
    line.split("=", 1)
    for line in (ROOT / "hack" / "versions.env").read_text().splitlines()
    if "=" in line and not line.startswith("#")
)
KUBERNETES = PINS["KUBERNETES_VERSION"]
APIMACHINERY = "v0." + KUBERNETES.removeprefix("v1.")
# ALIAS -> (module, version, file)
SOURCES = {
    "core": ("k8s.io/kubernetes", KUBERNETES, "pkg/apis/core/validation/validation.go"),
    "batch": ("k8s.io/kubernetes", KUBERNETES, "pkg/apis/batch/validation/validation.go"),
    "objectmeta": ("k8s.io/apimachinery", APIMACHINERY, "pkg/api/validation/objectmeta.go"),
    "generic": ("k8s.io/apimachinery", APIMACHINERY, "pkg/api/validation/generic.go"),
    "metav1": ("k8s.io/apimachinery", APIMACHINERY, "pkg/apis/meta/v1/validation/validation.go"),
}
STATUSES = ("offline", "partly", "server-only")
CASE_NAMES = {c.name for c in pod_cases.CASES} | {c.name for c in pod_cases.JOB_CASES}
ROW = re.compile(r"^\| `(\w+)` \| `(\w+):(\d+)` \| (\w+) \| ([\w-]+) \| (.*) \|$")
REF = re.compile(r"`([\w/.]+\.py)::(\w+)(?:\[([\w-]+)\])?`")


@dataclass(frozen=True)
class Entry:
    label: str
    alias: str
    functions: tuple[str, ...]  # the entry point and the wrappers it goes through


ENTRIES = (
    Entry("ValidatePodSpec", "core", ("ValidatePodSpec",)),
    Entry("ValidateJobSpec", "batch", ("ValidateJobSpec", "validateJobSpec")),
    Entry(
        "ValidateObjectMeta",
        "objectmeta",
        (
            "ValidateObjectMeta",
            "ValidateObjectMetaAccessor",
            "ValidateObjectMetaWithOpts",
            "ValidateObjectMetaAccessorWithOpts",
            "validateObjectMetaAccessorWithOptsCommon",
        ),
    ),
)


@dataclass(frozen=True)
class Row:
    name: str
    alias: str
    line: int
    entry: str
    status: str
    refs: str


def rows() -> list[Row]:
    """The inventory table's rows, in order."""
    found = [ROW.match(line) for line in DOC.read_text().splitlines()]
    return [Row(m[1], m[2], int(m[3]), m[4], m[5], m[6]) for m in found if m]


@cache
def source(alias: str) -> str:
    module, version, path = SOURCES[alias]
    return (module_dir(module, version) / path).read_text()


def _function(text: str, name: str) -> str:
    """The text of Go function ``name`` (signature through its closing brace)."""
    start = re.search(rf"(?m)^func {name}\(", text)
    assert start, name
    line_end = text.index("\n", start.start())
    depth, at = 0, text.rindex("{", start.start(), line_end + 1)
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start.start() : i + 1]
    raise AssertionError(f"{name}: no closing brace")


def callees(entry: Entry) -> list[str]:
    """The validate functions ``entry``'s functions call, package qualifiers dropped."""
    text = source(entry.alias)
    called: dict[str, None] = {}
    for function in entry.functions:
        for name in re.findall(r"\b(?:\w+\.)?([vV]alidate\w*)\(", _function(text, function)):
            if name not in entry.functions:
                called.setdefault(name)
    return list(called)


def locate(name: str, entry: Entry) -> str:
    """``ALIAS:LINE`` of ``func name(`` or ``var name =``: the entry's own file first, then
    its module's."""
    module = SOURCES[entry.alias][0]
    for alias in sorted(SOURCES, key=lambda a: (a != entry.alias, SOURCES[a][0] != module)):
        found = re.search(rf"(?m)^(func {name}\(|var {name} =)", source(alias))
        if found:
            return f"{alias}:{source(alias)[: found.start()].count(chr(10)) + 1}"
    raise AssertionError(f"{name}: not defined in {', '.join(SOURCES)}")


@pytest.mark.schema
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.label)
def test_every_function_an_entry_point_calls_has_a_row(entry: Entry) -> None:
    named = {r.name for r in rows()}
    assert [c for c in callees(entry) if c not in named] == []


@pytest.mark.schema
def test_every_row_points_at_its_function() -> None:
    wrong = []
    for row in rows():
        text = source(row.alias).splitlines()
        line = text[row.line - 1] if row.line <= len(text) else ""
        if not re.match(rf"(func {row.name}\(|var {row.name} =)", line):
            wrong.append(f"{row.name} {row.alias}:{row.line}: {line[:60]!r}")
    assert wrong == []


def test_the_table_is_there_and_each_row_well_formed() -> None:
    table = rows()
    assert len(table) >= 40
    assert len({r.name for r in table}) == len(table)
    assert {r.status for r in table} <= set(STATUSES)
    assert {r.entry for r in table} == {e.label for e in ENTRIES}
    assert {r.alias for r in table} <= set(SOURCES)


def test_every_offline_row_names_what_judges_it_and_it_exists() -> None:
    missing = []
    for row in rows():
        refs = REF.findall(row.refs)
        if row.status != "server-only" and not refs:
            missing.append(f"{row.name}: names nothing")
        for path, name, case in refs:
            file = ROOT / path
            text = file.read_text() if file.exists() else ""
            if f"def {name}(" not in text or (case and case not in CASE_NAMES):
                missing.append(f"{row.name}: {path}::{name}[{case}]")
    assert missing == []


def test_the_counts_the_doc_states_are_the_tables() -> None:
    table = rows()
    counts = {s: sum(r.status == s for r in table) for s in STATUSES}
    stated = (
        f"{len(table)} rule families: {counts['offline']} offline, {counts['partly']} partly"
        f" offline, {counts['server-only']} server-only"
    )
    assert stated in " ".join(DOC.read_text().split())
