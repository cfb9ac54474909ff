"""Container ``resources`` as the API server judges them (k8s.io/kubernetes v1.36.4
``pkg/apis/core/validation/validation.go`` ``validateResourceRequirements``, names and kinds from
``pkg/apis/core/helper/helpers.go``).

Extended resources (a domain other than ``kubernetes.io``: ``nvidia.com/gpu``) are whole numbers,
need a limit and a request equal to it; hugepages likewise, in whole pages, beside cpu or memory;
other requests at most their limit. Negative and malformed quantities are ``k8s_schema``'s.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainweave import quantity
from trainweave.errors import InputError
from trainweave.k8s_names import QUALIFIED_NAME
from trainweave.labels import Reason

_STANDARD = {"cpu", "memory", "ephemeral-storage"}  # helpers.go standardContainerResources
_HUGEPAGES = "hugepages-"


def native(name: str) -> bool:
    """IsNativeResource: no domain, or a kubernetes.io one."""
    return "/" not in name or "kubernetes.io/" in name


def extended(name: str) -> bool:
    """IsExtendedResourceName."""
    if native(name) or name.startswith("requests."):
        return False
    prefix, _, rest = f"requests.{name}".rpartition("/")
    return len(rest) <= 63 and len(prefix) <= 253 and bool(QUALIFIED_NAME.match(f"{prefix}/{rest}"))


def _overcommit(name: str) -> bool:
    """IsOvercommitAllowed: native and not hugepages."""
    return native(name) and not name.startswith(_HUGEPAGES)


def _amount(value: Any) -> Decimal | None:
    try:
        return quantity.parse(value) if isinstance(value, str | int | float) else None
    except quantity.QuantityError:
        return None


def errors(resources: Any, path: str, reason: Reason, whole: bool = True) -> list[InputError]:
    """What validateResourceRequirements refuses; ``whole`` False for a partial override
    (a TrainJob's resourcesPerNode, merged into the runtime's): per-quantity rules only."""
    if not isinstance(resources, dict):
        return []
    out: list[InputError] = []
    sections = {}
    for section in ("limits", "requests"):
        values = resources.get(section)
        sections[section] = values if isinstance(values, dict) else {}
        for name, raw in sections[section].items():
            if not isinstance(name, str):
                continue  # k8s_schema names a key that is not a string
            out += _quantity_errors(name, raw, f"{path}.{section}.{name}", reason)
    if not whole:
        return out
    limits, requests = sections["limits"], sections["requests"]
    for name, raw in requests.items():
        amount = _amount(raw)
        if name not in limits:
            if not _overcommit(name):
                out.append(
                    InputError(
                        f"{path}.limits",
                        f"Required value: Limit must be set for non overcommitable resources ({name})",
                        reason=reason,
                    )
                )
            continue
        limit = _amount(limits[name])
        if amount is None or limit is None:
            continue
        if amount != limit and not _overcommit(name):
            why = f"must be equal to {name} limit of {limits[name]}"
        elif amount > limit:
            why = f"must be less than or equal to {name} limit of {limits[name]}"
        else:
            continue
        out.append(InputError(f"{path}.requests", f"Invalid value: {raw!r}: {why}", reason=reason))
    names = set(limits) | set(requests)
    if any(n.startswith(_HUGEPAGES) for n in names) and not names & {"cpu", "memory"}:
        out.append(InputError(path, "Forbidden: HugePages require cpu or memory", reason=reason))
    return out


def _quantity_errors(name: str, raw: Any, path: str, reason: Reason) -> list[InputError]:
    # validateContainerResourceName, ValidateResourceQuantityValue, validateResourceQuantityHugePageValue
    if "/" not in name and name not in _STANDARD and not name.startswith(_HUGEPAGES):
        return [
            InputError(
                path,
                f"Invalid value: {name!r}: must be a standard resource for containers",
                reason=reason,
            )
        ]
    if "/" in name and not native(name) and not extended(name):
        return [
            InputError(
                path,
                f"Invalid value: {name!r}: doesn't follow extended resource name standard",
                reason=reason,
            )
        ]
    amount = _amount(raw)
    if amount is None or amount < 0:
        return []  # k8s_schema reports malformed and negative quantities
    if extended(name) and amount != amount.to_integral_value():
        return [InputError(path, f"Invalid value: {raw!r}: must be an integer", reason=reason)]
    if name.startswith(_HUGEPAGES):
        page = _amount(name.removeprefix(_HUGEPAGES))
        if page is None or page <= 0 or int(amount) % int(page) != 0:
            return [
                InputError(
                    path,
                    f"Invalid value: {raw!r}: {raw} is not positive integer multiple of {name}",
                    reason=reason,
                )
            ]
    return []
