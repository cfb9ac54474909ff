"""Least privilege, proven: what deploy/rbac.yaml's ServiceAccount cannot do (docs/security.md).

The controller runs in every e2e test with a token of that ServiceAccount (controller_proc.py),
so the tests that run it prove the RBAC is enough; these show, as the same token, with
SelfSubjectAccessReviews and with real requests, what it is refused. Then hostile TrainJobs:
none makes the controller write outside the TrainJob's namespace (that a runtime of another
namespace is not found needs only API semantics: tests/unit/test_controller_on_fake.py), and a
pod template naming a ServiceAccount the namespace lacks ends in a precise Failed condition.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .controller_proc import ControllerProc
from .kube import ARGO, E2E_NAMESPACE_LABEL, KUEUE, Kube, api_client, condition
from .pipelines import apply, example, trainjob, wait_condition, workflows
from .service_account import SA_NAMESPACE, SA_USER

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
# (verb, group, resource, subresource, namespace ("" = cluster scope or all namespaces))
Access = tuple[str, str, str, str, str]


@pytest.fixture
def sa_api(controller_kubeconfig: Path) -> Iterator[client.ApiClient]:
    """An ApiClient that is the controller: deploy/rbac.yaml's ServiceAccount token."""
    api = api_client(controller_kubeconfig)
    yield api
    api.close()  # type: ignore[no-untyped-call]


@pytest.fixture
def other_namespace(kube: Kube) -> Iterator[str]:
    """A second namespace, as another team's: nothing of the test's TrainJobs may land here."""
    name = f"other-{uuid.uuid4().hex[:6]}"
    kube.create_namespace(name, {E2E_NAMESPACE_LABEL: "true"})
    yield name
    kube.delete_namespace(name)


def allowed(api: client.ApiClient, access: Access) -> bool:
    """A SelfSubjectAccessReview: may this identity do it?"""
    verb, group, resource, sub, ns = access
    attrs = client.V1ResourceAttributes(
        verb=verb, group=group, resource=resource, subresource=sub or None, namespace=ns or None
    )
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attrs)
    )
    out: Any = client.AuthorizationV1Api(api).create_self_subject_access_review(review)
    return bool(out.status.allowed)


def refused(call: Callable[[], object]) -> int:
    """The status of a request the API server must refuse (fails the test if it succeeds)."""
    try:
        call()
    except ApiException as e:
        return int(e.status)
    raise AssertionError("the request succeeded")


def test_the_token_is_the_service_account(sa_api: client.ApiClient) -> None:
    review: Any = client.AuthenticationV1Api(sa_api).create_self_subject_review(
        client.V1SelfSubjectReview()
    )
    assert review.status.user_info.username == SA_USER


