"""Field values the API server refuses in a pod (Kubernetes v1.36 validation) are input errors by
field path: otherwise Argo's pod creation is refused after the step was admitted, on every retry."""

from __future__ import annotations

from typing import Any

import pytest

from trainweave import k8s_schema
from trainweave.labels import Reason

CONTAINER = "V1Container"


def problems(value: Any, type_name: str) -> list[str]:
    return [
        f"{e.path}: {e.message}"
        for e in k8s_schema.check(value, type_name, "c", Reason.INVALID_RUNTIME)
    ]


@pytest.mark.parametrize("name", ["node", "a", "x1-y2", "a" * 63])
def test_container_names_that_are_rfc1123_labels_pass(name: str) -> None:
    assert problems({"name": name}, CONTAINER) == []


@pytest.mark.parametrize("name", ["Bad_Name", "-a", "a-", "", "a" * 64, "ü", "a.b"])
def test_container_names_that_are_not_labels_are_refused(name: str) -> None:
    assert problems({"name": name}, CONTAINER) == [
        f"c.name: {name!r} is not a lowercase RFC 1123 label (at most 63 characters of a-z, 0-9"
        " and '-', starting and ending with a letter or digit)"
    ]


@pytest.mark.parametrize("name", ["PATH", "1BAD", "has space", "a.b-c", "~"])
def test_env_names_follow_the_relaxed_rule(name: str) -> None:
    assert problems({"env": [{"name": name, "value": "v"}]}, CONTAINER) == []


@pytest.mark.parametrize("name", ["A=B", "", "ü", "tab\there"])
def test_env_names_the_api_server_refuses(name: str) -> None:
    assert problems({"env": [{"name": name}]}, CONTAINER) == [
        f"c.env[0].name: {name!r} is not a valid environment variable name (printable ASCII,"
        " not '=', not empty)"
    ]


def test_negative_quantities_are_refused_zero_is_not() -> None:
    res = {"resources": {"requests": {"cpu": "-1", "memory": "0"}, "limits": {"x/gpu": -2}}}
    assert problems(res, CONTAINER) == [
        "c.resources.requests.cpu: '-1' must be greater than or equal to 0",
        "c.resources.limits.x/gpu: -2 must be greater than or equal to 0",
    ]


def test_ports_and_port_names() -> None:
    ports = {
        "ports": [
            {"containerPort": 29500, "name": "torch"},
            {"containerPort": 0},
            {"containerPort": 70000, "name": "a-very-long-port-name"},
            {"containerPort": 22, "name": "123"},
        ]
    }
    assert problems(ports, CONTAINER) == [
        "c.ports[1].containerPort: 0 is not 1-65535",
        "c.ports[2].containerPort: 70000 is not 1-65535",
        "c.ports[2].name: 'a-very-long-port-name' is not a valid port name (IANA_SVC_NAME: at"
        " most 15 of a-z, 0-9, '-')",
        "c.ports[3].name: '123' is not a valid port name (IANA_SVC_NAME: at most 15 of a-z,"
        " 0-9, '-')",
    ]


def test_volume_names() -> None:
    spec = {"containers": [], "volumes": [{"name": "ok", "emptyDir": {}}, {"name": "Bad Vol"}]}
    assert problems(spec, "V1PodSpec") == [
        "c.volumes[1].name: 'Bad Vol' is not a lowercase RFC 1123 label (at most 63 characters"
        " of a-z, 0-9 and '-', starting and ending with a letter or digit)"
    ]
