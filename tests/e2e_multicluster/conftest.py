"""Fixtures for the MultiKueue tier (`make e2e-multicluster`: hack/multicluster.py's manager and
two workers; docs/multicluster.md). Not collected by `make e2e` (it runs tests/e2e only)."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.e2e.controller_proc import ControllerProc
from tests.e2e.kube import E2E_NAMESPACE_LABEL, KUEUE, Kube, api_client, condition_is, wait_until
from tests.e2e.pipelines import apply, example

MEMBERS = ("manager", "worker-1", "worker-2")
DISPATCH_CQ, STEPS_CQ = "multicluster-dispatch", "multicluster-steps"  # hack/multicluster.py
Json = dict[str, Any]


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


def local_queue(name: str, cq: str, ns: str) -> Json:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterQueue": cq},
    }


def active(kube: Kube, lq: str, ns: str) -> Callable[[], bool]:
    return lambda: condition_is(kube.get(KUEUE, "localqueues", lq, ns), "Active")


def ready(p: ControllerProc) -> Callable[[], bool]:
    return lambda: p.get("/readyz")[0] == 200


# each worker's `trainweave controller` per namespace (mc_namespace starts and stops them)
CONTROLLERS: dict[tuple[str, str], ControllerProc] = {}


def controller_back(ns: str, member: str) -> bool:
    """The member's controller for ``ns`` started again if it has exited (it does when it
    cannot renew its Lease, e.g. while its kube-apiserver is down), as its Deployment would;
    whether it had exited."""
    old = CONTROLLERS[(ns, member)]
    if old.proc.poll() is None:
        return False
    new = CONTROLLERS[(ns, member)] = ControllerProc(ns, member, kubeconfig(member))
    wait_until(f"{member}: controller /readyz", ready(new), timeout=60)
    return True


@pytest.fixture
def mc_namespace(clusters: dict[str, Kube]) -> Iterator[str]:
    """The same namespace on all three (MultiKueue copies into the same namespace): the runtime
    and a `dispatch` LocalQueue everywhere, the step LocalQueues `cpu` and `gpu` on the workers;
    `trainweave controller` on each worker, with the worker's kubeconfig."""
    ns = f"mc-{uuid.uuid4().hex[:6]}"
    for member, kube in clusters.items():
        kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true"})
        names = {"dispatch": DISPATCH_CQ}
        if member != "manager":
            names |= {"cpu": STEPS_CQ, "gpu": STEPS_CQ}
            if (
                kube.core.list_namespace(field_selector="metadata.name=trainweave-system").items
                == []
            ):
                kube.create_namespace("trainweave-system", {})
        for lq, cq in names.items():
            kube.create(KUEUE, "localqueues", local_queue(lq, cq, ns), ns)
            wait_until(f"{member}: LocalQueue {lq} Active", active(kube, lq, ns), timeout=60)
        if member != "manager":
            CONTROLLERS[(ns, member)] = ControllerProc(ns, member, kubeconfig(member))
    for (n, _), p in CONTROLLERS.items():
        if n == ns:
            wait_until("controller /readyz", ready(p), timeout=60)
    yield ns
    for key in [k for k in CONTROLLERS if k[0] == ns]:
        CONTROLLERS.pop(key).stop(signal.SIGKILL)
    for kube in clusters.values():
        for wl in kube.list(KUEUE, "workloads", ns):
            kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
        kube.delete_namespace(ns)


WORKERS = MEMBERS[1:]
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
RJOBS = ("dataset-initializer", "model-initializer", "node", "model-exporter")  # llm-finetune


def get_tj(kube: Kube, ns: str) -> Json | None:
    return kube.get(TRAINER, "trainjobs", "ft", ns)


def placed(manager: Kube, ns: str) -> Callable[[], str | None]:
    """The worker the manager's Workload is on (``status.clusterName``), or None."""

    def where() -> str | None:
        for wl in manager.list(KUEUE, "workloads", ns):
            name = (wl.get("status") or {}).get("clusterName")
            if name:
                return str(name)
        return None

    return where


def submit(clusters: dict[str, Kube], ns: str, durations: dict[str, str]) -> str:
    """The llm-finetune example (tests/e2e/pipelines.py) created on the manager in the dispatch
    LocalQueue, its runtime on every member; the worker MultiKueue placed it on."""
    tj, rt = example(ns, durations=durations)
    tj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "dispatch"}
    for w in WORKERS:
        clusters[w].create(TRAINER, "trainingruntimes", rt, ns)
    apply(clusters["manager"], ns, tj, rt)
    return wait_until("manager Workload has a clusterName", placed(clusters["manager"], ns), 180)