def test_access_reviews_allow_what_it_sends_and_nothing_else(
    sa_api: client.ApiClient, namespace: str
) -> None:
    ns = namespace
    needed: list[Access] = [
        ("list", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("watch", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("patch", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("patch", "trainer.kubeflow.org", "trainjobs", "status", ns),
        ("get", "trainer.kubeflow.org", "trainingruntimes", "", ns),
        ("get", "trainer.kubeflow.org", "clustertrainingruntimes", "", ""),
        ("create", "argoproj.io", "workflows", "", ns),
        ("patch", "argoproj.io", "workflows", "", ns),
        ("delete", "kueue.x-k8s.io", "workloads", "", ns),
        # --kept-position: gated Workloads created at the start, their gate lifted; the
        # ClusterQueue's opt-out read (docs/admins.md "Kept queue position")
        ("create", "kueue.x-k8s.io", "workloads", "", ns),
        ("patch", "kueue.x-k8s.io", "workloads", "", ns),
        ("get", "kueue.x-k8s.io", "localqueues", "", ns),
        ("get", "kueue.x-k8s.io", "clusterqueues", "", ""),
        ("patch", "", "pods", "", ns),
        # dryRun=All creates of each step's pod before a start (docs/security.md)
        ("create", "", "pods", "", ns),
        ("create", "", "secrets", "", ns),
        ("create", "", "configmaps", "", ns),
        # Argo's workflow-controller ConfigMap, read at start (--argo-config-map; its Role in argo)
        ("get", "", "configmaps", "", "argo"),
        ("create", "", "events", "", ns),
        ("update", "coordination.k8s.io", "leases", "", SA_NAMESPACE),
    ]
    refused_: list[Access] = [
        # Secrets: created (the MPI SSH Secret), never read, not even its own
        *[("get", "", "secrets", "", n) for n in (ns, "kube-system", SA_NAMESPACE)],
        ("list", "", "secrets", "", ""),
        ("watch", "", "secrets", "", ns),
        ("update", "", "secrets", "", ns),
        ("delete", "", "secrets", "", ns),
        # Kueue's admin objects
        *[
            (verb, "kueue.x-k8s.io", res, "", "")
            for res in ("clusterqueues", "resourceflavors", "cohorts", "admissionchecks")
            for verb in ("create", "update", "patch", "delete")
        ],
        *[(verb, "kueue.x-k8s.io", "localqueues", "", ns) for verb in ("create", "patch")],
        ("patch", "kueue.x-k8s.io", "workloads", "status", ns),
        # escalation
        *[
            ("create", "rbac.authorization.k8s.io", res, "", n)
            for res in ("rolebindings", "roles", "clusterrolebindings", "clusterroles")
            for n in (ns, "")
        ],
        ("bind", "rbac.authorization.k8s.io", "clusterroles", "", ""),
        ("escalate", "rbac.authorization.k8s.io", "clusterroles", "", ""),
        ("escalate", "rbac.authorization.k8s.io", "roles", "", ns),
        *[("impersonate", "", res, "", "") for res in ("users", "groups", "serviceaccounts")],
        ("delete", "", "pods", "", ns),
        ("create", "", "pods", "exec", ns),
        ("create", "", "serviceaccounts", "", ns),
        ("create", "", "serviceaccounts", "token", ns),
        ("create", "", "serviceaccounts", "token", SA_NAMESPACE),
        ("create", "apps", "deployments", "", ns),
        ("create", "batch", "jobs", "", ns),
        ("create", "", "namespaces", "", ""),
        ("delete", "", "namespaces", "", ""),
        ("update", "", "nodes", "", ""),
        ("create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", ""),
        # beyond what it sends on its own kinds
        ("get", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("create", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("delete", "trainer.kubeflow.org", "trainjobs", "", ns),
        ("create", "trainer.kubeflow.org", "trainingruntimes", "", ns),
        ("list", "trainer.kubeflow.org", "trainingruntimes", "", ""),
        ("delete", "argoproj.io", "workflows", "", ns),
        ("update", "argoproj.io", "workflows", "", ns),
        ("update", "", "configmaps", "", ns),
        ("list", "", "configmaps", "", ""),
        # its Lease lives in trainweave-system only
        ("get", "coordination.k8s.io", "leases", "", ns),
        ("update", "coordination.k8s.io", "leases", "", "kube-system"),
        ("delete", "coordination.k8s.io", "leases", "", SA_NAMESPACE),
    ]
    assert [a for a in needed if not allowed(sa_api, a)] == []
    assert [a for a in refused_ if allowed(sa_api, a)] == []


def test_real_requests_are_refused(kube: Kube, sa_api: client.ApiClient, namespace: str) -> None:
    ns = namespace
    core, rbac = client.CoreV1Api(sa_api), client.RbacAuthorizationV1Api(sa_api)
    custom = client.CustomObjectsApi(sa_api)
    kube.core.create_namespaced_secret(
        ns, client.V1Secret(metadata=client.V1ObjectMeta(name="creds"), string_data={"k": "v"})
    )
    mine = client.V1Secret(metadata=client.V1ObjectMeta(name="mine"), string_data={"k": "v"})
    core.create_namespaced_secret(ns, mine)  # allowed: the MPI SSH Secret is created this way
    flavor = kube.list(KUEUE, "resourceflavors")[0]["metadata"]["name"]
    cq = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": f"{ns}-stolen"},
        "spec": {"namespaceSelector": {}},
    }
    admin_binding = client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="own"),
        role_ref=client.V1RoleRef(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="admin"
        ),
        subjects=[client.RbacV1Subject(kind="User", name=SA_USER)],
    )
    token = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    statuses = {
        "get Secret it did not create": refused(lambda: core.read_namespaced_secret("creds", ns)),
        "get Secret it created": refused(lambda: core.read_namespaced_secret("mine", ns)),
        "list Secrets": refused(lambda: core.list_secret_for_all_namespaces()),
        "create ClusterQueue": refused(
            lambda: custom.create_cluster_custom_object(*KUEUE, "clusterqueues", cq)
        ),
        "patch ResourceFlavor": refused(
            lambda: custom.patch_cluster_custom_object(
                *KUEUE, "resourceflavors", flavor, {"metadata": {"labels": {"x": "y"}}}
            )
        ),
        "delete ResourceFlavor": refused(
            lambda: custom.delete_cluster_custom_object(*KUEUE, "resourceflavors", flavor)
        ),
        "create RoleBinding to admin": refused(
            lambda: rbac.create_namespaced_role_binding(ns, admin_binding)
        ),
        "mint a token of default": refused(
            lambda: core.create_namespaced_service_account_token("default", ns, token)
        ),
        "read Lease outside trainweave-system": refused(
            lambda: client.CoordinationV1Api(sa_api).list_namespaced_lease("kube-system")
        ),
    }
    assert statuses == {k: 403 for k in statuses}
    # pods: `create` is granted for the start's dryRun=All judgement (docs/security.md: RBAC has no
    # verb for dry runs); the controller sends pod creates only with dryRun, so a dry run passes
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="x")]),
    )
    core.create_namespaced_pod(ns, pod, dry_run="All")
    assert kube.pods(ns) == []
    assert kube.get(KUEUE, "clusterqueues", f"{ns}-stolen") is None
    # impersonating an admin: a client that sends Impersonate-User with every request
    imp = client.ApiClient(sa_api.configuration, "Impersonate-User", "system:admin")
    try:
        status = refused(lambda: client.CoreV1Api(imp).list_namespaced_secret("kube-system"))
    finally:
        imp.close()  # type: ignore[no-untyped-call]
    assert status == 403


