"""Input errors: every problem names its file, its field path and the reason.

The CLI prints each as ``error: FILE: FIELD.PATH: reason`` and exits 2; the
controller turns the first into a ``Failed`` condition with ``reason``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from trainweave.labels import Reason

# what str.splitlines() breaks at
_LINE_BREAK = re.compile(r"\s*[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]+\s*")


@dataclass(frozen=True)
class InputError:
    """One problem in one input document."""

    path: str
    message: str
    source: str = ""
    reason: Reason = Reason.INVALID_TRAINJOB

    def __str__(self) -> str:
        """``FILE: FIELD.PATH: reason`` on one line (a YAML parser's message spans several)."""
        where = f"{self.source}: " if self.source else ""
        return _LINE_BREAK.sub(" ", f"{where}{self.path}: {self.message}").strip()

    def at(self, source: str) -> InputError:
        """The same error, attributed to ``source`` (a file name) if it has none."""
        return self if self.source else replace(self, source=source)


class InputErrors(Exception):
    """One or more InputErrors; raised by parsers and adapters."""

    def __init__(self, errors: Iterable[InputError]) -> None:
        self.errors: tuple[InputError, ...] = tuple(errors)
        super().__init__("\n".join(str(e) for e in self.errors))

    @property
    def reason(self) -> Reason:
        """The condition reason of the first error."""
        return self.errors[0].reason

    def at(self, source: str) -> InputErrors:
        """All errors attributed to ``source`` where they have none."""
        return InputErrors(e.at(source) for e in self.errors)


def raise_if(errors: Sequence[InputError]) -> None:
    """Raise InputErrors when ``errors`` is not empty."""
    if errors:
        raise InputErrors(errors)
