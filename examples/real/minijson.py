"""The JSON subset the real workloads exchange, without the ``json`` module.

The workload image has Debian bookworm's python3-minimal only, and ``json`` is not in it (it is
in libpython3.11-stdlib). Encodes and decodes objects, arrays, strings, ints, finite floats,
booleans and null; floats are written with ``repr``, which reads back to the same float, so
two ranks that exchange a gradient this way hold bit-identical values. Pure.
"""

from __future__ import annotations

import math
from typing import Any

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
}
_UNESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_NUMBER_CHARS = frozenset("+-0123456789.eE")


def dumps(value: Any) -> str:
    """``value`` as compact JSON, object keys in the order given."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        return repr(value)
    if isinstance(value, str):
        return '"' + "".join(_escape(c) for c in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, not {key!r}")
            items.append(dumps(key) + ":" + dumps(item))
        return "{" + ",".join(items) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")


def _escape(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    return f"\\u{ord(c):04x}" if ord(c) < 0x20 else c


def loads(text: str) -> Any:
    """The value of one JSON document; ``ValueError`` naming the offset on bad input."""
    value, end = _value(text, _skip(text, 0))
    end = _skip(text, end)
    if end != len(text):
        raise ValueError(f"extra data at offset {end}")
    return value


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _value(text: str, i: int) -> tuple[Any, int]:
    if i >= len(text):
        raise ValueError(f"unexpected end of input at offset {i}")
    c = text[i]
    if c == "{":
        return _object(text, i + 1)
    if c == "[":
        return _array(text, i + 1)
    if c == '"':
        return _string(text, i + 1)
    for word, constant in (("true", True), ("false", False), ("null", None)):
        if text.startswith(word, i):
            return constant, i + len(word)
    end = i
    while end < len(text) and text[end] in _NUMBER_CHARS:
        end += 1
    token = text[i:end]
    if not token:
        raise ValueError(f"unexpected {c!r} at offset {i}")
    try:
        if any(ch in token for ch in ".eE"):
            return float(token), end
        return int(token), end
    except ValueError:
        raise ValueError(f"bad number {token!r} at offset {i}") from None


def _object(text: str, i: int) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    i = _skip(text, i)
    if text.startswith("}", i):
        return result, i + 1
    while True:
        if not text.startswith('"', i):
            raise ValueError(f"expected a string key at offset {i}")
        key, i = _string(text, i + 1)
        i = _skip(text, i)
        if not text.startswith(":", i):
            raise ValueError(f"expected ':' at offset {i}")
        result[key], i = _value(text, _skip(text, i + 1))
        i = _skip(text, i)
        if text.startswith("}", i):
            return result, i + 1
        if not text.startswith(",", i):
            raise ValueError(f"expected ',' or '}}' at offset {i}")
        i = _skip(text, i + 1)


def _array(text: str, i: int) -> tuple[list[Any], int]:
    result: list[Any] = []
    i = _skip(text, i)
    if text.startswith("]", i):
        return result, i + 1
    while True:
        item, i = _value(text, i)
        result.append(item)
        i = _skip(text, i)
        if text.startswith("]", i):
            return result, i + 1
        if not text.startswith(",", i):
            raise ValueError(f"expected ',' or ']' at offset {i}")
        i = _skip(text, i + 1)


def _string(text: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while i < len(text):
        c = text[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\":
            code = text[i + 1 : i + 2]
            if code == "u":
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            if code not in _UNESCAPES:
                raise ValueError(f"bad escape at offset {i}")
            out.append(_UNESCAPES[code])
            i += 2
            continue
        out.append(c)
        i += 1
    raise ValueError("unterminated string")
