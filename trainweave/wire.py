"""Wire objects as the API server reads them, for every input kind (trainweave.inputs' Trainer
and JobSet types, trainweave.queues' Kueue objects, trainweave.topology's): the ``Wire`` base
(a declared ``null`` is absent), the ``ObjectMeta`` subset we read, and pydantic's validation
errors as ``InputErrors`` with field paths (``metadata.name``, ``spec.x[0].y``).
"""

from __future__ import annotations

from functools import cache
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from trainweave.errors import InputError, InputErrors
from trainweave.labels import Reason

Json = dict[str, Any]
M = TypeVar("M", bound=BaseModel)


class Wire(BaseModel):
    """A wire object: a declared field set to ``null`` is absent, as the API server prunes it
    from a custom resource before defaulting and validation (``nullable`` is false on every
    field of these CRDs; k8s.io/apiextensions-apiserver@v0.36.4
    pkg/apiserver/schema/defaulting/prunenulls.go). An unknown field stays unknown."""

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        declared = _declared(cls)
        return {k: v for k, v in data.items() if v is not None or k not in declared}


@cache
def _declared(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(f.alias or name for name, f in model.model_fields.items())


class ObjectMeta(Wire):
    """The metadata subset we read; other metadata fields are accepted and kept."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str = ""
    namespace: str = ""
    uid: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


def validate_model(model: type[M], doc: Json, source: str, reason: Reason) -> M:
    """``model`` from ``doc``; pydantic's errors become InputErrors with field paths."""
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        raise InputErrors(
            InputError(_loc(err["loc"]), _message(err), source, reason) for err in exc.errors()
        ) from None


def without_nulls(value: Any) -> Any:
    """``value`` with every mapping entry whose value is None left out, at any depth (list
    items stay: a null item is a type error, not an absent field)."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(document)"


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field"
    if err["type"] == "missing":
        return "required field is missing"
    return str(err["msg"]).removeprefix("Value error, ")
