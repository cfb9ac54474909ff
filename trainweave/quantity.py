"""Kubernetes resource quantities: parse, add, compare, format; Go's canonical JSON form.

Follows ``k8s.io/apimachinery/pkg/api/resource`` for the suffixes that matter
for quota (decimal SI ``n u m k M G T P E``, binary ``Ki Mi Gi Ti Pi Ei`` and
decimal exponents ``1e3``). Values are exact ``Decimal``s.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

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
    if isinstance(value, float) and not math.isfinite(value):
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
    if suffix[:1] in ("e", "E") and suffix[1:].lstrip("+-").isdigit():  # not "E" nor "Ei"
        try:
            return base * (Decimal(10) ** int(suffix[1:]))
        except ArithmeticError:  # decimal's Overflow: past any quantity Kubernetes can hold
            raise QuantityError(f"{value!r} is too large a quantity") from None
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


def is_gpu(resource: str) -> bool:
    """Accelerator resources (``nvidia.com/gpu``, ``amd.com/gpu``, MIG slices...): any name
    containing ``gpu``, as Trainer's numGPU and Kueue admins read them."""
    return "gpu" in resource.lower()


def canonical_quantity(value: str | int) -> str:
    """Go's ``resource.Quantity`` JSON form: ``2000`` -> ``2k``, ``1024Mi`` -> ``1Gi``.

    Like ``ParseQuantity``, a string already in canonical form is kept verbatim
    (``01``, ``1E6`` and ``3Gi`` stay as written).
    """
    text = str(value).strip()
    if _kept_verbatim(text):
        return text
    amount = parse(text)
    binary = text.endswith("i")
    exponent_form = any(c in "eE" for c in text.lstrip("+-")) and not binary
    if binary and -1024 < amount < 1024:
        binary = False
    if binary and amount == amount.to_integral_value():
        number, power = int(amount), 0
        while number and number % 1024 == 0 and power < 6:
            number, power = number // 1024, power + 1
        return f"{number}{['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'][power]}"
    nanos = (amount * Decimal(10**9)).to_integral_value(rounding="ROUND_CEILING")
    number, exp = int(nanos), -9
    while number and number % 1000 == 0 and exp < 18:
        number, exp = number // 1000, exp + 3
    if number == 0:
        return "0"
    if exponent_form:
        return f"{number}e{exp}" if exp else str(number)
    return f"{number}{_DECIMAL_SUFFIX[exp]}"


_DECIMAL_SUFFIX = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P"}
_DECIMAL_SUFFIX[18] = "E"
_DECIMAL_EXP = {v: k for k, v in _DECIMAL_SUFFIX.items()}
_BINARY_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_QUANTITY = re.compile(r"^[+-]?0*([0-9]*)(?:\.([0-9]*))?(.*)$")


def _kept_verbatim(text: str) -> bool:
    """``ParseQuantity``'s fast path that keeps the input string (quantity.go)."""
    if text == "0":
        return True
    match = _QUANTITY.match(text)
    if not match:
        return False
    num, denom, suffix = match.group(1) or "0", match.group(2) or "", match.group(3)
    if suffix in _BINARY_EXP:
        exponent = _BINARY_EXP[suffix]
        if denom or 15 - len(num) - int(exponent * 3 / 10) - 1 < 0:
            return False
        return int(num) < 2**63 and int(num) & 0x07 != 0
    if suffix in _DECIMAL_EXP:
        exponent = _DECIMAL_EXP[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
    else:
        return False
    scale = exponent - len(denom)
    shifted = num + denom
    if 18 - len(num) - len(denom) < 0 or scale < -9 or int(shifted) >= 2**63:
        return False
    return scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"


# The pattern Kubernetes CRDs put on int-or-string quantities (Kueue's queue CRDs, Node status).
_CRD_QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]"
    r"|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


def crd_quantity(value: Any) -> str:
    """``value`` as a quantity a CRD accepts (pattern, not negative); a pydantic validator."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(
            f"must be a quantity (an integer or a string like '8' or '64Gi'), got {value!r}"
        )
    text = str(value)
    if not _CRD_QUANTITY.match(text):
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    try:
        amount = parse(text)
    except QuantityError as exc:
        raise ValueError(str(exc)) from None
    if amount < 0:
        raise ValueError(f"{text!r} must not be negative")
    return text
