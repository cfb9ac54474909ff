"""Kubernetes name formats, written once, as k8s.io/apimachinery@v0.36.4 writes them:
``pkg/util/validation/validation.go`` (dns1123LabelFmt, dns1123SubdomainFmt, dns1035LabelFmt and
their max lengths) and ``pkg/api/validate/content/kube.go`` (labelKeyFmt: IsLabelKey, which
IsQualifiedName is; labelValueFmt: IsValidLabelValue). The patterns, and the two checks
``ValidateObjectMeta`` and ``ValidateLabels`` build of them; each caller words its own error.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = f"({LABEL_KEY_FMT})?"
DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, LABEL_KEY_NAME_MAX = 63, 253, 63
LABEL_VALUE_MAX = 63

DNS1123_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
DNS1123_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
DNS1035_LABEL = re.compile(f"^{DNS1035_LABEL_FMT}$")
# IsLabelKey / IsQualifiedName: an optional DNS subdomain prefix and '/', then the name part
QUALIFIED_NAME = re.compile(f"^({DNS1123_SUBDOMAIN_FMT}/)?{LABEL_KEY_FMT}$")
LABEL_VALUE = re.compile(f"^{LABEL_VALUE_FMT}$")


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX and bool(DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and bool(DNS1123_SUBDOMAIN.match(value))


def qualified_name_problem(value: str) -> str:
    """Why ``value`` is not a qualified name (IsQualifiedName: a label or annotation key), or ""."""
    prefix, _, name = value.rpartition("/") if "/" in value else ("", "", value)
    if value.count("/") > 1:
        return "a qualified name must be a name part with an optional DNS subdomain prefix and '/'"
    if "/" in value and not is_dns1123_subdomain(prefix):
        return "the prefix part must be a lowercase DNS-1123 subdomain (253 characters or less)"
    if not name:
        return "the name part must be non-empty"
    if len(name) > LABEL_KEY_NAME_MAX:
        return f"the name part must be no more than {LABEL_KEY_NAME_MAX} characters"
    if not re.fullmatch(LABEL_KEY_FMT, name):
        return (
            "the name part must consist of alphanumeric characters, '-', '_' or '.', and must"
            " start and end with an alphanumeric character"
        )
    return ""


def label_value_problem(value: str) -> str:
    """Why ``value`` is not a label value (IsValidLabelValue), or ""."""
    if len(value) > LABEL_VALUE_MAX:
        return f"must be no more than {LABEL_VALUE_MAX} characters"
    if not LABEL_VALUE.match(value):
        return (
            "a label value must be empty or consist of alphanumeric characters, '-', '_' or '.',"
            " and must start and end with an alphanumeric character"
        )
    return ""
