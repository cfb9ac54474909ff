"""Referential integrity of pods on the engines: what a pod references exists while it runs.

kwok never mounts a volume nor resolves a name, so a pod referencing a missing Secret would
run here and hang in ContainerCreating on a real kubelet. ``Integrity`` watches the pods of one
namespace and, for every pod once it is Running, checks that each Secret, ConfigMap, PVC and
ServiceAccount it references (volumes, projected sources, env/envFrom, imagePullSecrets,
serviceAccountName) and the Service its ``subdomain`` resolves through exist.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any, cast

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .kube import resumable_watch

Json = dict[str, Any]


def references(pod: Json) -> Iterator[tuple[str, str]]:
    """(kind, name) of every namespaced object the pod spec needs."""
    spec = pod.get("spec") or {}
    yield "ServiceAccount", spec.get("serviceAccountName") or "default"
    if spec.get("subdomain"):
        yield "Service", spec["subdomain"]
    for ref in spec.get("imagePullSecrets") or []:
        yield "Secret", ref["name"]
    for vol in spec.get("volumes") or []:
        if "secret" in vol:
            yield "Secret", vol["secret"]["secretName"]
        if "configMap" in vol:
            yield "ConfigMap", vol["configMap"]["name"]
        if "persistentVolumeClaim" in vol:
            yield "PersistentVolumeClaim", vol["persistentVolumeClaim"]["claimName"]
        for src in (vol.get("projected") or {}).get("sources") or []:
            if "secret" in src:
                yield "Secret", src["secret"]["name"]
            if "configMap" in src:
                yield "ConfigMap", src["configMap"]["name"]
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            for src in c.get("envFrom") or []:
                if "secretRef" in src and not src["secretRef"].get("optional"):
                    yield "Secret", src["secretRef"]["name"]
                if "configMapRef" in src and not src["configMapRef"].get("optional"):
                    yield "ConfigMap", src["configMapRef"]["name"]
            for env in c.get("env") or []:
                source = env.get("valueFrom") or {}
                if "secretKeyRef" in source and not source["secretKeyRef"].get("optional"):
                    yield "Secret", source["secretKeyRef"]["name"]
                if "configMapKeyRef" in source and not source["configMapKeyRef"].get("optional"):
                    yield "ConfigMap", source["configMapKeyRef"]["name"]


class Integrity:
    """Watches one namespace's pods; ``problems`` lists every missing reference seen."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.namespace = namespace
        self.checked: set[str] = set()
        self.problems: list[str] = []
        # each pod as last seen by the watch, by name; a deleted pod keeps its final state
        self.seen: dict[str, Json] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Integrity:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the current short watch (at most ~2 s), then check the pods once more."""
        self._stopped.set()
        self._thread.join(timeout=30)
        for pod in self.core.list_namespaced_pod(self.namespace).items:
            self.observe(self.core.api_client.sanitize_for_serialization(pod))

    def _run(self) -> None:
        # a checked pod is not checked twice when a 410 relists it
        error = resumable_watch(
            self.core.list_namespaced_pod,
            self.namespace,
            stopped=self._stopped,
            on_object=self._see,
        )
        if error:
            self.problems.append(f"pod watch failed: {error}")

    def _see(self, pod: Json) -> None:
        self.seen[(pod.get("metadata") or {}).get("name", "")] = pod
        self.observe(pod)

    def observe(self, pod: Json) -> None:
        """Check a pod once, when Running (not being deleted)."""
        meta = pod.get("metadata") or {}
        uid = meta.get("uid", "")
        phase = (pod.get("status") or {}).get("phase")
        if uid in self.checked or phase != "Running" or meta.get("deletionTimestamp"):
            return
        missing = [(kind, name) for kind, name in references(pod) if not self._exists(kind, name)]
        if missing and self._trainjob_going(pod):
            missing = []  # its TrainJob is deleted: the GC removes the children in any order
        self.checked.add(uid)  # after the reads: one the API server broke is checked again
        for kind, name in missing:
            self.problems.append(f"pod {meta.get('name')}: {kind} {name} does not exist")

    def _trainjob_going(self, pod: Json) -> bool:
        """The pod's TrainJob (trainweave's label, or upstream's JobSet, named as the TrainJob)
        is gone or being deleted (seen in ``make chaos``: a background deletion's GC removed
        the Service before the running pod's watch event was checked)."""
        labels = (pod.get("metadata") or {}).get("labels") or {}
        name = labels.get("trainweave.io/trainjob") or labels.get("jobset.sigs.k8s.io/jobset-name")
        if not name:
            return False
        try:
            tj = cast(
                Json,
                self.custom.get_namespaced_custom_object(
                    "trainer.kubeflow.org", "v1alpha1", self.namespace, "trainjobs", name
                ),
            )
        except ApiException as err:
            if err.status == 404:
                return True
            raise
        return bool((tj.get("metadata") or {}).get("deletionTimestamp"))

    def _exists(self, kind: str, name: str) -> bool:
        read = {
            "ServiceAccount": self.core.read_namespaced_service_account,
            "Service": self.core.read_namespaced_service,
            "Secret": self.core.read_namespaced_secret,
            "ConfigMap": self.core.read_namespaced_config_map,
            "PersistentVolumeClaim": self.core.read_namespaced_persistent_volume_claim,
        }[kind]
        try:
            read(name, self.namespace)
        except ApiException as err:
            if err.status == 404:
                return False
            raise
        return True
