"""Strict shape checks for embedded Kubernetes objects (pod templates, env, PVCs).

The ``kubernetes`` client's generated models carry the API's field names and
types (``openapi_types`` + ``attribute_map``) but their deserializer drops
unknown keys silently. This module walks a wire dict alongside those tables and
reports every unknown or mistyped field by its path, so a misspelt
``resoures:`` in a runtime is an error, never a silent drop. Quantities under
``resources`` are parsed too.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kubernetes import client as k8s

from trainweave import quantity
from trainweave.errors import InputError
from trainweave.labels import Reason

_LIST = re.compile(r"^List\[(.+)\]$")
_DICT = re.compile(r"^Dict\[str, (.+)\]$")
_SCALARS: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "bool": (bool,),
    "float": (int, float),
    "object": (object,),
    "datetime": (str,),
    "date": (str,),
}


@cache
def _fields(type_name: str) -> dict[str, tuple[str, str]]:
    """Wire name -> (python attribute, type string) for one client model class."""
    cls = getattr(k8s, type_name)
    return {wire: (attr, cls.openapi_types[attr]) for attr, wire in cls.attribute_map.items()}


def check(value: Any, type_name: str, path: str, reason: Reason) -> list[InputError]:
    """Every unknown or mistyped field of ``value`` read as ``type_name``."""
    errors: list[InputError] = []
    _walk(value, type_name, path, reason, errors)
    return errors


def _walk(value: Any, type_name: str, path: str, reason: Reason, out: list[InputError]) -> None:
    if value is None:
        return
    if m := _LIST.match(type_name):
        if not isinstance(value, list):
            out.append(InputError(path, f"must be a list, got {_kind(value)}", reason=reason))
            return
        for i, item in enumerate(value):
            _walk(item, m.group(1), f"{path}[{i}]", reason, out)
        return
    if m := _DICT.match(type_name):
        if not isinstance(value, dict):
            out.append(InputError(path, f"must be a map, got {_kind(value)}", reason=reason))
            return
        for key, item in value.items():
            _walk(item, m.group(1), f"{path}.{key}", reason, out)
        return
    if type_name in _SCALARS:
        _scalar(value, type_name, path, reason, out)
        return
    if not isinstance(value, dict):
        out.append(InputError(path, f"must be an object, got {_kind(value)}", reason=reason))
        return
    fields = _fields(type_name)
    for key, item in value.items():
        if key not in fields:
            out.append(InputError(f"{path}.{key}", f"unknown field in {type_name}", reason=reason))
            continue
        attr, sub = fields[key]
        if type_name == "V1ResourceRequirements" and attr in ("limits", "requests"):
            _quantities(item, f"{path}.{key}", reason, out)
            continue
        _walk(item, sub, f"{path}.{key}", reason, out)


def _scalar(value: Any, type_name: str, path: str, reason: Reason, out: list[InputError]) -> None:
    allowed = _SCALARS[type_name]
    if type_name == "int" and isinstance(value, bool):
        out.append(InputError(path, "must be an integer, got a boolean", reason=reason))
    elif not isinstance(value, allowed):
        out.append(InputError(path, f"must be {type_name}, got {_kind(value)}", reason=reason))


def _quantities(value: Any, path: str, reason: Reason, out: list[InputError]) -> None:
    if not isinstance(value, dict):
        out.append(InputError(path, f"must be a map, got {_kind(value)}", reason=reason))
        return
    for name, amount in value.items():
        try:
            if isinstance(amount, bool) or not isinstance(amount, str | int | float):
                raise quantity.QuantityError(f"{amount!r} is not a quantity")
            quantity.parse(amount)
        except quantity.QuantityError as exc:
            out.append(InputError(f"{path}.{name}", str(exc), reason=reason))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
