"""hack/ as a small library: the scripts import each other by name (they run as files, hack/ is
sys.path[0]), so the map of who imports whom is read here from their source with ``ast``. No
script imports cluster.py (the command line), the graph has no cycle, every module loads, and
none is over 450 lines (hack/README.md has the map)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

HACK = Path(__file__).resolve().parents[2] / "hack"
MODULES = {p.stem: p for p in sorted(HACK.glob("*.py"))}


def sibling_imports(path: Path) -> set[str]:
    """The hack/ modules ``path`` imports, at module level or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found & MODULES.keys()


GRAPH = {name: sibling_imports(path) for name, path in MODULES.items()}


def cycle_from(start: str) -> list[str] | None:
    """A path start -> ... -> start through GRAPH, if there is one (depth-first)."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, path = stack.pop()
        for nxt in sorted(GRAPH[name]):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_the_map_is_read_from_the_sources() -> None:
    """A guard against a parser that finds nothing: the command line imports its phases."""
    assert {"common", "control_plane", "restart", "upstream"} <= GRAPH["cluster"]
    assert "common" in GRAPH["node"] and "oci" in GRAPH["images"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_script_imports_the_command_line(name: str) -> None:
    assert "cluster" not in GRAPH[name], f"hack/{name}.py imports cluster.py: use common.py"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_import_cycle(name: str) -> None:
    assert cycle_from(name) is None, " -> ".join(cycle_from(name) or [])


def test_common_imports_no_sibling() -> None:
    assert GRAPH["common"] == set()


@pytest.mark.parametrize("name", sorted(MODULES))
def test_small_modules(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= 450, f"hack/{name}.py has {lines} lines"


def test_every_module_loads() -> None:
    """Each script's imports resolve as they do when it runs (hack/ first on sys.path)."""
    code = "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]"
    r = subprocess.run(
        [sys.executable, "-c", code, *sorted(MODULES)],
        cwd=HACK,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_the_readme_maps_every_script() -> None:
    readme = (HACK / "README.md").read_text()
    missing = [f"{name}.py" for name in MODULES if f"`{name}.py`" not in readme]
    assert not missing, f"hack/README.md does not map {missing}"
