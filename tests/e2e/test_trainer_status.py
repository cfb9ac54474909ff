"""Trainer's TrainJob status server in the trainweave controller, on the engines (issue 23 item 1).

The controller runs with ``--trainjob-status`` (its HTTPS endpoint on loopback). The trainer
pod Argo creates carries what Trainer v2.3.0's TrainJobStatus plugin gives it: the
``KUBEFLOW_TRAINER_SERVER_*`` env, the projected token volume with the TrainJob's audience and
the ``<name>-tls-config`` CA ConfigMap, which exists. Then, as the kubelet would for that
volume, a token of the pod's ServiceAccount bound to the pod is requested (TokenRequest) for the
audience the pod spec names, and the Kubeflow SDK's own ``update_trainjob_status`` (the CA from
the ConfigMap) reports progress and a loss metric: ``status.trainerStatus`` moves, and the SDK's
TrainJob model reads it back. Refused, with upstream's codes, and the status unchanged: no
token, a token for another TrainJob, an expired token (the same claims re-signed by the local
control plane's service-account key, ``exp`` an hour ago: TokenRequest will not issue one under
10 minutes), a token whose bound Secret is gone, a body over 64 KiB (413), a progress the CRD
refuses (422, the API server's message).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from tests.oracle.harness import sdk_python

from .controller_proc import ControllerProc, status_server_controller
from .kube import Kube, default_kubeconfig, wait_until
from .pipelines import TRAINER, apply, example, trainjob

pytestmark = pytest.mark.e2e
Json = dict[str, Any]
SDK_SCRIPT = Path(__file__).parents[1] / "oracle" / "sdk_status.py"
# the local control plane's service-account signing key (hack/control_plane.py, kwokctl's pki)
SA_KEY = default_kubeconfig().parent / "kwok/clusters/trainweave-e2e/pki/admin.key"


def audience(ns: str, name: str) -> str:
    return f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{name}/status"


@pytest.fixture
def status_controller(
    kube: Kube, namespace: str, controller_kubeconfig: Path
) -> Iterator[tuple[ControllerProc, int]]:
    with status_server_controller(
        kube, namespace, controller_kubeconfig, "127.0.0.1", "127.0.0.1"
    ) as out:
        yield out


def token(kube: Kube, ns: str, sa: str, aud: str, bound: Json | None = None) -> str:
    spec: Json = {"audiences": [aud], "expirationSeconds": 3600}
    if bound:
        spec["boundObjectRef"] = bound
    out: Any = client.CoreV1Api(kube.api).create_namespaced_service_account_token(
        sa,
        ns,
        cast(Any, {"kind": "TokenRequest", "spec": spec}),  # a dict is sent as it is
    )
    return str(out.status.token)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def expired(good: str) -> str:
    """``good``'s claims, ``exp`` an hour ago, signed again (RS256) with the cluster's key."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding, rsa

    header, payload, _ = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    now = int(time.time())
    claims.update(iat=now - 7200, nbf=now - 7200, exp=now - 3600)
    assert SA_KEY.exists(), f"{SA_KEY}: the local control plane's service-account signing key"
    key = serialization.load_pem_private_key(SA_KEY.read_bytes(), None)
    assert isinstance(key, rsa.RSAPrivateKey)
    signing_input = f"{header}.{_b64(json.dumps(claims).encode())}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


class Endpoint:
    """POSTs to the controller's status server, verifying it with the CA the ConfigMap holds."""

    def __init__(self, port: int, ca_pem: str) -> None:
        self.port, self.ctx = port, ssl.create_default_context(cadata=ca_pem)

    def post(
        self, path: str, body: bytes, bearer: str | None, length: int | None = None
    ) -> tuple[int, Json]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=30)
        headers = {"Content-Type": "application/json"}
        if bearer is not None:
            headers["Authorization"] = f"Bearer {bearer}"
        if length is None:
            conn.request("POST", path, body=body, headers=headers)
        else:  # refused on its Content-Length, before the body is read
            conn.putrequest("POST", path)
            for k, v in {**headers, "Content-Length": str(length)}.items():
                conn.putheader(k, v)
            conn.endheaders()
        resp = conn.getresponse()
        doc = json.loads(resp.read())
        conn.close()
        return resp.status, doc


