"""trainweave.k8s_names against the examples k8s.io/apimachinery@v0.36.4 gives in its own error
messages (pkg/util/validation/validation.go, pkg/api/validate/content/kube.go) and the cases its
formats refuse."""

from __future__ import annotations

import pytest

from trainweave import k8s_names


@pytest.mark.parametrize(
    ("value", "label", "subdomain", "dns1035", "qualified"),
    [
        pytest.param("my-name", True, True, True, True, id="my-name"),
        pytest.param("123-abc", True, True, False, True, id="digit-first"),
        pytest.param("example.com", False, True, False, True, id="dotted"),
        pytest.param("MyName", False, False, False, True, id="upper-case"),
        pytest.param("my.name", False, True, False, True, id="my.name"),
        pytest.param("example.com/MyName", False, False, False, True, id="prefixed"),
        pytest.param("-a", False, False, False, False, id="leading-dash"),
        pytest.param("a-", False, False, False, False, id="trailing-dash"),
        pytest.param("a_b", False, False, False, True, id="underscore"),
        pytest.param("Example.com/x", False, False, False, False, id="upper-case-prefix"),
        pytest.param("a/b/c", False, False, False, False, id="two-slashes"),
    ],
)
def test_formats(value: str, label: bool, subdomain: bool, dns1035: bool, qualified: bool) -> None:
    assert bool(k8s_names.DNS1123_LABEL.match(value)) is label
    assert bool(k8s_names.DNS1123_SUBDOMAIN.match(value)) is subdomain
    assert bool(k8s_names.DNS1035_LABEL.match(value)) is dns1035
    assert bool(k8s_names.QUALIFIED_NAME.match(value)) is qualified


def test_max_lengths() -> None:
    assert k8s_names.is_dns1123_label("a" * 63) and not k8s_names.is_dns1123_label("a" * 64)
    long = ".".join(["a" * 63] * 4)[:253]
    assert k8s_names.is_dns1123_subdomain(long.rstrip("."))
    assert not k8s_names.is_dns1123_subdomain("a" * 254)
