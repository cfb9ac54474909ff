"""Docs that quote code stay equal to the code they quote."""

import ast
import re
import textwrap
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
