"""Kubernetes API requests as values (lightkube's ``prepare_request`` half). Pure.

Every call the controller makes is built here as a ``Request`` and sent by one
``Send`` function (``kube.KubeClient.send`` on a cluster, a recording fake in
tests), so requests can be counted, logged and asserted on in one place.
Paths follow the Kubernetes REST layout (``/api/v1``, ``/apis/<group>/<version>``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from trainweave.k8s_names import DNS1123_SUBDOMAIN_FMT

Json = dict[str, Any]
# metadata.name of a custom object: an RFC 1123 subdomain (apimachinery NameIsDNSSubdomain)
_OBJECT_NAME = re.compile(DNS1123_SUBDOMAIN_FMT)
MERGE_PATCH = "application/merge-patch+json"
WATCH_TIMEOUT = 300  # seconds: the server closes a watch after this (timeoutSeconds)
JSON = "application/json"


def valid_name(name: str) -> bool:
    """Whether ``name`` can name a custom object (an RFC 1123 subdomain, at most 253
    characters). A reference that cannot is not looked up: ``a/../../b`` would be a path to
    another namespace once the client removes dot segments."""
    return len(name) <= 253 and _OBJECT_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class Kind:
    """One API resource: group, version, plural, scope."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``group/version`` (``v1`` for the core group)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "", sub: str = "") -> str:
        """The REST path of the collection, an object or a subresource."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name:
            base += f"/{quote(name, safe='')}"
        if sub:
            base += f"/{sub}"
        return base


TRAINJOB = Kind("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
TRAINING_RUNTIME = Kind("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime")
CLUSTER_TRAINING_RUNTIME = Kind(
    "trainer.kubeflow.org",
    "v1alpha1",
    "clustertrainingruntimes",
    "ClusterTrainingRuntime",
    namespaced=False,
)
WORKFLOW = Kind("argoproj.io", "v1alpha1", "workflows", "Workflow")
WORKLOAD = Kind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
CLUSTER_QUEUE = Kind("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False)
LOCAL_QUEUE = Kind("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
POD = Kind("", "v1", "pods", "Pod")
SERVICE = Kind("", "v1", "services", "Service")
CONFIGMAP = Kind("", "v1", "configmaps", "ConfigMap")
PVC = Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
SECRET = Kind("", "v1", "secrets", "Secret")
EVENT = Kind("", "v1", "events", "Event")
LEASE = Kind("coordination.k8s.io", "v1", "leases", "Lease")
# read by `trainweave status` only, when a step waits for capacity (cluster-autoscaler apis
# config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml, the version Kueue v0.19.2 pins)
PROVISIONING_REQUEST = Kind(
    "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest"
)
BY_KIND = {
    k.kind: k
    for k in (
        TRAINJOB,
        TRAINING_RUNTIME,
        CLUSTER_TRAINING_RUNTIME,
        WORKFLOW,
        WORKLOAD,
        CLUSTER_QUEUE,
        LOCAL_QUEUE,
        POD,
        SERVICE,
        CONFIGMAP,
        PVC,
        SECRET,
        EVENT,
        LEASE,
    )
}


@dataclass(frozen=True)
class Request:
    """One HTTP request to the API server. ``kind``: the resource it is about, set by every
    builder below (the controller's write-through finds the cache of what a write returns by
    it); None only for a request built by hand on a path no ``Kind`` names (a TokenReview)."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    body: Json | None = None
    content_type: str = JSON
    kind: Kind | None = None

    @property
    def dry_run(self) -> bool:
        """A ``dryRun=All`` request: judged by the API server, nothing stored."""
        return ("dryRun", "All") in self.query

    @property
    def is_write(self) -> bool:
        """Anything but GET (watches are GETs) that is not a dry run (which writes nothing)."""
        return self.method != "GET" and not self.dry_run

    @property
    def url_path(self) -> str:
        """Path plus query string."""
        return self.path + ("?" + urlencode(self.query) if self.query else "")


class ApiError(Exception):
    """A non-2xx answer (or a transport failure: status 0)."""

    def __init__(self, status: int, reason: str, body: Json | None = None) -> None:
        self.status = status
        self.reason = reason
        self.body = body or {}
        message = self.body.get("message") or reason
        # a transport failure has no HTTP status: "ConnectionRefusedError: ...", not "0 ..."
        super().__init__(f"{status} {reason}: {message}" if status else f"{reason}: {message}")

    @property
    def not_found(self) -> bool:
        """404."""
        return self.status == 404

    @property
    def conflict(self) -> bool:
        """409: AlreadyExists or a resourceVersion conflict."""
        return self.status == 409

    @property
    def gone(self) -> bool:
        """410: the watch's resourceVersion is too old."""
        return self.status == 410


Send = Callable[[Request], Json]


def get(kind: Kind, namespace: str, name: str) -> Request:
    """GET one object."""
    return Request("GET", kind.path(namespace, name), kind=kind)


def list_(kind: Kind, namespace: str = "", selector: str = "", **params: str) -> Request:
    """LIST a collection (all namespaces when ``namespace`` is empty)."""
    query = [("labelSelector", selector)] if selector else []
    query += sorted(params.items())
    return Request("GET", kind.path(namespace), tuple(query), kind=kind)


def watch(kind: Kind, namespace: str, selector: str, resource_version: str) -> Request:
    """WATCH from ``resource_version`` with bookmarks; the server closes it in ~5 min."""
    query = [
        ("watch", "true"),
        ("allowWatchBookmarks", "true"),
        ("resourceVersion", resource_version),
        ("timeoutSeconds", str(WATCH_TIMEOUT)),
    ]
    if selector:
        query.insert(0, ("labelSelector", selector))
    return Request("GET", kind.path(namespace), tuple(query), kind=kind)


def create(kind: Kind, namespace: str, body: Json) -> Request:
    """POST a new object."""
    return Request("POST", kind.path(namespace), body=body, kind=kind)


def update(kind: Kind, namespace: str, name: str, body: Json) -> Request:
    """PUT (optimistic concurrency through ``metadata.resourceVersion``)."""
    return Request("PUT", kind.path(namespace, name), body=body, kind=kind)


def merge_patch(kind: Kind, namespace: str, name: str, patch: Json, sub: str = "") -> Request:
    """A JSON merge patch (RFC 7386) of an object or its ``status``."""
    path = kind.path(namespace, name, sub)
    return Request("PATCH", path, body=patch, content_type=MERGE_PATCH, kind=kind)


def delete(kind: Kind, namespace: str, name: str, uid: str = "") -> Request:
    """DELETE, in the background; with ``uid`` only that incarnation."""
    body: Json = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
    if uid:
        body["preconditions"] = {"uid": uid}
    return Request("DELETE", kind.path(namespace, name), body=body, kind=kind)
