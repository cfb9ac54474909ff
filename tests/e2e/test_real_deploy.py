"""The controller installed as users install it: deploy/namespace.yaml, rbac.yaml and
deployment.yaml applied, its image (hack/images.py's trainweave.local/controller:dev, built like
deploy/Dockerfile) running on the real node of hack/node.py, two replicas, one Lease.

The Deployment is deploy/deployment.yaml as shipped, patched only where a user of an offline node
must patch it (``offline_patch``), plus one scoping flag for the shared e2e cluster
(``--namespace``: the test's namespace). Without it the in-cluster controller would watch every
namespace, and the other e2e tests run their own controller process per test namespace (Lease
named after that namespace, tests/e2e/controller_proc.py): a Deployment left behind by a killed
run would act on their TrainJobs too. With it, each controller acts on one namespace and holds its
own Lease; the Deployment keeps the shipped Lease, trainweave-system/trainweave-controller.
"""

from __future__ import annotations

import contextlib
import copy
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from trainweave.labels import TRAINJOB

from .kube import Kube, Pod, condition, wait_until
from .pipelines import apply, wait_condition, workflows
from .real import NODE, ROOT, Json, logs, step_pods, workspace_volume
from .service_account import DEPLOY, SA_NAMESPACE, apply_rbac

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real-node")]

IMAGE = "trainweave.local/controller:dev"
SOCK = "/run/trainweave-node/containerd.sock"
APP = "app.kubernetes.io/name=trainweave-controller"
LEASE = "trainweave-controller"  # deployment.yaml's comment and the CLI's --lease-name default


