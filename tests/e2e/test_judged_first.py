"""Judged before anything runs (issue 38, item 1), on the real engines: a TrainJob whose trainer
pod the API server refuses ends ``Failed`` within seconds with nothing created (no Workflow, no
Service, no ConfigMap), including a refusal only admission makes. The admission here is a
ValidatingAdmissionPolicy (CEL, built into kube-apiserver v1.36, no webhook server): it refuses
pods of the test's namespace that carry the trainer's step label, so the offline render cannot
see it and only the trainer pod's ``dryRun=All`` create can."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .controller_proc import ControllerProc
from .kube import ARGO, Kube, condition
from .pipelines import apply, example, wait_condition

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
MESSAGE = "trainer pods are refused in this namespace (test_judged_first)"


@pytest.fixture
def refuse_trainer_pods(kube: Kube, namespace: str) -> Iterator[str]:
    """A ValidatingAdmissionPolicy and its binding (cluster-scoped, deleted afterwards) that deny
    every pod of ``namespace`` labelled ``trainweave.io/step: node``."""
    adm = client.AdmissionregistrationV1Api(kube.api)
    name = f"judged-first-{namespace}"[:63]
    policy: Json = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": "!has(object.metadata.labels) || "
                    "!('trainweave.io/step' in object.metadata.labels) || "
                    "object.metadata.labels['trainweave.io/step'] != 'node'",
                    "message": MESSAGE,
                }
            ],
        },
    }
    binding: Json = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    adm.create_validating_admission_policy(cast(Any, policy))
    adm.create_validating_admission_policy_binding(cast(Any, binding))
    try:
        _until_enforced(kube, namespace)
        yield name
    finally:
        adm.delete_validating_admission_policy_binding(name)
        adm.delete_validating_admission_policy(name)


def _until_enforced(kube: Kube, namespace: str, timeout: float = 30) -> None:
    """The API server compiles a new policy and binding asynchronously: a dry-run pod create
    with the trainer's label is refused once they are in force."""
    pod: Json = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "labels": {"trainweave.io/step": "node"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }
    deadline = time.monotonic() + timeout
    while True:
        try:
            kube.core.create_namespaced_pod(namespace, cast(Any, pod), dry_run="All")
        except ApiException as err:
            if MESSAGE in str(err.body):
                return
            raise
        if time.monotonic() > deadline:
            raise AssertionError("the ValidatingAdmissionPolicy was not enforced in time")
        time.sleep(0.2)  # polling the API server's state, not synchronising on time


def _children(kube: Kube, namespace: str) -> list[str]:
    found = [f"Workflow/{w['metadata']['name']}" for w in kube.list(ARGO, "workflows", namespace)]
    for kind, items in (
        ("Service", kube.core.list_namespaced_service(namespace).items),
        ("ConfigMap", kube.core.list_namespaced_config_map(namespace).items),
        ("Secret", kube.core.list_namespaced_secret(namespace).items),
        (
            "PersistentVolumeClaim",
            kube.core.list_namespaced_persistent_volume_claim(namespace).items,
        ),
        ("Pod", kube.core.list_namespaced_pod(namespace).items),
    ):
        for o in items:
            meta = o.metadata or client.V1ObjectMeta()
            owned = any(r.kind == "TrainJob" for r in meta.owner_references or [])
            if owned or (meta.labels or {}).get("trainweave.io/trainjob"):
                found.append(f"{kind}/{meta.name}")
    return found


def test_a_trainer_pod_only_admission_refuses_fails_at_once_with_nothing_created(
    kube: Kube,
    namespace: str,
    queues: Any,
    controller: ControllerProc,
    refuse_trainer_pods: str,
) -> None:
    queues()
    tj, rt = example(namespace, nodes=1)
    started = time.monotonic()
    apply(kube, namespace, tj, rt)
    got = wait_condition(kube, namespace, "Failed", timeout=30)
    took = time.monotonic() - started
    cond = condition(got, "Failed")
    assert cond is not None and cond["reason"] == "RefusedByAPIServer", cond
    assert "step 'node' (replicatedJob 'node') Pod " in cond["message"], cond["message"]
    assert refuse_trainer_pods in cond["message"] and MESSAGE in cond["message"], cond["message"]
    assert "dataset-initializer" not in cond["message"]  # only the trainer pod is refused
    assert _children(kube, namespace) == []
    assert took < 15, f"Failed after {took:.1f} s"
