"""YAML input budgets and duplicate keys (``trainweave.yamlin``), with libyaml's loader and
the pure-Python one alike; and through the CLI: one line, exit 2, nothing on stdout."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml

from tests.unit.test_no_traceback import run_cli
from trainweave import files, yamlin
from trainweave.errors import InputErrors

LOADERS = [
    pytest.param(yaml.CSafeLoader, id="libyaml"),
    pytest.param(yaml.SafeLoader, id="python"),
]
EX = Path(__file__).resolve().parents[2] / "examples" / "llm-finetune"


def bomb(levels: int, width: int) -> str:
    """A "billion laughs": each anchor a list of ``width`` aliases of the one before."""
    lines = ["a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def nested(levels: int, block: bool) -> str:
    if block:
        return "".join(" " * i + "a:\n" for i in range(levels - 1)) + " " * (levels - 1) + "a: 1\n"
    return "[" * levels + "]" * levels


def lists(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def refusal(text: str, loader: Any) -> str:
    with pytest.raises(InputErrors) as caught:
        yamlin.load_all(text, "f.yaml", loader)
    (error,) = caught.value.errors
    return str(error)


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "a: 1\nb:\n  c: 1\n  c: 2\n",
            "f.yaml: line 4: duplicate key 'c' (first on line 3): kubectl refuses a map with a"
            " key twice",
            id="block",
        ),
        pytest.param(
            "{a: 1, b: 2, a: 3}",
            "f.yaml: line 1: duplicate key 'a' (first on line 1): kubectl refuses a map with a"
            " key twice",
            id="flow",
        ),
        pytest.param(
            "1: a\n'1': b\n",
            "f.yaml: line 2: duplicate key '1' (first on line 1): kubectl refuses a map with a"
            " key twice",
            id="int-and-string",  # both are JSON's "1"
        ),
        pytest.param(
            "on: a\n'true': b\n",
            "f.yaml: line 2: duplicate key 'true' (first on line 1): kubectl refuses a map with"
            " a key twice",
            id="yaml-1.1-bool",
        ),
        pytest.param(
            bomb(9, 9),
            "f.yaml: line 1: aliases expand this document by 490329045 collections, more than"
            " 100000: refused (an alias bomb?)",
            id="alias-bomb",
        ),
        pytest.param(
            "a: &a [x, *a]\n", "f.yaml: line 1: an alias inside its own anchor: refused", id="loop"
        ),
        pytest.param(
            nested(101, block=False),
            "f.yaml: line 1: nested more than 100 levels deep (aliases expanded): refused",
            id="depth-101-flow",
        ),
        pytest.param(
            nested(500, block=False),
            "f.yaml: line 1: nested more than 100 levels deep (aliases expanded): refused",
            id="depth-500-flow",  # was RecursionError
        ),
        pytest.param(
            "deep: &d " + nested(60, block=False) + "\nuse: " + "[" * 50 + "*d" + "]" * 50 + "\n",
            "f.yaml: line 1: nested more than 100 levels deep (aliases expanded): refused",
            id="depth-through-an-alias",
        ),
    ],
)
def test_refused_in_one_line(text: str, message: str, loader: Any) -> None:
    started = time.process_time()
    assert refusal(text, loader) == message
    assert time.process_time() - started < 2.0


@pytest.mark.parametrize("loader", LOADERS)
def test_deep_block_nesting_is_refused_without_recursion_error(loader: Any) -> None:
    message = refusal(nested(500, block=True), loader)
    assert message.startswith("f.yaml: line ")
    assert message.endswith(": nested more than 100 levels deep (aliases expanded): refused")


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize(
    ("text", "value"),
    [
        pytest.param(
            "base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n",
            [{"base": {"x": 1, "y": 2}, "d": {"x": 3, "y": 2}}],
            id="merge-key-overrides",  # "<<" is not a key given twice
        ),
        pytest.param(nested(100, block=False), [lists(100)], id="depth-100"),
        pytest.param(
            "a: &x {k: v}\nb: *x\nc: *x\n",
            [{"a": {"k": "v"}, "b": {"k": "v"}, "c": {"k": "v"}}],
            id="few-aliases",
        ),
        pytest.param("a: 1\n---\n---\nb: 2\n", [{"a": 1}, None, {"b": 2}], id="documents"),
    ],
)
def test_accepted(text: str, value: list[Any], loader: Any) -> None:
    assert yamlin.load_all(text, "f.yaml", loader) == value


def test_libyaml_is_used_when_present() -> None:
    assert yamlin.LOADER is yaml.CSafeLoader


def test_a_file_past_the_size_budget_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_bytes(b"a: " + b"x" * yamlin.MAX_BYTES + b"\n")
    with pytest.raises(InputErrors) as caught:
        files.documents(str(big))
    assert str(caught.value) == (
        f"{big}: (file): is larger than 16 MiB, the most trainweave reads from one file: refused"
    )
    stdin = mock.patch("sys.stdin", io.StringIO("a: " + "é" * (yamlin.MAX_BYTES // 2)))
    with stdin, pytest.raises(InputErrors) as caught:
        files.documents("-")
    assert "(stdin): (file): is larger than 16 MiB" in str(caught.value)


def test_a_file_at_the_size_budget_is_read(tmp_path: Path) -> None:
    text = "a: " + "x" * (yamlin.MAX_BYTES - 4) + "\n"
    (tmp_path / "f.yaml").write_text(text)
    assert len(text.encode()) == yamlin.MAX_BYTES
    assert files.documents(str(tmp_path / "f.yaml"))[0][0]["a"] == "x" * (yamlin.MAX_BYTES - 4)


def test_a_duplicated_key_in_a_trainjob_fails_render(tmp_path: Path) -> None:
    """``numNodes: 2`` then ``numNodes: 4`` rendered 4 nodes; kubectl refuses the file."""
    text = (EX / "trainjob.yaml").read_text()
    assert "  trainer:\n" in text
    tj = tmp_path / "trainjob.yaml"
    tj.write_text(text.replace("  trainer:\n", "  trainer:\n    numNodes: 2\n    numNodes: 4\n", 1))
    line = text.split("  trainer:\n")[0].count("\n") + 3
    code, out, err = run_cli(["render", str(tj), "--runtime", str(EX / "runtime.yaml")])
    assert (code, out, err) == (
        2,
        "",
        f"error: {tj}: line {line}: duplicate key 'numNodes' (first on line {line - 1}):"
        " kubectl refuses a map with a key twice\n",
    )


def test_an_alias_bomb_fails_plan_in_time(tmp_path: Path) -> None:
    queues = tmp_path / "queues.yaml"
    queues.write_text(bomb(9, 9))
    started = time.process_time()
    code, out, err = run_cli(
        [
            "plan",
            str(EX / "trainjob.yaml"),
            "--runtime",
            str(EX / "runtime.yaml"),
            "--queues",
            str(queues),
        ]
    )
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {queues}: line 1: aliases expand this document by ")
    assert time.process_time() - started < 2.0