def _trainer_pod(kube: Kube, ns: str) -> Any:
    def running() -> Any:
        pods = [p for p in kube.pods(ns, "trainweave.io/step=node") if p.status.phase == "Running"]
        return pods[0] if pods else None

    return wait_until("trainer pod running", running, timeout=420)


def _sdk(args: list[str], env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(sdk_python()), str(SDK_SCRIPT), *args],
        input=stdin, capture_output=True, text=True, env={**os.environ, **env}, timeout=120,
    )  # fmt: skip


def test_trainer_status(
    kube: Kube,
    namespace: str,
    queues: Any,
    status_controller: tuple[ControllerProc, int],
    tmp_path: Path,
) -> None:
    _, port = status_controller
    queues()
    ns = namespace
    tj, rt = example(ns, durations={"node": "600s"}, nodes=1)
    apply(kube, ns, tj, rt)
    other, _ = example(ns, "ft2", suspend=True)
    apply(kube, ns, other, None)

    # what the plugin gives the trainer pod, as Trainer's does
    pod = _trainer_pod(kube, ns)
    (container,) = [c for c in pod.spec.containers if c.name != "wait"]  # Argo's own sidecar
    env = {e.name: e.value for e in container.env or []}
    url = f"https://127.0.0.1:{port}/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/ft/status"
    assert env["KUBEFLOW_TRAINER_SERVER_URL"] == url
    assert env["KUBEFLOW_TRAINER_SERVER_CA_CERT"] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    assert env["KUBEFLOW_TRAINER_SERVER_TOKEN"] == "/var/run/secrets/kubeflow/trainer/token"
    mounts = {m.name: (m.mount_path, m.read_only) for m in container.volume_mounts}
    assert mounts["kubeflow-trainer-token"] == ("/var/run/secrets/kubeflow/trainer", True)
    (vol,) = [v for v in pod.spec.volumes if v.name == "kubeflow-trainer-token"]
    sa_token, cm = (
        vol.projected.sources[0].service_account_token,
        vol.projected.sources[1].config_map,
    )
    assert (sa_token.audience, sa_token.expiration_seconds) == (audience(ns, "ft"), 3600)
    assert cm.name == "ft-tls-config"
    ca_map: Any = client.CoreV1Api(kube.api).read_namespaced_config_map("ft-tls-config", ns)
    ca_pem = str(ca_map.data["ca.crt"])
    endpoint = Endpoint(port, ca_pem)
    shown = [  # printed at the end (pytest -s): docs/where-is-my-job.md shows it
        json.dumps({k: v for k, v in env.items() if k.startswith("KUBEFLOW_TRAINER_SERVER")}),
        json.dumps(kube.api.sanitize_for_serialization(vol)),  # type: ignore[no-untyped-call]
    ]

    # the kubelet's token for that volume: the pod's ServiceAccount, bound to the pod
    sa = pod.spec.service_account_name or "default"
    bound = {"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name, "uid": pod.metadata.uid}
    good = token(kube, ns, sa, sa_token.audience, bound)
    files = {"token": good, "ca.crt": ca_pem}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    sdk_env = {
        "KUBEFLOW_TRAINER_SERVER_URL": url,
        "KUBEFLOW_TRAINER_SERVER_CA_CERT": str(tmp_path / "ca.crt"),
        "KUBEFLOW_TRAINER_SERVER_TOKEN": str(tmp_path / "token"),
    }
    sent = _sdk(["post", "25", "900", "loss=0.6931", "eval_accuracy=0.5"], sdk_env)
    assert sent.returncode == 0, sent.stderr

    def moved(pct: int) -> Json | None:
        ts = (trainjob(kube, ns).get("status") or {}).get("trainerStatus") or {}
        return ts if ts.get("progressPercentage") == pct else None

    first = wait_until("trainerStatus 25%", lambda: moved(25), timeout=30)
    assert first["estimatedRemainingSeconds"] == 900
    assert first["metrics"] == [
        {"name": "loss", "value": "0.6931"},
        {"name": "eval_accuracy", "value": "0.5"},
    ]
    read = _sdk(["read"], {}, json.dumps(trainjob(kube, ns)))
    assert read.returncode == 0, read.stderr
    shown += [json.dumps(first), read.stdout]
    assert json.loads(read.stdout)["progressPercentage"] == 25

    # a second update (upstream's apply as field manager trainer-status: omitted fields go)
    body = {"trainerStatus": {"progressPercentage": 60, "metrics": [{"name": "loss", "value": "0.41"}],
                              "lastUpdatedTime": "2026-11-25T22:30:00Z"}}  # fmt: skip
    assert endpoint.post(url[url.index("/apis") :], json.dumps(body).encode(), good) == (200, body)
    second = wait_until("trainerStatus 60%", lambda: moved(60), timeout=30)
    assert second == body["trainerStatus"]
    timeline = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", ns, "--timeline",
         "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert timeline.returncode == 0, timeline.stderr
    assert "trainer progress: 60%" in timeline.stdout.splitlines()[0], timeline.stdout
    shown.append(timeline.stdout)

    # refusals: upstream's codes, nothing written
    path = url[url.index("/apis") :]
    forbidden = {
        "metadata": {},
        "status": "Failure",
        "message": "Forbidden",
        "reason": "Forbidden",
        "code": 403,
    }
    update = json.dumps(
        {"trainerStatus": {"progressPercentage": 99, "lastUpdatedTime": "2026-11-25T23:00:00Z"}}
    ).encode()
    for_other = token(kube, ns, sa, audience(ns, "ft2"), bound)
    secret: Any = client.CoreV1Api(kube.api).create_namespaced_secret(
        ns, client.V1Secret(metadata=client.V1ObjectMeta(name="short-lived"))
    )
    revoked = token(kube, ns, sa, audience(ns, "ft"),
                    {"apiVersion": "v1", "kind": "Secret", "name": "short-lived", "uid": secret.metadata.uid})  # fmt: skip
    assert endpoint.post(path, update, revoked)[0] == 200  # good while its Secret exists
    assert wait_until("trainerStatus 99%", lambda: moved(99), timeout=30)
    client.CoreV1Api(kube.api).delete_namespaced_secret("short-lived", ns)

    def refused_once_gone() -> bool:
        return endpoint.post(path, update, revoked) == (403, forbidden)

    wait_until("token of a deleted Secret refused", refused_once_gone, timeout=30)
    cases = {
        "no token": (None, update, None),
        "another TrainJob's token": (for_other, update, None),
        "an expired token": (expired(good), update, None),
        "a token of the bound Secret deleted": (revoked, update, None),
    }
    for what, (bearer, data, length) in cases.items():
        assert endpoint.post(path, data, bearer, length) == (403, forbidden), what
    shown.append(json.dumps(forbidden))
    too_large = {"metadata": {}, "status": "Failure", "message": "Payload too large",
                 "reason": "RequestEntityTooLarge", "code": 413}  # fmt: skip
    assert endpoint.post(path, b"", good, length=65537) == (413, too_large)
    code, doc = endpoint.post(
        path,
        json.dumps(
            {
                "trainerStatus": {
                    "progressPercentage": 101,
                    "lastUpdatedTime": "2026-11-25T23:00:00Z",
                }
            }
        ).encode(),
        good,
    )
    assert (code, doc["reason"], doc["code"]) == (422, "Invalid", 422), doc
    assert "should be less than or equal to 100" in doc["message"], doc
    shown.append(json.dumps(doc))
    code, doc = endpoint.post(
        path, json.dumps({"trainerStatus": {"progressPercentage": 5}}).encode(), good
    )
    # upstream's apply sends lastUpdatedTime: null; the API server refuses the null by its type
    assert code == 422 and "trainerStatus.lastUpdatedTime: Invalid value" in doc["message"], doc
    # the other TrainJob's token is good for its own TrainJob only
    other_path = path.replace("/trainjobs/ft/", "/trainjobs/ft2/")
    assert endpoint.post(other_path, update, for_other)[0] == 200
    assert (trainjob(kube, ns, "ft2").get("status") or {})["trainerStatus"][
        "progressPercentage"
    ] == 99
    assert moved(99) is not None  # ft unchanged by every refusal
    print("\n".join(shown))
    assert kube.get(TRAINER, "trainjobs", "ft", ns) is not None
