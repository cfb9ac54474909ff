"""Fixtures for the e2e tier (`make e2e`: a real control plane, see docs/local-control-plane.md)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from . import durations
from .controller_proc import ControllerProc
from .integrity import Integrity
from .kube import (
    E2E_NAMESPACE_LABEL,
    KUEUE,
    Kube,
    api_client,
    condition_is,
    default_kubeconfig,
    load_manifest,
    wait_until,
)
from .real import EXAMPLE, NODE, ROOT, Json, argo_dir, workspace_volume
from .service_account import apply_rbac, mint_token, token_kubeconfig

# the upstream phase, once per run (upstream_phase.py): a fixture every e2e test may ask for
from .upstream_phase import upstream_results as upstream_results

CLUSTER_PY = Path(__file__).resolve().parents[2] / "hack" / "cluster.py"
CHECKERS: dict[str, Integrity] = {}  # namespace -> its pods' watch (the ``namespace`` fixture)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """The slowest tests and the time per file (tests/e2e/durations.py), on every run."""
    if not hasattr(config, "workerinput"):  # the xdist controller (or a run without xdist)
        durations.summary(terminalreporter, config)


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
    api.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session", autouse=True)
def upstream_off(kube_api: client.ApiClient) -> None:
    """Kubeflow Trainer + JobSet off (hack/cluster.py state) before anything runs: a run that died
    inside the upstream phase (tests/e2e/upstream_phase.py) must not leave Trainer's controller
    and Kueue's TrainJob integration acting on the next run's TrainJobs."""
    state = default_kubeconfig().parent / "cluster.json"
    if state.exists() and json.loads(state.read_text()).get("upstream"):
        subprocess.run([sys.executable, str(CLUSTER_PY), "upstream", "off"], check=True)


@pytest.fixture(scope="session")
def kube(kube_api: client.ApiClient) -> Kube:
    return Kube(kube_api)


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, labelled so Kueue's pod integration manages it.

    Deleted afterwards, not awaited (the deletion finishes while later tests run; the cluster
    goes down at the end); its Workloads are deleted first so that Kueue strips its pod
    finalizers (pods of a retriable group would otherwise hold the namespace in Terminating).

    Every pod that runs in it is checked for referential integrity (``integrity.Integrity``):
    a Secret, ConfigMap, PVC, ServiceAccount or Service it needs and that does not exist fails
    the test at teardown.
    """
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.replace("_", "-").lower())[:40].strip("-")
    name = f"{base}-{uuid.uuid4().hex[:5]}"
    kube.create_namespace(name, {E2E_NAMESPACE_LABEL: "true"})
    checker = Integrity(kube.api, name).start()
    CHECKERS[name] = checker
    yield name
    checker.stop()
    del CHECKERS[name]
    for wl in kube.list(("kueue.x-k8s.io", "v1beta2"), "workloads", name):
        kube.delete(("kueue.x-k8s.io", "v1beta2"), "workloads", wl["metadata"]["name"], name)
    kube.delete_namespace(name)
    assert checker.problems == [], f"pods reference missing objects: {checker.problems}"


@pytest.fixture
def pod_history(namespace: str) -> dict[str, Json]:
    """Each pod of the test's namespace as its watch last saw it, by name: a pod deleted since
    keeps its final state (a wait on a pod that may be gone reads this, not the API server)."""
    return CHECKERS[namespace].seen


@pytest.fixture
def queues(kube: Kube, namespace: str) -> Iterator[Callable[..., None]]:
    """Make the per-test ClusterQueues (<ns>-cpu, <ns>-gpu) and LocalQueues (cpu, gpu).

    The ClusterQueues are cluster-scoped, so they are deleted here (the namespace's deletion
    would not take them), keeping Kueue's scheduler free of earlier tests' queues.
    """
    made: list[str] = []

    def make(gpu_quota: int | str = 16) -> None:
        for obj in load_manifest("queues.yaml", NS=namespace, GPU_QUOTA=str(gpu_quota)):
            ns = obj["metadata"].get("namespace")
            plural = "clusterqueues" if obj["kind"] == "ClusterQueue" else "localqueues"
            kube.create(KUEUE, plural, obj, ns)
            if not ns:
                made.append(obj["metadata"]["name"])
        for lq in ("cpu", "gpu"):

            def active(lq: str = lq) -> bool:
                return condition_is(kube.get(KUEUE, "localqueues", lq, namespace), "Active")

            wait_until(f"LocalQueue {lq} Active", active, timeout=30)

    yield make
    for name in made:
        kube.delete(KUEUE, "clusterqueues", name)


