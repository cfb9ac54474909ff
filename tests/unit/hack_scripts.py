"""hack/ scripts as modules for the unit tier: they import their siblings by name
(hack/common.py), as they do when run as files with hack/ first on sys.path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

HACK = Path(__file__).resolve().parents[2] / "hack"


def load(name: str) -> ModuleType:
    """hack/<name>.py, imported by name (hack/ appended to sys.path once)."""
    if str(HACK) not in sys.path:
        sys.path.append(str(HACK))
    return importlib.import_module(name)
