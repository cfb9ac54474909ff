"""Strict shape checks for embedded Kubernetes objects (pod templates, env, PVCs).

The ``kubernetes`` client's generated models carry the API's field names and
types (``openapi_types`` + ``attribute_map``) but their deserializer drops
unknown keys silently. This module walks a wire dict alongside those tables and
reports every unknown or mistyped field by its path, so a misspelt
``resoures:`` in a runtime is an error, never a silent drop. Quantities under
``resources`` are parsed too.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from trainweave import quantity
from trainweave.errors import InputError
from trainweave.k8s_names import DNS1123_LABEL, is_dns1123_label
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


ROOTS = ("V1JobTemplateSpec", "V1PersistentVolumeClaim", "V1PodSpec")


# Value rules the API server applies to these fields (Kubernetes v1.36: k8s.io/apimachinery
# pkg/util/validation, pkg/apis/core/validation). A pod template that breaks one is refused only
# when Argo creates the pod, after its step was admitted, and every retry is refused again: so
# they are input errors here, by field path.
def _dns_label(value: Any) -> str:
    if isinstance(value, str) and is_dns1123_label(value):
        return ""
    return (
        f"{value!r} is not a lowercase RFC 1123 label (at most 63 characters of a-z, 0-9 and '-',"
        " starting and ending with a letter or digit)"
    )


def _env_name(value: Any) -> str:
    # IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, on since v1.34)
    if isinstance(value, str) and value and all(" " <= ch <= "~" and ch != "=" for ch in value):
        return ""
    return (
        f"{value!r} is not a valid environment variable name (printable ASCII, not '=', not empty)"
    )


def _port_number(value: Any) -> str:
    return "" if isinstance(value, int) and 1 <= value <= 65535 else f"{value!r} is not 1-65535"


def _port_name(value: Any) -> str:
    # IsValidPortName: an IANA_SVC_NAME, at most 15 characters with a letter
    if (
        isinstance(value, str)
        and len(value) <= 15
        and DNS1123_LABEL.match(value)
        and "--" not in value
        and any(ch.isalpha() for ch in value)
    ):
        return ""
    return f"{value!r} is not a valid port name (IANA_SVC_NAME: at most 15 of a-z, 0-9, '-')"


env_name_problem = _env_name
port_name_problem = _port_name


def _port_num_or_name(value: Any) -> str:
    # ValidatePortNumOrName (pkg/apis/core/validation/validation.go): an IntOrString probe port
    if isinstance(value, bool) or not isinstance(value, int | str):
        return f"{value!r} is not a port number or name"
    return _port_number(value) if isinstance(value, int) else _port_name(value)


# maps of resource quantities (the client's models type them as maps of strings): a value that
# does not parse is refused by the API server as it decodes the body (400, "quantities must
# match the regular expression"), before validation
_QUANTITY_MAPS = {
    ("V1ResourceRequirements", "limits"),
    ("V1ResourceRequirements", "requests"),
    ("V1VolumeResourceRequirements", "limits"),
    ("V1VolumeResourceRequirements", "requests"),
    ("V1PodSpec", "overhead"),
}


def _quantity(value: Any) -> str:
    """A single quantity field (emptyDir ``sizeLimit``), as ``_quantities`` judges each."""
    out: list[InputError] = []
    _quantities({"": value}, "", Reason.INVALID_RUNTIME, out)
    return out[0].message if out else ""


_RULES: dict[tuple[str, str], Callable[[Any], str]] = {
    ("V1EmptyDirVolumeSource", "sizeLimit"): _quantity,
    ("V1Container", "name"): _dns_label,
    ("V1Volume", "name"): _dns_label,
    ("V1EnvVar", "name"): _env_name,
    ("V1ContainerPort", "containerPort"): _port_number,
    ("V1ContainerPort", "name"): _port_name,
    ("V1TCPSocketAction", "port"): _port_num_or_name,
    ("V1HTTPGetAction", "port"): _port_num_or_name,
}
Table = dict[str, dict[str, tuple[str, str]]]


def _fields(type_name: str) -> dict[str, tuple[str, str]]:
    """Wire name -> (python attribute, type string) for one client model class."""
    return _table()[type_name]


@cache
def _table() -> Table:
    """Field tables of every model reachable from ROOTS.

    Importing ``kubernetes.client`` costs ~0.5 s, too much for ``trainweave render``; the tables
    are cached as JSON per installed ``kubernetes`` version under the user cache folder.
    """
    version = metadata.version("kubernetes")
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "trainweave" / "k8s-fields" / f"kubernetes-{version}.json"
    try:
        loaded: Table = {
            k: {w: (a, t) for w, (a, t) in v.items()}
            for k, v in json.loads(path.read_text()).items()
        }
        return loaded
    except (OSError, ValueError):
        table = build_table()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(table))
        tmp.replace(path)
    except OSError:
        pass  # a read-only home only costs the import time
    return table


def build_table() -> Table:
    """Walk the ``kubernetes`` client's models from ROOTS and record their fields."""
    from kubernetes import client as k8s

    table: Table = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in table or name in _SCALARS:
            continue
        cls = getattr(k8s, name)
        table[name] = {
            wire: (attr, cls.openapi_types[attr]) for attr, wire in cls.attribute_map.items()
        }
        for _, type_name in table[name].values():
            inner = _DICT.sub(r"\1", _LIST.sub(r"\1", type_name))
            inner = _DICT.sub(r"\1", _LIST.sub(r"\1", inner))
            if inner not in _SCALARS:
                todo.append(inner)
    return table


def objects(value: Any, type_name: str, path: str) -> Iterator[tuple[dict[str, Any], str, str]]:
    """Every object in ``value`` read as ``type_name``: (the object, its model name, its path).

    Values of the wrong shape are skipped (``check`` reports them).
    """
    if m := _LIST.match(type_name):
        for i, item in enumerate(value if isinstance(value, list) else []):
            yield from objects(item, m.group(1), f"{path}[{i}]")
    elif m := _DICT.match(type_name):
        for key, item in (value if isinstance(value, dict) else {}).items():
            yield from objects(item, m.group(1), f"{path}.{key}")
    elif type_name not in _SCALARS and isinstance(value, dict):
        yield value, type_name, path
        fields = _fields(type_name)
        for key, item in value.items():
            if key in fields:
                yield from objects(item, fields[key][1], f"{path}.{key}")


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
            if item is None:  # a null field is absent (pruned), a null item is no value
                out.append(InputError(f"{path}[{i}]", "must not be null", reason=reason))
                continue
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
        if (type_name, attr) in _QUANTITY_MAPS:
            _quantities(item, f"{path}.{key}", reason, out)
            continue
        rule = _RULES.get((type_name, key))
        if rule is not None and (problem := rule(item)):
            out.append(InputError(f"{path}.{key}", problem, reason=reason))
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
            if quantity.parse(amount) < 0:
                raise quantity.QuantityError(f"{amount!r} must be greater than or equal to 0")
        except quantity.QuantityError as exc:
            out.append(InputError(f"{path}.{name}", str(exc), reason=reason))


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )
