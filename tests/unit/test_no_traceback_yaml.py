"""No traceback, and no hang, for hostile YAML (issue 38): properties over aliases, nesting,
duplicate keys and big files, each input within a CPU budget.

The generators reach past ``trainweave.yamlin``'s limits and stay under them: alias bombs of
any shape, values nested up to 600 levels (flow and block, through aliases too), a key of the
example TrainJob repeated, and files on either side of the 16 MiB budget. ``trainweave render``
on each exits 0 or 2 with only ``error: FILE: ...`` lines (``test_no_traceback.check_exit``),
in at most ``BUDGET`` seconds of CPU (``time.process_time``: the machine's load does not count;
the slowest input here takes about a tenth of it). Fixed seed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.test_no_traceback import check_exit
from trainweave import yamlin

EX = Path(__file__).resolve().parents[2] / "examples" / "llm-finetune"
TRAINJOB = (EX / "trainjob.yaml").read_text()
RUNTIME = str(EX / "runtime.yaml")
BUDGET = 2.0  # seconds of CPU per input


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-yaml")


def render_within_budget(workdir: Path, text: str) -> int:
    """``trainweave render`` of TrainJob ``text``: exit 0 or 2 in the CLI's shape, in budget."""
    path = workdir / "trainjob.yaml"
    path.write_text(text)
    started = time.process_time()
    code = check_exit(["render", str(path), "--runtime", RUNTIME], [str(path), RUNTIME])
    spent = time.process_time() - started
    assert spent < BUDGET, f"{spent:.2f} s of CPU"
    return code


def _under(key: str, block: str) -> str:
    """The example TrainJob with ``block`` (YAML lines) as the value of ``spec.trainer.KEY``."""
    lines = block.splitlines() or [""]
    indented = "\n".join("      " + line for line in lines)
    return TRAINJOB.replace("  trainer:\n", f"  trainer:\n    {key}:\n{indented}\n", 1)


@st.composite
def alias_bombs(draw: st.DrawFn) -> str:
    """Anchors of ``width`` aliases each, ``levels`` deep, as a list or a map, in the TrainJob."""
    levels, width = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    as_map = draw(st.booleans())
    lines = ["- &a0 [lol]"]
    for i in range(1, levels + 1):
        if as_map:
            items = ", ".join(f"k{j}: *a{i - 1}" for j in range(width))
            lines.append(f"- &a{i} {{{items}}}")
        else:
            lines.append(f"- &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return _under(draw(st.sampled_from(["args", "env", "bomb"])), "\n".join(lines))


@st.composite
def deep_values(draw: st.DrawFn) -> str:
    depth = draw(st.integers(1, 600))
    style = draw(st.sampled_from(["flow-list", "flow-map", "block", "alias"]))
    if style == "flow-list":
        value = "[" * depth + "]" * depth
    elif style == "flow-map":
        value = "{a: " * depth + "1" + "}" * depth
    elif style == "block":
        value = "".join(" " * i + "a:\n" for i in range(depth)) + " " * depth + "1"
    else:  # an anchor of half the depth, used at half the depth
        half = max(depth // 2, 1)
        value = "- &d " + "[" * half + "]" * half + "\n- " + "[" * half + "*d" + "]" * half
    return _under(draw(st.sampled_from(["args", "env", "deep"])), value)


@st.composite
def repeated_keys(draw: st.DrawFn) -> str:
    """A key line of the example repeated right after itself (same indent, maybe a new value)."""
    lines = TRAINJOB.splitlines()
    keyed = [
        i
        for i, line in enumerate(lines)
        if ":" in line and not line.lstrip().startswith(("#", "-"))
    ]
    at = draw(st.sampled_from(keyed))
    again = lines[at]
    if again.rstrip().endswith(":"):  # a map's key: repeat it with a scalar value
        again = again.rstrip() + " 1"
    return "\n".join([*lines[: at + 1], again, *lines[at + 1 :]]) + "\n"


@st.composite
def big_files(draw: st.DrawFn) -> str:
    """Padding to within a few bytes of the budget, either side, as a comment or a value."""
    slack = draw(st.integers(-64, 64))
    size = yamlin.MAX_BYTES - len(TRAINJOB.encode()) + slack
    if draw(st.booleans()):
        return TRAINJOB + "#" + "x" * max(size - 2, 0) + "\n"
    return TRAINJOB + "  note: " + "x" * max(size - 9, 0) + "\n"


@_settings(60)
@given(alias_bombs())
def test_alias_bombs(workdir: Path, text: str) -> None:
    render_within_budget(workdir, text)


@_settings(60)
@given(deep_values())
def test_deep_values(workdir: Path, text: str) -> None:
    render_within_budget(workdir, text)


@_settings(60)
@given(repeated_keys())
def test_repeated_keys_are_refused(workdir: Path, text: str) -> None:
    assert render_within_budget(workdir, text) == 2


@_settings(8)
@given(big_files())
def test_big_files(workdir: Path, text: str) -> None:
    over = len(text.encode()) > yamlin.MAX_BYTES
    unknown = "\n  note: " in text  # spec.note: an unknown field
    assert render_within_budget(workdir, text) == (2 if over or unknown else 0)
