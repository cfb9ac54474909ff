"""CRD openAPIV3Schemas from the pinned Go modules, as JSON schemas for ``jsonschema``.

``go mod download -json MODULE@VERSION`` gives the module folder; the CRD's schema for one served
version is converted (``x-kubernetes-int-or-string`` -> anyOf integer|string) and cached as JSON
under ``${XDG_CACHE_HOME:-~/.cache}/trainweave/crd-schemas/``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import jsonschema
import yaml

CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trainweave" / "crd-schemas"
)


def module_dir(module: str, version: str) -> Path:
    """The module's source folder in the Go module cache (downloaded if needed)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(json.loads(out.stdout)["Dir"])


def crd_schema(module: str, version: str, relpath: str, served_version: str) -> dict[str, Any]:
    """The JSON schema of ``served_version`` of the CRD at ``relpath`` in ``module@version``."""
    key = f"{module.replace('/', '_')}@{version}_{relpath.replace('/', '_')}_{served_version}.json"
    cached = CACHE / key
    if cached.exists():
        schema: dict[str, Any] = json.loads(cached.read_text())
        return schema
    crd = yaml.load((module_dir(module, version) / relpath).read_text(), Loader=yaml.CSafeLoader)
    version_entry = next(v for v in crd["spec"]["versions"] if v["name"] == served_version)
    schema = _convert(version_entry["schema"]["openAPIV3Schema"])
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(schema))
    return schema


class SchemaError(Protocol):
    """What the tests read of a ``jsonschema.ValidationError``."""

    @property
    def message(self) -> str: ...

    @property
    def absolute_path(self) -> Sequence[str | int]: ...


class Validator(Protocol):
    """What the tests use of a ``jsonschema`` validator (jsonschema ships no type hints)."""

    def iter_errors(self, instance: object) -> Iterator[SchemaError]: ...


def validator(schema: dict[str, Any]) -> Validator:
    """A Draft 2020-12 validator of ``schema``."""
    out: Validator = jsonschema.Draft202012Validator(schema)
    return out


def schema_errors(validator: Validator, doc: object) -> list[str]:
    """Every error of ``doc`` against ``validator``, as ``[path]: message``."""
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


def _convert(node: Any) -> Any:
    if isinstance(node, dict):
        node = {k: _convert(v) for k, v in node.items()}
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        return node
    if isinstance(node, list):
        return [_convert(v) for v in node]
    return node
