"""docs/extending.md read by its recipe tests: a section's text, and the trainweave modules a test
file imports that the section does not name. Tests only.

Each recipe is followed by a test (``test_extending*.py``) that imports only what its section
lists, by path (``adapters/argo/retry.py``) or as a folder (``adapters/trainjob/policies/``):
a recipe that needs one more file says so on the page first.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# dotted package -> the folder it is in (setuptools' package-dir); longest first
FOLDERS = {
    "trainweave.adapters": "adapters",
    "trainweave.integrations": "integrations",
    "trainweave": "trainweave",
}


def section(title: str) -> str:
    """The text of ``## title`` in docs/extending.md, up to the next section."""
    text = (ROOT / "docs/extending.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def unlisted(test_file: str, title: str) -> list[str]:
    """The trainweave names ``test_file`` imports (``from M import N``, at module level) whose
    module, or the package holding it, the section names by path: none, when the test follows
    the page."""
    text = section(title)
    tree = ast.parse(Path(test_file).read_text())
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trainweave"):
            imported |= {f"{node.module}.{alias.name}" for alias in node.names}
    missing = []
    for name in sorted(imported):
        parts = name.split(".")
        candidates = []
        for i in range(len(parts), 1, -1):
            dotted = ".".join(parts[:i])
            for prefix, folder in FOLDERS.items():
                if dotted.startswith(prefix + "."):
                    rest = dotted[len(prefix) + 1 :].replace(".", "/")
                    candidates += [f"{folder}/{rest}.py", f"{folder}/{rest}/"]
                    break
        if not any(f"`{c}" in text for c in candidates):
            missing.append(name)
    return missing
