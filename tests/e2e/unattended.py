"""Helpers of tests/e2e/test_unattended.py: a tenant with a ServiceAccount of its own namespace,
the hostile Workflows it writes, and a controller process whose clocks run skewed under Debian's
``faketime`` (installed here when missing: ``apt-get install -y faketime``, as root)."""

from __future__ import annotations

import base64
import gzip
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, cast

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from .controller_proc import free_port
from .kube import ARGO, Kube, default_kubeconfig
from .service_account import SA_NAMESPACE, token_kubeconfig

Json = dict[str, Any]
TENANT_SA = "tenant"
# no Argo controller here has this instance ID: Argo leaves these Workflows and their status alone
FOREIGN_INSTANCE = {"workflows.argoproj.io/controller-instanceid": "a-tenants-own"}


def faketime() -> str:
    """The ``faketime`` binary (Debian's package ``faketime``), installed when missing."""
    found = shutil.which("faketime")
    if found is None:
        subprocess.run(["apt-get", "install", "-y", "faketime"], check=False)
        found = shutil.which("faketime")
    if found is None:
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", "faketime"], check=True)
        found = shutil.which("faketime")
    assert found is not None, "faketime not installed (apt-get install -y faketime)"
    return found


def insecure_kubeconfig(kubeconfig: Path, path: Path) -> Path:
    """``kubeconfig`` without TLS verification: a process an hour behind sees the API server's
    certificate (made at cluster-up, ``hack/common.py``: valid from then) as not yet valid. The
    bearer token is still checked, by the API server's clock."""
    doc = yaml.safe_load(kubeconfig.read_text())
    for entry in doc["clusters"]:
        entry["cluster"].pop("certificate-authority-data", None)
        entry["cluster"].pop("certificate-authority", None)
        entry["cluster"]["insecure-skip-tls-verify"] = True
    path.write_text(yaml.safe_dump(doc))
    path.chmod(0o600)
    return path


class SkewedController:
    """A `trainweave controller` process as ``controller_proc.ControllerProc`` starts it, run
    under ``faketime -f OFFSET`` (its wall clock shifted by OFFSET, e.g. ``-1h``)."""

    def __init__(self, namespace: str, identity: str, kubeconfig: Path, offset: str) -> None:
        self.port = free_port()
        self.identity = identity
        self.lease_namespace, self.lease_name = SA_NAMESPACE, namespace
        tmp = Path(os.environ.get("TMPDIR", "/tmp"))
        self.log = tmp / f"tw-ctl-{namespace}-{identity}.log"
        cmd = [
            faketime(), "-f", offset,
            sys.executable, "-m", "trainweave.cli", "controller",
            "--kubeconfig", str(kubeconfig), "--namespace", namespace,
            "--lease-namespace", self.lease_namespace, "--lease-name", self.lease_name,
            "--identity", identity,
            "--bind", f"127.0.0.1:{self.port}", "--log-level", "DEBUG",
        ]  # fmt: skip
        # the wall clock skewed, the monotonic one left alone: what a host whose time is off
        # looks like (libfaketime's faked monotonic clock also hangs Python's timed waits when
        # the offset is negative)
        env = {**os.environ, "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
        self.proc = subprocess.Popen(
            cmd, stdout=self.log.open("a"), stderr=subprocess.STDOUT, env=env
        )

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except OSError:
            return 0, ""

    def stop(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(20)


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of metric ``name`` in a /metrics text: (labels, value)."""
    out = []
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        labels: dict[str, str] = {}
        if "{" in head:
            for pair in head[head.index("{") + 1 : head.rindex("}")].split(","):
                if "=" in pair:
                    key, _, val = pair.partition("=")
                    labels[key.strip()] = val.strip().strip('"')
        out.append((labels, float(value)))
    return out


def writes(text: str) -> float:
    """The API writes a controller made (``trainweave_api_requests_total``), Leases aside."""
    return sum(
        v
        for lbl, v in samples(text, "trainweave_api_requests_total")
        if lbl.get("verb") in ("post", "put", "patch", "delete") and lbl.get("resource") != "leases"
    )


def lease_gets(text: str) -> float:
    """How often a controller read its Lease (one a campaign attempt)."""
    return sum(
        v
        for lbl, v in samples(text, "trainweave_api_requests_total")
        if lbl.get("verb") == "get" and lbl.get("resource") == "leases"
    )


def lease_holder(kube: Kube, namespace: str, name: str) -> str:
    lease: Any = client.CoordinationV1Api(kube.api).read_namespaced_lease(name, namespace)
    return str(lease.spec.holder_identity or "")


def tenant_api(kube: Kube, namespace: str, path: Path) -> client.CustomObjectsApi:
    """A ServiceAccount of ``namespace`` that may create, patch and update Workflows there (as a
    team may in its own namespace), and a client that acts as it."""
    core, rbac = client.CoreV1Api(kube.api), client.RbacAuthorizationV1Api(kube.api)
    meta = {"name": TENANT_SA, "namespace": namespace}
    # the client sends a dict as it is (its methods name the V1 models): cast as service_account.py
    core.create_namespaced_service_account(namespace, cast(Any, {"metadata": meta}))
    rule = {"apiGroups": ["argoproj.io"], "resources": ["workflows"],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}  # fmt: skip
    rbac.create_namespaced_role(namespace, cast(Any, {"metadata": meta, "rules": [rule]}))
    binding: Any = {
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": TENANT_SA},
        "subjects": [{"kind": "ServiceAccount", "name": TENANT_SA, "namespace": namespace}],
    }
    rbac.create_namespaced_role_binding(namespace, binding)
    req = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=[]))
    out: Any = core.create_namespaced_service_account_token(TENANT_SA, namespace, req)
    cfg = token_kubeconfig(default_kubeconfig(), str(out.status.token), path)
    from .kube import api_client

    return client.CustomObjectsApi(api_client(cfg))


def hostile_workflow(namespace: str, name: str, trainjob: str, spec: Json) -> Json:
    """A Workflow labelled as ``trainjob``'s, left alone by Argo (``FOREIGN_INSTANCE``)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"trainweave.io/trainjob": trainjob, **FOREIGN_INSTANCE},
        },
        "spec": spec,
    }


