"""Fixtures for the e2e tier (`make e2e`: a real control plane, see docs/local-control-plane.md)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client

from .kube import E2E_NAMESPACE_LABEL, Kube, api_client, default_kubeconfig


@pytest.fixture(scope="session")
def kube_api() -> Iterator[client.ApiClient]:
    """ApiClient for the e2e cluster (TRAINWEAVE_KUBECONFIG, else hack/cluster.py's kubeconfig)."""
    path = default_kubeconfig()
    if not path.exists():
        pytest.fail(
            f"no kubeconfig at {path}: run `make cluster-up` (or `make e2e`), "
            "or set TRAINWEAVE_KUBECONFIG"
        )
    api = api_client(path)
    client.VersionApi(api).get_code()  # fail fast when the cluster is down
    yield api
    api.close()


@pytest.fixture(scope="session")
def kube(kube_api: client.ApiClient) -> Kube:
    return Kube(kube_api)


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, labelled so Kueue's pod integration manages it.

    Deleted afterwards; its Workloads are deleted first so that Kueue strips its pod finalizers
    (pods of a retriable group would otherwise hold the namespace in Terminating).
    """
    base = request.node.name.replace("_", "-").lower()[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:5]}"
    kube.create_namespace(name, {E2E_NAMESPACE_LABEL: "true"})
    yield name
    for wl in kube.list(("kueue.x-k8s.io", "v1beta2"), "workloads", name):
        kube.delete(("kueue.x-k8s.io", "v1beta2"), "workloads", wl["metadata"]["name"], name)
    kube.delete_namespace(name, wait=120)