def _no_children(kube: Kube, ns: str) -> list[str]:
    """Names of the objects trainweave creates that exist in ``ns``."""
    found = [f"Workflow/{w['metadata']['name']}" for w in kube.list(ARGO, "workflows", ns)]
    listed: list[tuple[str, list[Any]]] = [  # the objects read untyped, as kube.Pod says
        ("ConfigMap", kube.core.list_namespaced_config_map(ns).items),
        ("Service", kube.core.list_namespaced_service(ns).items),
        ("Secret", kube.core.list_namespaced_secret(ns).items),
        ("PVC", kube.core.list_namespaced_persistent_volume_claim(ns).items),
    ]
    for kind, items in listed:
        found += [
            f"{kind}/{o.metadata.name}"
            for o in items
            if (o.metadata.labels or {}).get("trainweave.io/trainjob")
            or any(r.kind == "TrainJob" for r in o.metadata.owner_references or [])
        ]
    return found


def test_trainjob_objects_stay_in_its_namespace(
    kube: Kube, namespace: str, other_namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """A runtime whose templates name another namespace still gets every object in its own."""
    queues()
    tj, rt = example(namespace, nodes=1)
    spec = rt["spec"]["template"]["spec"]
    rt["spec"]["template"].setdefault("metadata", {})["namespace"] = other_namespace
    for rjob in spec["replicatedJobs"]:
        rjob["template"].setdefault("metadata", {})["namespace"] = other_namespace
        rjob["template"]["spec"]["template"].setdefault("metadata", {})["namespace"] = (
            other_namespace
        )
    apply(kube, namespace, tj, rt)
    wait_condition(kube, namespace, "Complete", timeout=180)
    assert [w["metadata"]["name"] for w in workflows(kube, namespace)] == ["ft"]
    assert _no_children(kube, other_namespace) == []
    assert kube.pods(other_namespace) == []


def test_missing_service_account_fails_precisely(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc
) -> None:
    """The runtime's pods name a ServiceAccount the namespace does not have: the pod cannot be
    created (the ServiceAccount admission plugin). The start is judged first (issue 38, item 1):
    the step pods' dry runs are refused, the TrainJob is Failed with the API server's words and
    nothing is created; upstream's Job would retry the create forever (docs/security.md). The
    path through a Workflow (Argo's Error attempt, the controller's stop) is
    tests/unit/test_refused_pods.py's."""
    queues()
    tj, rt = example(namespace, nodes=1)
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        rjob["template"]["spec"]["template"]["spec"]["serviceAccountName"] = "ghost"
    apply(kube, namespace, tj, rt)
    got = wait_condition(kube, namespace, "Failed", timeout=60)
    cond = condition(got, "Failed")
    assert cond is not None and cond["reason"] == "RefusedByAPIServer", cond
    # every step's pod is refused, each named in the one condition
    for step in ("dataset-initializer", "model-initializer", "node", "model-exporter"):
        assert re.search(rf"step '{step}' \(replicatedJob '{step}'\) Pod ", cond["message"])
    assert 'serviceaccount "ghost" not found' in cond["message"], cond["message"]
    assert workflows(kube, namespace) == []
    assert kube.pods(namespace) == []
    assert trainjob(kube, namespace)["status"]["conditions"][-1]["type"] == "Failed"
