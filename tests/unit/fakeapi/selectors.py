"""Label selectors as LIST and WATCH take them (``labels.Parse``). Pure; tests only.

``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x,y)``, ``a`` (exists), ``!a``
(absent), comma-separated, all must hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

Match = Callable[[Mapping[str, str]], bool]
_SET = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _terms(text: str) -> list[str]:
    """Split at the commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


def _term(text: str) -> Match:
    if m := _SET.match(text):
        key, op, values = m[1], m[2], {v.strip() for v in m[3].split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for op in ("!=", "==", "="):
        if op in text:
            key, _, value = (s.strip() for s in text.partition(op))
            if op == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    text = text.strip()
    if text.startswith("!"):
        key = text[1:].strip()
        return lambda labels: key not in labels
    return lambda labels: text in labels


def parse(selector: str) -> Match:
    """A predicate over an object's labels; the empty selector matches everything."""
    if not selector.strip():
        return lambda labels: True
    terms = [_term(t) for t in _terms(selector) if t.strip()]
    return lambda labels: all(t(labels) for t in terms)
