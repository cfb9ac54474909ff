"""What the benchmark reads of its host while a run goes: the API server's write counter
(``/metrics``) and CPU seconds of the engine processes, the controller and itself (``/proc``)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from pathlib import Path


def apiserver_writes(kubectl: list[str]) -> dict[str, float]:
    """kube-apiserver's own count of mutating requests (all clients) so far, by
    ``resource/subresource VERB``."""
    text = subprocess.run([*kubectl, "get", "--raw", "/metrics"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    return writes_by_resource(text)


def writes_by_resource(metrics: str) -> dict[str, float]:
    """``apiserver_request_total`` samples of a Prometheus text page, mutating verbs only,
    summed by ``resource/subresource VERB`` (over codes, scopes and API versions)."""
    out: dict[str, float] = {}
    for line in metrics.splitlines():
        verb = re.search(r'verb="(POST|PUT|PATCH|DELETE|APPLY)"', line)
        if line.startswith("apiserver_request_total{") and verb:
            resource = re.search(r'resource="([^"]*)"', line)
            sub = re.search(r'subresource="([^"]+)"', line)
            key = (resource.group(1) if resource else "") + (f"/{sub.group(1)}" if sub else "")
            key = f"{key} {verb.group(1)}"
            out[key] = out.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


# the engines' processes by their /proc comm (15 characters at most)
ENGINE_COMMS = {
    "kube-apiserver": "kube-apiserver",
    "etcd": "etcd",
    "kueue": "kueue",
    "workflow-contro": "argo workflow-controller",
    "kwok-controller": "kwok",
    "kube-controller": "kube-controller-manager",
    "kube-scheduler": "kube-scheduler",
    "argo": "argo server",
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def engines_cpu() -> dict[str, float]:
    """CPU seconds so far of each engine process of this machine, by ENGINE_COMMS."""
    out: dict[str, float] = {}
    for stat in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            name = ENGINE_COMMS.get(stat.read_text().strip())
            if name:
                out[name] = out.get(name, 0.0) + cpu_seconds(int(stat.parent.name))
    return out


def own_cpu() -> float:
    """This process's CPU seconds (the benchmark's watches and decoding)."""
    t = os.times()
    return t.user + t.system