@pytest.fixture(scope="session")
def controller_kubeconfig(
    kube_api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """deploy/rbac.yaml applied; a kubeconfig with a token of its ServiceAccount (the
    controller's identity in every e2e test)."""
    apply_rbac(kube_api)
    path = tmp_path_factory.mktemp("controller-sa") / "kubeconfig"
    return token_kubeconfig(default_kubeconfig(), mint_token(kube_api), path)


@pytest.fixture
def start_controller(
    kube: Kube, namespace: str, controller_kubeconfig: Path
) -> Iterator[Callable[[str], ControllerProc]]:
    procs: list[ControllerProc] = []

    def start(identity: str = "a") -> ControllerProc:
        p = ControllerProc(namespace, identity, controller_kubeconfig)
        procs.append(p)
        wait_until("controller /healthz", lambda: p.get("/healthz")[0] == 200, timeout=30)
        return p

    yield start
    for p in procs:
        p.stop(signal.SIGKILL)
    if procs:  # the test's Lease (trainweave-system keeps no Lease of a finished test)
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(
                procs[0].lease_name, procs[0].lease_namespace
            )
        except client.ApiException as e:
            if e.status != 404:
                raise


@pytest.fixture
def controller(start_controller: Callable[[str], ControllerProc]) -> ControllerProc:
    ctl = start_controller("a")
    wait_until("controller ready", lambda: ctl.get("/readyz")[0] == 200, timeout=60)
    return ctl


@pytest.fixture(scope="session")
def real_node(kube_api: client.ApiClient) -> str:
    """hack/node.py up (a no-op when the node is already up): the node, Ready."""
    subprocess.run([sys.executable, str(ROOT / "hack" / "node.py"), "up"], check=True)
    return NODE


@pytest.fixture
def real_queues(kube: Kube, namespace: str, real_node: str) -> Iterator[None]:
    """examples/real/queues.yaml in ``namespace`` (ClusterQueues prefixed by the namespace) and
    Argo's own executor Role for the emissary (the pinned module's quick-start manifests)."""
    made: list[str] = []
    for obj in yaml.safe_load_all((EXAMPLE / "queues.yaml").read_text()):
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "ResourceFlavor":
            kube.create(KUEUE, "resourceflavors", obj, exist_ok=True)
        elif kind == "ClusterQueue":
            meta["name"] = f"{namespace}-{meta['name']}"
            kube.create(KUEUE, "clusterqueues", obj)
            made.append(meta["name"])
        else:
            meta["namespace"] = namespace
            obj["spec"]["clusterQueue"] = f"{namespace}-{obj['spec']['clusterQueue']}"
            kube.create(KUEUE, "localqueues", obj, namespace)
    quick = argo_dir() / "manifests" / "quick-start" / "base"
    role = yaml.safe_load((quick / "executor" / "emissary" / "executor-role.yaml").read_text())
    binding = yaml.safe_load((quick / "executor-default-rolebinding.yaml").read_text())
    client.RbacAuthorizationV1Api(kube.api).create_namespaced_role(namespace, role)
    client.RbacAuthorizationV1Api(kube.api).create_namespaced_role_binding(namespace, binding)
    yield
    for name in made:
        kube.delete(KUEUE, "clusterqueues", name)


def _real_pair(namespace: str, prefix: str = "") -> tuple[Json, Json]:
    """examples/real/<prefix>trainjob.yaml and <prefix>runtime.yaml, moved to ``namespace``."""
    tj = yaml.safe_load((EXAMPLE / f"{prefix}trainjob.yaml").read_text())
    rt = yaml.safe_load((EXAMPLE / f"{prefix}runtime.yaml").read_text())
    tj["metadata"]["namespace"] = rt["metadata"]["namespace"] = namespace
    return tj, rt


@pytest.fixture
def real_example(
    kube: Kube, namespace: str, real_queues: None
) -> Iterator[Callable[..., tuple[Json, Json]]]:
    """examples/real in ``namespace``: its queues and Argo's executor Role (``real_queues``), and
    a hostPath PersistentVolume bound ahead to the TrainJob's PVC. Returns a factory of
    (TrainJob, runtime) with trainer env overrides."""
    tj, rt = _real_pair(namespace)
    claim = f"initializer-{tj['metadata']['name']}"
    pv_name = f"{namespace}-workspace"
    workspace_volume(kube, namespace, pv_name, claim)

    def make(**env: str) -> tuple[Json, Json]:
        trainer_env = tj["spec"]["trainer"].setdefault("env", [])
        trainer_env.extend({"name": k, "value": v} for k, v in env.items())
        return tj, rt

    yield make
    kube.core.delete_persistent_volume(pv_name)


@pytest.fixture
def real_mpi_example(namespace: str, real_queues: None) -> tuple[Json, Json]:
    """examples/real/mpi_trainjob.yaml and mpi_runtime.yaml in ``namespace``, on the queues of
    ``real_queues`` (no volume: the MPI example keeps nothing on disk)."""
    return _real_pair(namespace, "mpi_")
