"""Fixtures for the MultiKueue tier (`make e2e-multicluster`: hack/multicluster.py's manager and
two workers; docs/multicluster.md). Not collected by `make e2e` (it runs tests/e2e only)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.kube import Kube, api_client

MEMBERS = ("manager", "worker-1", "worker-2")


def kubeconfig(member: str) -> Path:
    """TRAINWEAVE_MC_<MEMBER>_KUBECONFIG, as `hack/multicluster.py with` exports it."""
    var = f"TRAINWEAVE_MC_{member.upper().replace('-', '_')}_KUBECONFIG"
    path = os.environ.get(var)
    if not path:
        pytest.fail(f"{var} is not set: run through `make e2e-multicluster`")
    return Path(path)


@pytest.fixture(scope="session")
def clusters() -> Iterator[dict[str, Kube]]:
    """A Kube per member, each checked to answer."""
    apis = {m: api_client(kubeconfig(m)) for m in MEMBERS}
    for api in apis.values():
        client.VersionApi(api).get_code()
    yield {m: Kube(api) for m, api in apis.items()}
    for api in apis.values():
        api.close()  # type: ignore[no-untyped-call]
