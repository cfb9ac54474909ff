"""Hera's generated Argo models, imported without ``hera.workflows``' package ``__init__``.

``import hera.workflows`` also loads Hera's user classes and its REST clients (requests, httpx):
~0.5 s of the ~1.2 s it takes, none of which rendering uses, and ``trainweave render`` must start
in under 1.5 s. When nothing has imported ``hera.workflows`` yet, its models subpackage is loaded
through a temporary package stub; a later ``import hera.workflows`` runs the real ``__init__``
and reuses the loaded models (``from hera.workflows import models`` gives this same module).
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from importlib.util import find_spec
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hera.workflows import models
elif "hera.workflows" not in sys.modules:
    _spec = find_spec("hera.workflows")
    assert _spec is not None and _spec.submodule_search_locations is not None
    _stub = types.ModuleType("hera.workflows")
    _stub.__path__ = list(_spec.submodule_search_locations)
    sys.modules["hera.workflows"] = _stub
    try:
        models = import_module("hera.workflows.models")
    finally:
        del sys.modules["hera.workflows"]
else:
    models = import_module("hera.workflows.models")

__all__ = ["models"]
