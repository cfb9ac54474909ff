"""The controller's identity in e2e: deploy/rbac.yaml applied, a token of its ServiceAccount
minted with the TokenRequest API, and a kubeconfig that carries it (docs/security.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SA_NAMESPACE = "trainweave-system"
SA_NAME = "trainweave-controller"
SA_USER = f"system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"


def deploy_objects() -> list[dict[str, Any]]:
    """deploy/namespace.yaml then deploy/rbac.yaml, in file order."""
    docs: list[dict[str, Any]] = []
    for name in ("namespace.yaml", "rbac.yaml"):
        docs += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    return docs


def apply_rbac(api: client.ApiClient) -> None:
    """Create the namespace, ServiceAccount, roles and bindings; replace the rules and bindings
    of a previous run (so an edited rbac.yaml takes effect on a running cluster)."""
    for obj in deploy_objects():
        try:
            _create(api, obj)
        except ApiException as e:
            if e.status != 409:
                raise
            _replace(api, obj)


def _create(api: client.ApiClient, obj: dict[str, Any]) -> None:
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    kind, ns = obj["kind"], obj["metadata"].get("namespace")
    body = cast(Any, obj)  # the client sends a dict as it is (its methods name the V1 models)
    if kind == "Namespace":
        core.create_namespace(body)
    elif kind == "ServiceAccount":
        core.create_namespaced_service_account(ns, body)
    elif kind == "ClusterRole":
        rbac.create_cluster_role(body)
    elif kind == "ClusterRoleBinding":
        rbac.create_cluster_role_binding(body)
    elif kind == "Role":
        rbac.create_namespaced_role(ns, body)
    elif kind == "RoleBinding":
        rbac.create_namespaced_role_binding(ns, body)
    else:
        raise ValueError(f"deploy/: unexpected kind {kind}")


def _replace(api: client.ApiClient, obj: dict[str, Any]) -> None:
    """Roles and bindings replaced; the Namespace and ServiceAccount kept as they are."""
    rbac = client.RbacAuthorizationV1Api(api)
    kind, ns, name = obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]
    body = cast(Any, obj)  # as in _create
    if kind == "ClusterRole":
        rbac.replace_cluster_role(name, body)
    elif kind == "ClusterRoleBinding":
        rbac.replace_cluster_role_binding(name, body)
    elif kind == "Role":
        rbac.replace_namespaced_role(name, ns, body)
    elif kind == "RoleBinding":
        rbac.replace_namespaced_role_binding(name, ns, body)


def mint_token(api: client.ApiClient, seconds: int = 7200) -> str:
    """A bound token of the controller's ServiceAccount (TokenRequest, default audiences)."""
    req = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=seconds)
    )
    out: Any = client.CoreV1Api(api).create_namespaced_service_account_token(
        SA_NAME, SA_NAMESPACE, req
    )
    return str(out.status.token)


def token_kubeconfig(admin_kubeconfig: Path, token: str, path: Path) -> Path:
    """A kubeconfig for ``token``: server and CA of the admin kubeconfig's current context."""
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    ctx_name = admin.get("current-context") or admin["contexts"][0]["name"]
    ctx = next(c["context"] for c in admin["contexts"] if c["name"] == ctx_name)
    cluster = next(c["cluster"] for c in admin["clusters"] if c["name"] == ctx["cluster"])
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "e2e", "cluster": cluster}],
        "users": [{"name": SA_NAME, "user": {"token": token}}],
        "contexts": [{"name": SA_NAME, "context": {"cluster": "e2e", "user": SA_NAME}}],
        "current-context": SA_NAME,
    }
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path