def _gz(raw: bytes) -> str:
    return base64.b64encode(gzip.compress(raw)).decode()


# spec shapes Argo's CRD admits that no trainweave Workflow has
SPECS: list[Json] = [
    {"entrypoint": "nowhere", "templates": [{"name": "a", "suspend": {}}]},
    {"entrypoint": "a", "templates": [{"name": "a", "dag": {"tasks": [{"name": "t"}]}}]},
    {"entrypoint": "a", "templates": [
        {"name": "a", "dag": {"tasks": [{"name": "s", "template": "b"}, {"name": "s", "template": "a"}]}},
        {"name": "b", "metadata": {"labels": {"trainweave.io/step": "s",
                                              "kueue.x-k8s.io/pod-group-name": "ft-node-a0"}},
         "dag": {"tasks": [{"name": "p", "template": "b",
                            "arguments": {"parameters": [{"name": "replica"}]}}]}},
    ]},
]  # fmt: skip
# status patches a tenant may write (the full CRD has no status subresource)
STATUSES: list[Json] = [
    {"phase": "Running", "compressedNodes": "%%% not base64 %%%"},
    {"phase": "Failed", "compressedNodes": base64.b64encode(b"\x1f\x8b not gzip").decode()},
    {"phase": "Running", "compressedNodes": _gz(b"not json")},
    {"phase": "Running", "compressedNodes": _gz(b"[1, 2, 3]")},
    {"phase": "Succeeded", "nodes": {"x": {"id": "x", "name": "x.s.p(0)", "type": "Pod"}}},
    {"phase": "Error", "nodes": {"y": {"id": "y", "outputs": {"exitCode": "not a number"}}}},
]


def write_hostile(api: client.CustomObjectsApi, namespace: str, trainjob: str, rounds: int) -> int:
    """Create the hostile Workflows labelled as ``trainjob``'s and patch each status ``rounds``
    times; the writes the API server accepted (a refusal by the CRD's schema is the CRD doing
    its job)."""
    accepted = 0
    for i, spec in enumerate(SPECS):
        name = f"hostile-{trainjob}-{i}"
        try:
            api.create_namespaced_custom_object(
                *ARGO, namespace, "workflows", hostile_workflow(namespace, name, trainjob, spec)
            )
            accepted += 1
        except ApiException as err:
            if err.status not in (400, 422):
                raise
            continue
        for r in range(rounds):
            status = STATUSES[(i + r) % len(STATUSES)]
            try:
                api.patch_namespaced_custom_object(
                    *ARGO, namespace, "workflows", name, {"status": status}
                )
                accepted += 1
            except ApiException as err:
                if err.status not in (400, 422):
                    raise
    return accepted
