"""Docs that quote code stay equal to the code they quote, and cite names and links that exist."""

import ast
import fnmatch
import importlib
import inspect
import os
import re
import subprocess
import textwrap
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_controller_doc_sdk_snippet_is_the_e2e_script() -> None:
    """docs/controller.md shows the Kubeflow SDK script the e2e test runs, verbatim."""
    doc = (ROOT / "docs/controller.md").read_text()
    block = re.search(
        r"```python\n# the script of tests/e2e/test_controller.py.*?\n(.*?)```", doc, re.S
    )
    assert block is not None, "SDK snippet missing from docs/controller.md"
    tree = ast.parse((ROOT / "tests/e2e/test_controller.py").read_text())
    script = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SCRIPT"
    )
    assert isinstance(script, ast.Call)
    text = script.args[0]
    assert isinstance(text, ast.Constant) and isinstance(text.value, str)
    assert textwrap.dedent(text.value).strip() == block.group(1).strip()


def test_admins_doc_shows_the_queues_table_of_the_unit_fixtures() -> None:
    """docs/admins.md's `trainweave queues` example is the table test_queues_view pins."""
    from tests.unit.queues_table import TABLE

    assert f"```\n{TABLE}```" in (ROOT / "docs/admins.md").read_text()


def test_security_doc_lists_every_rbac_rule() -> None:
    """docs/security.md's permission table is deploy/rbac.yaml's rules, one row each, in order."""
    import yaml

    rules = [
        rule
        for doc in yaml.safe_load_all((ROOT / "deploy/rbac.yaml").read_text())
        if doc and doc["kind"] in ("ClusterRole", "Role")
        for rule in doc["rules"]
    ]
    rows = [
        line.split("|")[1:4]
        for line in (ROOT / "docs/security.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| apiGroup")
    ]
    want = [
        [
            f" {rule['apiGroups'][0] or chr(34) * 2} ",
            f" {', '.join(rule['resources'])} ",
            f" {', '.join(rule['verbs'])} ",
        ]
        for rule in rules
    ]
    assert rows == want


# --- Every code name a doc cites resolves -------------------------------------------------------

DOCS = [
    "README.md",
    "hack/README.md",
    "deploy/README.md",
    *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")),
]
"""The docs checked: the READMEs and docs/*.md (CHANGELOG.md is history)."""

# Dotted roots that are also TrainJob or Argo field roots in prose (`trainer.numNodes`,
# `workflow.name`, `inputs.parameters`): cite those modules qualified (`trainjob.trainer.X`).
FIELD_ROOTS = {"trainer", "initializer", "inputs", "outputs", "steps", "tasks", "workflow"}
# Spans that read as ours but name upstream things: Argo's own hack/ and docs/ files, Kueue's
# `plain_pods.md` and config `integrations.frameworks`, the Kubeflow SDK's `utils.py`, Argo's config
# `executor.resources`, Go names (a struct field in an error message, Argo's NodeStatus).
UPSTREAM = {
    "hack/ssh_known_hosts",
    "hack/nsswitch.conf",
    "docs/walk-through/suspending.md",
    "plain_pods.md",
    "utils.py",
    "integrations.frameworks",
    "executor.resources",
    "TrainJobSpec.spec.activeDeadlineSeconds",
    "NodeStatus.Fulfilled",
}
CHECKED_SUFFIXES = (".py", ".md", ".sh")
OTHER_SUFFIXES = {".yaml", ".yml", ".json", ".go", ".toml", ".txt", ".log", ".env", ".png", ".mod"}
FOLDERS = {"trainweave": "trainweave", "adapters": "trainweave.adapters"}
FOLDERS |= {"integrations": "trainweave.integrations", "workflows": "trainweave.workflows"}


