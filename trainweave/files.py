"""Reading input files: YAML documents paired with the file they came from.

How ``trainweave render`` and ``plan`` read their inputs. A file that is not YAML, or a
document that is not a mapping, is an InputError naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainweave.errors import InputError, InputErrors

Document = tuple[dict[str, Any], str]


def documents(path: str) -> list[Document]:
    """Every non-empty YAML document in ``path``, with ``path`` as its source."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputErrors([InputError("(file)", exc.strerror or str(exc), path)]) from None
    try:
        loaded = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(document)"
        raise InputErrors([InputError(where, f"invalid YAML: {exc}", path)]) from None
    bad = [i for i, d in enumerate(loaded) if not isinstance(d, dict)]
    if bad:
        raise InputErrors(InputError(f"(document {i + 1})", "is not a mapping", path) for i in bad)
    return [(d, path) for d in loaded]
