"""Kubernetes resource quantities: parse, add, compare, format.

Follows ``k8s.io/apimachinery/pkg/api/resource`` for the suffixes that matter
for quota (decimal SI ``n u m k M G T P E``, binary ``Ki Mi Gi Ti Pi Ei`` and
decimal exponents ``1e3``). Values are exact ``Decimal``s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_PATTERN = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[a-zA-Z]*)$")


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse(value: str | int | float) -> Decimal:
    """``"500m"`` -> ``Decimal("0.5")``; raises QuantityError on anything else."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        return Decimal(str(value))
    match = _PATTERN.match(value.strip())
    if not match:
        raise QuantityError(f"{value!r} is not a quantity")
    number, suffix = match.groups()
    try:
        base = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(f"{value!r} is not a quantity") from exc
    if suffix[:1] in ("e", "E"):
        return base * (Decimal(10) ** int(suffix[1:]))
    if suffix not in _SUFFIXES:
        raise QuantityError(f"{value!r} has an unknown suffix {suffix!r}")
    return base * _SUFFIXES[suffix]


def format_quantity(value: Decimal, resource: str = "") -> str:
    """A canonical string: ``cpu`` in cores or millicores, memory in binary units."""
    if value == value.to_integral_value():
        whole = int(value)
        if resource in ("memory", "ephemeral-storage") or resource.endswith("storage"):
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                unit = int(_SUFFIXES[suffix])
                if whole and whole % unit == 0:
                    return f"{whole // unit}{suffix}"
        return str(whole)
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value.normalize())


def add_quantities(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str]:
    """Per-resource sum of two request maps."""
    out = dict(a)
    for name, value in b.items():
        out[name] = format_quantity(parse(out.get(name, "0")) + parse(value), name)
    return out


def max_quantities(a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, str]:
    """Per-resource maximum of two request maps."""
    out = dict(a)
    for name, value in b.items():
        if name not in out or parse(value) > parse(out[name]):
            out[name] = value
    return out


def scale(requests: Mapping[str, str], count: int) -> dict[str, str]:
    """Requests of ``count`` identical pods."""
    return {name: format_quantity(parse(v) * count, name) for name, v in requests.items()}