def offline_patch(deployment: Json, namespace: str) -> Json:
    """What a user of an offline node changes in deploy/deployment.yaml: the image they built
    (hack/images.py), never pulled, on the node it was imported into (its label and taint);
    and, for this shared cluster only, the one namespace to act on (module docstring)."""
    out = copy.deepcopy(deployment)
    pod = out["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    container["image"] = IMAGE
    container["imagePullPolicy"] = "Never"
    container["args"] = [*container["args"], f"--namespace={namespace}"]
    pod["nodeSelector"] = {"trainweave.io/node": "real"}
    pod["tolerations"] = [
        {
            "key": "trainweave.io/real-node",
            "operator": "Equal",
            "value": "true",
            "effect": "NoSchedule",
        }
    ]
    return out


def shipped_deployment() -> Json:
    (doc,) = [d for d in yaml.safe_load_all((DEPLOY / "deployment.yaml").read_text()) if d]
    assert doc["kind"] == "Deployment" and doc["metadata"]["namespace"] == SA_NAMESPACE
    return dict(doc)


def lease_holder(kube: Kube) -> str:
    lease: Any = client.CoordinationV1Api(kube.api).read_namespaced_lease(LEASE, SA_NAMESPACE)
    return str(lease.spec.holder_identity or "")


def controller_pods(kube: Kube) -> list[Pod]:
    return [p for p in kube.pods(SA_NAMESPACE, APP) if p.metadata.deletion_timestamp is None]


def is_ready(pod: Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def both_ready(kube: Kube) -> list[str] | None:
    pods = controller_pods(kube)
    ok = len(pods) == 2 and all(is_ready(p) for p in pods)
    return [p.metadata.name for p in pods] if ok else None


@contextlib.contextmanager
def cordoned(kube: Kube, node: str) -> Iterator[None]:
    """``kubectl cordon`` for the block; uncordoned whatever happens."""
    kube.core.patch_node(node, {"spec": {"unschedulable": True}})
    try:
        yield
    finally:
        kube.core.patch_node(node, {"spec": {"unschedulable": None}})


def proxy_get(kube: Kube, pod: str, path: str) -> str:
    """GET the pod's port 8080 through the API server's pod proxy (it dials the pod's IP)."""
    return str(
        kube.core.connect_get_namespaced_pod_proxy_with_path(f"{pod}:8080", SA_NAMESPACE, path)
    )


def delete_deployment(kube: Kube, wait: float) -> None:
    apps = client.AppsV1Api(kube.api)
    try:
        apps.delete_namespaced_deployment(
            "trainweave-controller", SA_NAMESPACE, propagation_policy="Foreground"
        )
    except ApiException as e:
        if e.status != 404:
            raise
    wait_until(
        "the controller Deployment and its pods gone",
        lambda: (
            not kube.pods(SA_NAMESPACE, APP)
            and not apps.list_namespaced_deployment(SA_NAMESPACE).items
        ),
        timeout=wait,
    )


@pytest.fixture
def deployed(kube: Kube, namespace: str, real_node: str) -> Iterator[tuple[list[str], float]]:
    """The controller image imported on the real node, deploy/ applied, both replicas Ready.
    Yields the pod names and the seconds from create to both Ready. Teardown deletes the
    Deployment and its Lease only: the namespace, ServiceAccount and RBAC are the identity every
    e2e controller process uses (tests/e2e/service_account.py)."""
    load = [sys.executable, str(ROOT / "hack" / "images.py"), "load", "--address", SOCK]
    subprocess.run([*load, "--image", "controller"], check=True, stdout=subprocess.DEVNULL)
    delete_deployment(kube, wait=90)  # a run killed before its teardown
    apply_rbac(kube.api)  # deploy/namespace.yaml + deploy/rbac.yaml
    coord = client.CoordinationV1Api(kube.api)
    try:
        coord.delete_namespaced_lease(LEASE, SA_NAMESPACE)
    except ApiException as e:
        if e.status != 404:
            raise
    t0 = time.monotonic()
    client.AppsV1Api(kube.api).create_namespaced_deployment(
        SA_NAMESPACE, cast(Any, offline_patch(shipped_deployment(), namespace))
    )
    try:
        names = wait_until("both controller replicas Ready", lambda: both_ready(kube), timeout=180)
        yield names, time.monotonic() - t0
    finally:
        for pod in kube.pods(SA_NAMESPACE, APP):
            try:
                text = logs(kube, SA_NAMESPACE, pod, "controller")[-3000:]
            except ApiException as e:  # a Pending pod has none
                text = f"(no log: {e.status} {e.reason})"
            print(f"--- {pod.metadata.name} (kubectl logs)\n{text}")
        delete_deployment(kube, wait=120)
        try:
            coord.delete_namespaced_lease(LEASE, SA_NAMESPACE)
        except ApiException as e:
            if e.status != 404:
                raise


@pytest.fixture
def second_volume(kube: Kube, namespace: str) -> Iterator[Callable[[str], None]]:
    """A hostPath PersistentVolume bound ahead to the second TrainJob's PVC (the real_example
    fixture binds one to the first's)."""
    made: list[str] = []

    def make(trainjob: str) -> None:
        name = f"{namespace}-workspace-2"
        workspace_volume(kube, namespace, name, f"initializer-{trainjob}")
        made.append(name)

    yield make
    for name in made:
        kube.core.delete_persistent_volume(name)


def trained(kube: Kube, namespace: str, name: str) -> None:
    """The TrainJob ``name`` Complete, its Workflow Succeeded, both ranks ran on the real node."""
    got = wait_condition(kube, namespace, "Complete", timeout=420, name=name)
    failed = condition(got, "Failed")
    assert failed is None or failed["status"] != "True", failed
    (wf,) = [w for w in workflows(kube, namespace) if w["metadata"]["labels"][TRAINJOB] == name]
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")
    ranks = [p for p in step_pods(kube, namespace, "node") if p.metadata.labels[TRAINJOB] == name]
    assert len(ranks) == 2 and all(p.spec.node_name == NODE for p in ranks), ranks


def test_deployed_controller_runs_trainjobs_and_fails_over(
    kube: Kube,
    namespace: str,
    real_example: Any,
    second_volume: Callable[[str], None],
    deployed: tuple[list[str], float],
) -> None:
    """Both replicas Ready (their /readyz answered through the pod proxy), one holds the Lease
    and runs examples/real's TrainJob to Complete; the leader pod deleted, the standby takes the
    Lease and a second TrainJob completes."""
    pods, ready_s = deployed
    print(f"both replicas Ready {ready_s:.1f}s after the Deployment was created: {pods}")
    for pod in controller_pods(kube):
        assert pod.spec.node_name == NODE, pod.metadata.name
        assert pod.spec.containers[0].image == IMAGE
        assert proxy_get(kube, pod.metadata.name, "readyz") == "ok"
        assert proxy_get(kube, pod.metadata.name, "healthz") == "ok"
    leader = wait_until("a replica holds the Lease", lambda: lease_holder(kube), timeout=60)
    assert leader in pods, (leader, pods)
    (standby,) = [p for p in pods if p != leader]
    leader_logs = logs(
        kube, SA_NAMESPACE, kube.core.read_namespaced_pod(leader, SA_NAMESPACE), "controller"
    )
    standby_pod = kube.core.read_namespaced_pod(standby, SA_NAMESPACE)
    assert "became leader" in leader_logs, leader_logs[-2000:]
    assert "became leader" not in logs(kube, SA_NAMESPACE, standby_pod, "controller")

    tj, rt = real_example()
    apply(kube, namespace, tj, rt)
    first = tj["metadata"]["name"]
    trained(kube, namespace, first)

    # The ReplicaSet replaces a deleted pod at once and a new candidate tries the Lease as it
    # starts, while the standby tries every retry period (2 s): the replacement wins about half
    # the time. The node is cordoned while the leader goes, so only the standby can take over.
    with cordoned(kube, NODE):
        t0 = time.monotonic()
        kube.core.delete_namespaced_pod(leader, SA_NAMESPACE)
        wait_until(f"{standby} holds the Lease", lambda: lease_holder(kube) == standby, timeout=60)
        failover_s = time.monotonic() - t0
    print(f"leader {leader} deleted; {standby} holds the Lease {failover_s:.1f}s later")
    standby_pod = kube.core.read_namespaced_pod(standby, SA_NAMESPACE)
    standby_logs = logs(kube, SA_NAMESPACE, standby_pod, "controller")
    assert "became leader" in standby_logs, standby_logs[-2000:]
    replicas = wait_until(
        "the replacement replica Ready too", lambda: both_ready(kube), timeout=120
    )
    assert leader not in replicas and standby in replicas, replicas

    second = copy.deepcopy(tj)
    second["metadata"] = {"name": f"{first}-2", "namespace": namespace}
    second_volume(second["metadata"]["name"])
    apply(kube, namespace, second, None)
    trained(kube, namespace, second["metadata"]["name"])
    assert lease_holder(kube) == standby
