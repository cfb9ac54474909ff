"""Training progress to Kubeflow Trainer's status server, as the Kubeflow SDK's
``update_trainjob_status`` sends it: ``POST $KUBEFLOW_TRAINER_SERVER_URL`` with
``{"trainerStatus": {...}}``, the projected token in ``$KUBEFLOW_TRAINER_SERVER_TOKEN`` as the
bearer, the server checked against ``$KUBEFLOW_TRAINER_SERVER_CA_CERT`` (Trainer v2.3.0
``pkg/runtime/framework/plugins/trainjobstatus``; trainweave's controller serves the same with
``--trainjob-status``). Without those variables it does nothing.

python3-minimal has ``ssl`` but not ``http.client``, so the request is written by hand. It never
raises: training goes on whether the server answers or not (one line on stdout says so).
"""

from __future__ import annotations

import os
import socket
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

import minijson

URL = "KUBEFLOW_TRAINER_SERVER_URL"
TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"


def enabled() -> bool:
    return all(os.environ.get(k) for k in (URL, TOKEN, CA_CERT))


def body(percent: int, remaining_seconds: int, metrics: dict[str, str]) -> str:
    """The UpdateTrainJobStatusRequest: progress clamped to 0..100, RFC 3339 time (UTC)."""
    status: dict[str, Any] = {
        "progressPercentage": max(0, min(100, percent)),
        "estimatedRemainingSeconds": max(0, remaining_seconds),
        "metrics": [{"name": k, "value": v} for k, v in metrics.items()],
        "lastUpdatedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return minijson.dumps({"trainerStatus": status})


def report(percent: int, remaining_seconds: int, metrics: dict[str, str]) -> bool:
    """POST one update; True when the server answered 200."""
    if not enabled():
        return False
    url = urlsplit(os.environ[URL])
    try:
        with open(os.environ[TOKEN]) as f:
            token = f.read().strip()
        ctx = ssl.create_default_context(cafile=os.environ[CA_CERT])
        data = body(percent, remaining_seconds, metrics).encode()
        head = (
            f"POST {url.path or '/'} HTTP/1.1\r\nHost: {url.netloc}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
        )
        raw = socket.create_connection((url.hostname, url.port or 443), timeout=5)
        with raw, ctx.wrap_socket(raw, server_hostname=url.hostname) as tls:
            tls.sendall(head.encode() + data)
            answer = tls.recv(4096).decode(errors="replace")
    except (OSError, ValueError) as err:
        print(f"progress: not reported ({err})", flush=True)
        return False
    line = answer.split("\r\n", 1)[0]
    if " 200 " not in f"{line} ":
        print(f"progress: not reported ({line})", flush=True)
        return False
    return True
