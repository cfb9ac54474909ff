"""The resources the fake API server serves, and its REST paths parsed. Tests only.

A ``Resource`` is an ``api.Kind`` plus what the real server does differently per kind: whether it
has a ``status`` subresource (writes to the object keep the old status, writes to ``/status``
change nothing else), whether an immediate DELETE answers the deleted object (custom resources
and pods) or a ``Status`` of Success (the rest), and whether it is a built-in kind (strategic
merge patches are refused with 415 on custom resources, as the API server does).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from trainweave.integrations.views.requests import api

TOKEN_REVIEW = api.Kind("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", False)
NAMESPACE = api.Kind("", "v1", "namespaces", "Namespace", namespaced=False)


@dataclass(frozen=True)
class Resource:
    """One served resource and the API server's behaviour for it."""

    kind: api.Kind
    status: bool = False  # has a status subresource
    builtin: bool = False  # a core or built-in kind (not a CRD)
    returns_deleted: bool = False  # an immediate DELETE answers the object, not a Status
    create_only: bool = False  # a virtual resource (TokenReview): POST answered, nothing stored

    @property
    def group_resource(self) -> str:
        """``trainjobs.trainer.kubeflow.org`` (``pods`` for the core group), as messages say."""
        k = self.kind
        return f"{k.plural}.{k.group}" if k.group else k.plural


def _crd(kind: api.Kind, status: bool) -> Resource:
    return Resource(kind, status=status, returns_deleted=True)


def _builtin(kind: api.Kind, status: bool = False, returns_deleted: bool = False) -> Resource:
    return Resource(kind, status=status, builtin=True, returns_deleted=returns_deleted)


# Status subresources as the CRDs and built-ins declare them: Argo's Workflow CRD has none (the
# workflow controller writes the whole object); Trainer's runtimes have none.
DEFAULT: tuple[Resource, ...] = (
    _crd(api.TRAINJOB, status=True),
    _crd(api.TRAINING_RUNTIME, status=False),
    _crd(api.CLUSTER_TRAINING_RUNTIME, status=False),
    _crd(api.WORKFLOW, status=False),
    _crd(api.WORKLOAD, status=True),
    _crd(api.CLUSTER_QUEUE, status=True),
    _crd(api.LOCAL_QUEUE, status=True),
    _crd(api.PROVISIONING_REQUEST, status=True),
    _builtin(api.POD, status=True, returns_deleted=True),
    _builtin(api.SERVICE, status=True),
    _builtin(api.CONFIGMAP),
    _builtin(api.PVC, status=True),
    _builtin(api.SECRET),
    _builtin(api.EVENT),
    _builtin(api.LEASE),
    _builtin(NAMESPACE, status=True),
    Resource(TOKEN_REVIEW, builtin=True, create_only=True),
)


@dataclass(frozen=True)
class Target:
    """What a request path names: a resource, and a namespace, name and subresource (each
    "" when the path has none)."""

    resource: Resource
    namespace: str = ""
    name: str = ""
    sub: str = ""


class Routes:
    """Path -> ``Target`` for a set of resources."""

    def __init__(self, resources: tuple[Resource, ...] = DEFAULT) -> None:
        self.by_path = {(r.kind.group, r.kind.version, r.kind.plural): r for r in resources}

    def add(self, resource: Resource) -> None:
        """Serve one more resource (a CRD installed)."""
        k = resource.kind
        self.by_path[(k.group, k.version, k.plural)] = resource

    def parse(self, path: str) -> Target | None:
        """The target of ``path`` (already without its query); None for a path no resource
        serves. Each segment is unquoted on its own, so an escaped ``/`` stays in the name."""
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:1] == ["api"] and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not 1 <= len(rest) <= 3:
            return None
        resource = self.by_path.get((group, version, rest[0]))
        if resource is None or (bool(namespace) and not resource.kind.namespaced):
            return None
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        return Target(resource, namespace, name, sub)
