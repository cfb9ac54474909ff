"""Block-style YAML for manifests: plain dicts, lists, strings, numbers, booleans, None.

PyYAML's representer runs in Python even with libyaml (~4 ms for the llm-finetune render, more
than the render itself). Manifests are plain JSON-like data, so this emitter writes them
directly: a string stays plain only when it cannot be read back as anything else, otherwise it
is written as a JSON string, which is a valid YAML double-quoted scalar. ``yaml.safe_load`` of
the output equals the input (tests/unit/test_yamlout.py checks that over generated documents).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

# Conservative: letters, digits and a few separators; must start with a letter or '/'.
_PLAIN = re.compile(r"[A-Za-z/][A-Za-z0-9_./@-]*")  # fullmatch: ``$`` would let "A\n" through
# Characters YAML readers refuse raw (PyYAML's NON_PRINTABLE) or fold as line breaks
# (\x85, \u2028, \u2029): escaped inside double quotes.
_UNPRINTABLE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# Words YAML 1.1 (PyYAML) or 1.2 would read as booleans or null.
_RESERVED = {
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
}  # fmt: skip


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value).lower()  # YAML 1.1 floats need a dot before the exponent (PyYAML)
        return text.replace("e", ".0e", 1) if "e" in text and "." not in text else text
    return _string(str(value))


@lru_cache(maxsize=4096)
def _string(text: str) -> str:
    """A string scalar: plain when unambiguous, else double-quoted (manifests repeat strings)."""
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    return _UNPRINTABLE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False)
    )


def _emit(value: Any, indent: str, out: list[str]) -> None:
    """Append the lines of a non-empty mapping or sequence at ``indent``."""
    if isinstance(value, dict):
        for key, item in value.items():
            head = f"{indent}{_scalar(key)}:"
            if isinstance(item, dict | list) and item:
                out.append(head)
                _emit(item, indent + "  " if isinstance(item, dict) else indent, out)
            else:
                out.append(f"{head} {_inline(item)}")
        return
    for item in value:
        if isinstance(item, dict | list) and item:
            sub: list[str] = []
            _emit(item, indent + "  ", sub)
            first = sub[0]
            out.append(f"{indent}- {first[len(indent) + 2 :]}")
            out.extend(sub[1:])
        else:
            out.append(f"{indent}- {_inline(item)}")


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump(document: Any) -> str:
    """One YAML document (no ``---``)."""
    if isinstance(document, dict | list) and document:
        lines: list[str] = []
        _emit(document, "", lines)
        return "\n".join(lines) + "\n"
    return _inline(document) + "\n"


def dump_all(documents: Iterable[Any]) -> str:
    """Documents separated by ``---``, as ``yaml.safe_dump_all`` would."""
    return "---\n".join(dump(d) for d in documents)
