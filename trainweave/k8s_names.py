"""Kubernetes name formats, written once, as k8s.io/apimachinery@v0.36.4 writes them:
``pkg/util/validation/validation.go`` (dns1123LabelFmt, dns1123SubdomainFmt, dns1035LabelFmt and
their max lengths) and ``pkg/api/validate/content/kube.go`` (labelKeyFmt: IsLabelKey, which
IsQualifiedName is). The patterns only; each caller words its own error.
"""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + r"(\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
DNS1123_LABEL_MAX, DNS1123_SUBDOMAIN_MAX, LABEL_KEY_NAME_MAX = 63, 253, 63

DNS1123_LABEL = re.compile(f"^{DNS1123_LABEL_FMT}$")
DNS1123_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
DNS1035_LABEL = re.compile(f"^{DNS1035_LABEL_FMT}$")
# IsLabelKey / IsQualifiedName: an optional DNS subdomain prefix and '/', then the name part
QUALIFIED_NAME = re.compile(f"^({DNS1123_SUBDOMAIN_FMT}/)?{LABEL_KEY_FMT}$")


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX and bool(DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and bool(DNS1123_SUBDOMAIN.match(value))
