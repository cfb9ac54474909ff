"""Invariants the module docstrings state, checked on the source (``ast``: string constants and
imports, not text).

- Kubernetes name formats are written once (``trainweave/k8s_names.py``): no string constant
  anywhere else holds a DNS-1123/1035 or label-key regex (``[a-z0-9]([-a-z0-9]*[a-z0-9])?`` and
  its kin); modules build their patterns from ``k8s_names``' constants.
- Nothing outside ``adapters/trainjob/policies/`` knows an mlPolicy by name
  (``policies/__init__.py``): no string constant equal to a policy name (a registry key, a
  refused one, or a policy module's name), and no import of a policy's own module
  (``policies.<name>``); ``policies``, ``policies.base`` and ``policies.shared`` are the API.
- Argo and pod phases, Kueue Workload condition types and TrainJob condition types are enum
  members (``trainweave.states``, ``labels.ConditionType``, ``quota.QuotaState``): no string
  constant equal to one stands bare outside an enum's body (or a ``Literal`` type), except in
  docstrings. Error and log text may name a phase inside a longer string.
"""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator

from trainweave.adapters.trainjob import policies
from trainweave.labels import ConditionType
from trainweave.states import ArgoPhase, KueueCondition, PodPhase

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCES = ("adapters", "integrations", "trainweave", "workflows")
POLICIES = pathlib.Path("adapters/trainjob/policies")


def _files() -> list[pathlib.Path]:
    return sorted(
        p.relative_to(ROOT)
        for d in SOURCES
        for p in (ROOT / d).rglob("*.py")
        if "hera_models" not in p.parts
    )


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _enum_values(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that define an enum member (in a class whose base is an Enum)
    or are a ``Literal[...]`` type's values: the places a wire string belongs."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign):
                    out |= {id(n) for n in ast.walk(stmt.value)}
        if isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("Literal"):
            out |= {id(n) for n in ast.walk(node.slice)}
    return out


def _strings(path: pathlib.Path, enums: bool = False) -> Iterator[tuple[int, str]]:
    """(line, value) of each string constant of ``path`` that is not a docstring (nor, unless
    ``enums``, an enum member's or Literal's value)."""
    tree = ast.parse((ROOT / path).read_text(), str(path))
    skip = _docstrings(tree) | (set() if enums else _enum_values(tree))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


FILES = _files()

# --- name formats ------------------------------------------------------------------------------
NAME_FRAGMENTS = (
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?",  # DNS-1123 label
    "[a-z]([-a-z0-9]*[a-z0-9])?",  # DNS-1035 label
    "[A-Za-z0-9][-A-Za-z0-9_.]*",  # label key / qualified name part
)


def test_name_formats_are_written_only_in_k8s_names() -> None:
    """Allowed: ``trainweave/k8s_names.py``."""
    found = [
        f"{path}:{line}: {value!r}"
        for path in FILES
        if path != pathlib.Path("trainweave/k8s_names.py")
        for line, value in _strings(path, enums=True)
        if any(fragment in value for fragment in NAME_FRAGMENTS)
    ]
    assert found == []


# --- policy names ------------------------------------------------------------------------------
POLICY_NAMES = (
    set(policies.REGISTRY.policies)
    | set(policies.REGISTRY.unsupported)
    | {p.stem for p in (ROOT / POLICIES).glob("*.py")} - {"__init__", "base", "shared"}
)
POLICY_API = {"", ".base", ".shared"}
PACKAGE = "trainweave.adapters.trainjob.policies"


def _policy_imports(path: pathlib.Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse((ROOT / path).read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                for alias in node.names:
                    if alias.name in POLICY_NAMES:
                        yield node.lineno, f"{node.module}.{alias.name}"
            elif node.module.startswith(PACKAGE) and node.module[len(PACKAGE) :] not in POLICY_API:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                rest = alias.name[len(PACKAGE) :]
                if alias.name.startswith(PACKAGE) and rest not in POLICY_API:
                    yield node.lineno, alias.name


def test_the_policy_names_are_known() -> None:
    assert {"torch", "mpi", "jax", "xgboost", "flux", "torchtune", "plain"} <= POLICY_NAMES


def test_no_policy_is_known_by_name_outside_its_package() -> None:
    """Allowed: ``adapters/trainjob/policies/``; elsewhere the package's API (``policies``,
    ``policies.base``, ``policies.shared``) and no string equal to a policy name."""
    outside = [p for p in FILES if POLICIES not in p.parents]
    found = [
        f"{path}:{line}: {value!r}"
        for path in outside
        for line, value in _strings(path, enums=True)
        if value in POLICY_NAMES
    ]
    found += [
        f"{path}:{line}: import {name}" for path in outside for line, name in _policy_imports(path)
    ]
    assert found == []


# --- states ------------------------------------------------------------------------------------
STATES = {str(v) for enum_ in (ArgoPhase, PodPhase, KueueCondition, ConditionType) for v in enum_}


def test_no_bare_phase_or_condition_outside_the_enums() -> None:
    """Allowed: a member of a ``StrEnum`` (``trainweave.states``, ``labels``, ``QuotaState``, or
    an enum of another meaning whose value reads the same, such as JobSet's dependsOn status),
    a ``Literal[...]`` type's values, docstrings; a state named inside a longer string (a
    message) is not a bare state."""
    found = [
        f"{path}:{line}: {value!r}"
        for path in FILES
        for line, value in _strings(path)
        if value in STATES
    ]
    assert found == []