def _files() -> set[str]:
    """Project files: tracked, or new and not ignored (another change in progress)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line for line in out.splitlines() if (ROOT / line).exists()}


FILES = _files()
TOP = {f.split("/")[0] for f in FILES}
DIRS = {"."} | {"/".join(f.split("/")[:i]) for f in FILES for i in range(1, f.count("/") + 1)}
BASENAMES = {Path(f).name for f in FILES}


def _modules() -> dict[str, types.ModuleType]:
    """Every module of the package, by import name (adapters/ is trainweave.adapters, ...)."""
    found: dict[str, types.ModuleType] = {}
    for path in sorted(FILES):
        top = path.split("/")[0]
        if top not in FOLDERS or not path.endswith(".py"):
            continue
        parts = [FOLDERS[top], *Path(path).with_suffix("").parts[1:]]
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        found[name] = importlib.import_module(name)
    return found


def _spans(doc: str) -> list[str]:
    """Inline code spans outside fenced blocks, and for design.md the names in its diagrams."""
    text = (ROOT / doc).read_text()
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M)
    prose = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    spans = [m.group(2).strip() for m in re.finditer(r"(`+)(.+?)\1", prose, re.S)]
    if doc == "docs/design.md":
        spans += re.findall(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b(?![/.-])", "\n".join(fenced))
    return spans


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _path_ok(doc: str, span: str) -> bool:
    """A project path (file, folder, glob, `file#anchor`) exists."""
    path, _, anchor = span.partition("#")
    path = path.rstrip("/")
    if path in FILES or path in DIRS:
        if anchor:
            headings = re.findall(r"^#+ (.*)$", (ROOT / path).read_text(), re.M)
            return anchor in {_slug(h) for h in headings}
        return True
    if "*" in path:
        return any(fnmatch.fnmatch(f, path) for f in FILES)
    return False


def _test_ok(span: str) -> bool:
    """A pytest node id (`FILE::[Class::]function[param]`) names a test that exists."""
    path, *names = span.split("::")
    if path not in FILES:
        return False
    scope: list[ast.stmt] = ast.parse((ROOT / path).read_text()).body
    for name in names:
        name = name.split("[")[0]
        node = next((n for n in scope if getattr(n, "name", None) == name), None)
        if node is None:
            return False
        scope = getattr(node, "body", [])
    return True


def _attr(obj: object, name: str) -> object | None:
    """obj.name, also a dataclass or pydantic field, or an attribute set in __init__."""
    if isinstance(obj, types.ModuleType) and hasattr(obj, name):
        value = getattr(obj, name)
        home = getattr(value, "__module__", obj.__name__)
        imported = isinstance(value, (type, types.FunctionType)) and home != obj.__name__
        return None if imported and name not in getattr(obj, "__all__", ()) else value
    if hasattr(obj, name):
        found: object = getattr(obj, name)
        return found
    if isinstance(obj, type):
        for klass in obj.__mro__:
            fields = {**getattr(klass, "__annotations__", {}), **getattr(klass, "model_fields", {})}
            init = vars(klass).get("__init__")
            code = _source(init) if isinstance(init, types.FunctionType) else ""
            if name in fields or re.search(rf"\bself\.{name}\b\s*[:=]", code):
                return object()
    return None


def _source(func: types.FunctionType) -> str:
    """A function's source, or "" for one generated (a dataclass's __init__)."""
    try:
        return inspect.getsource(func)
    except OSError:
        return ""


def _resolve(obj: object, rest: list[str]) -> bool:
    for name in rest:
        found = _attr(obj, name)
        if found is None:
            return False
        obj = found
    return True


def _dotted_ok(span: str, modules: dict[str, types.ModuleType]) -> bool:
    """`a.b.c` resolves: some module whose name ends in a.b (or a) has .c (.b.c); or a is a
    class or function of the package and has .b.c."""
    parts = span.split(".")
    for name, module in modules.items():
        mod_parts = name.split(".")
        for i in range(1, len(parts) + 1):
            if mod_parts[-i:] == parts[:i] and _resolve(module, parts[i:]):
                return True
    return any(
        _resolve(value, parts[1:])
        for value in (_defined(module).get(parts[0]) for module in modules.values())
        if value is not None
    )


def _defined(module: types.ModuleType) -> dict[str, object]:
    """The public classes and functions a module defines (not those it imports)."""
    return {
        key: value
        for key, value in vars(module).items()
        if isinstance(value, (type, types.FunctionType))
        and getattr(value, "__module__", "") == module.__name__
        and not key.startswith("_")
    }


def _kind(span: str, roots: set[str]) -> str | None:
    """Which code name a span is, or None for prose; the rule of test_docs_cite_names_that_exist."""
    span = re.sub(r"\(.*\)$", "", span)  # reconcile.actions(observed, now) names reconcile.actions
    if re.search(r"[\s<>{}$~|…]|\.\.\.", span) or not span:
        return None
    if "::" in span:
        return "test" if span.split("/")[0] in TOP else None
    if "/" in span:
        return "path" if span.split("/")[0] in TOP else None
    if span.endswith(CHECKED_SUFFIXES):
        return "file"
    if (
        re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", span)
        and "." + span.split(".")[-1] not in OTHER_SUFFIXES
    ):
        first = span.split(".")[0]
        return "dotted" if first in roots and first not in FIELD_ROOTS else None
    return None


def test_docs_cite_names_that_exist() -> None:
    """Every code name a doc cites in backticks resolves.

    What counts as a code name (everything else in backticks is prose: commands, YAML keys,
    Kubernetes fields, labels, upstream Go paths such as `pkg/controller/...`):

    - a pytest node id `FILE::function` whose FILE is under a top-level entry of the repository
      names an existing test function (or `FILE::Class::function`);
    - a path with a `/` whose first part is a top-level entry of the repository (`hack/`,
      `adapters/argo/workflow.py`, `docs/design.md#d1-...`, `examples/*/rendered.yaml`) exists;
      a glob matches a file; an anchor is a heading of that file;
    - a bare file name ending in .py, .md or .sh is a project file somewhere in the tree;
    - a dotted Python name whose first part is a module or package of `trainweave` (adapters/,
      integrations/ and workflows/ are mapped into it), or one of its classes or functions, imports:
      `integrations.views.decide.rollup`, `reconcile.actions` (some module named reconcile has
      actions), `WorkflowView.verdict`; `trainer.*`, `workflow.*`, `inputs.*`, `steps.*`, ... are
      TrainJob and Argo fields in prose, so those modules are cited qualified.

    A trailing call `(...)` is dropped; spans with blanks or placeholders (`<tj>`, `{...}`, `...`)
    are prose. In docs/design.md the dotted names in the diagrams count too. UPSTREAM lists the few
    upstream files cited under a name of one of our folders.
    """
    modules = _modules()
    roots = {part for name in modules for part in name.split(".")} | set(FOLDERS)
    roots |= {key for module in modules.values() for key in _defined(module) if key[0].isupper()}
    wrong = []
    for doc in DOCS:
        for span in sorted(set(_spans(doc))):
            kind = _kind(span, roots)
            span = re.sub(r"\(.*\)$", "", span)
            ok = (
                kind is None
                or span in UPSTREAM
                or (kind == "test" and _test_ok(span))
                or (kind == "path" and _path_ok(doc, span))
                or (kind == "file" and span.split("#")[0] in BASENAMES)
                or (kind == "dotted" and _dotted_ok(span, modules))
            )
            if not ok:
                wrong.append(f"{doc}: `{span}` ({kind})")
    assert wrong == [], "\n".join(wrong)


def test_design_module_table_lists_every_module() -> None:
    """docs/design.md's module table names every module under trainweave/, adapters/,
    integrations/ and workflows/ (`__init__.py` aside), and no module that does not exist.

    A row's first cell that starts with a backticked folder (`adapters/kueue/`) sets the folder
    for the rows below it; the second cell's backticked names are files in it; a subfolder there
    (`policies/`) holds the files the row's third cell names.
    """
    text = (ROOT / "docs/design.md").read_text()
    table = text.split("### The modules", 1)[1].split("\n## ", 1)[0]
    folder, listed = "", set()
    for line in table.splitlines():
        cells = line.split("|")[1:4]
        if len(cells) < 3 or cells[0].strip() in ("folder (package)", "---"):
            continue
        if found := re.match(r"`([\w/]+/)`", cells[0].strip()):
            folder = found.group(1)
        for name in re.findall(r"`([\w/]+\.py|[\w/]+/)`", cells[1]):
            if name.endswith("/"):
                listed |= {folder + name + f for f in re.findall(r"`(\w+\.py)`", cells[2])}
            else:
                listed.add(folder + name)
    modules = {
        f
        for f in FILES
        if f.split("/")[0] in FOLDERS and f.endswith(".py") and not f.endswith("__init__.py")
    }
    assert sorted(modules - listed) == [], "missing from docs/design.md's module table"
    assert sorted(listed - modules) == [], "in docs/design.md's module table but not in the tree"


def test_docs_links_resolve() -> None:
    """Every relative Markdown link of a doc names a file of the repository (relative to the doc)
    and, with `#anchor`, one of its headings: the docs that link to design.md's controller loop
    and decisions stay linked to something that exists."""
    wrong = []
    for doc in DOCS:
        text = re.sub(r"^```.*?^```", "", (ROOT / doc).read_text(), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            rel = (ROOT / doc).parent / path if path else ROOT / doc
            name = os.path.relpath(rel.resolve(), ROOT)
            if not _path_ok(doc, name + (f"#{anchor}" if anchor else "")):
                wrong.append(f"{doc}: ({target})")
    assert wrong == [], "\n".join(wrong)
