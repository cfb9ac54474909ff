"""Argo's node names and node status fields, read one way. Pure.

A trainweave Workflow names each step's task after the step and each pod's task after its slot
(``names.slot``), so a pod's node is ``<wf>.<step>.<slot>``, or ``<wf>.<step>.<slot>(<n>)`` for
attempt ``n`` under a ``Retry`` node (argo ``workflow/controller/operator.go`` names a retry
child ``<parent>(<n>)``); its ``Container`` child nodes are ``<pod node>.<container>``. Each pod
carries its node's name (annotation ``labels.ARGO_NODE_NAME``). ``status.
compressedNodes`` is base64(gzip(JSON)) (argo ``util/file/fileutil.go``: gzip or pgzip, both
gzip streams; v4.0.7 has no other codec); offloaded nodes (``offloadNodeStatusVersion``) live in
Argo's database and are unknown here.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from dataclasses import dataclass
from typing import Any

from trainweave import labels
from trainweave.adapters.argo.retry import EXIT_CODE_MESSAGE

Json = dict[str, Any]

_POD_NODE = re.compile(r"^(?P<wf>[^.]+)\.(?P<step>[^.]+)\.(?P<slot>[^.()]+)(?:\((?P<n>\d+)\))?$")
_MESSAGE_EXIT_CODE = re.compile(EXIT_CODE_MESSAGE.format(codes="[0-9]+"))


@dataclass(frozen=True)
class PodNode:
    """Where a pod's node sits: ``<workflow>.<step>.<slot>(<attempt>)``; ``attempt`` is None
    when the name has no ``(n)`` (a pod task without retryStrategy: its only attempt)."""

    workflow: str
    step: str
    slot: str
    attempt: int | None

    @property
    def index(self) -> int:
        """The attempt's index (0 when the name has none)."""
        return self.attempt or 0


def pod_node(name: str) -> PodNode | None:
    """The parts of a pod's Argo node name (None: not a step pod's node)."""
    match = _POD_NODE.match(name)
    if match is None:
        return None
    n = match["n"]
    return PodNode(match["wf"], match["step"], match["slot"], None if n is None else int(n))


def workflow_of(pod: Json) -> str:
    """The Workflow that made a pod (Argo's ``workflows.argoproj.io/workflow`` label)."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(labels.ARGO_WORKFLOW, ""))


def node_of_pod(pod: Json) -> str:
    """The Argo node name a pod carries ("" when it has none)."""
    return str(
        ((pod.get("metadata") or {}).get("annotations") or {}).get(labels.ARGO_NODE_NAME, "")
    )


def decode_nodes(status: Json) -> dict[str, Json] | None:
    """``status.nodes``, or decompressed ``compressedNodes``; None when offloaded."""
    nodes = status.get("nodes")
    if nodes:
        return dict(nodes)
    packed = status.get("compressedNodes")
    if packed:
        raw = base64.b64decode(packed)
        if raw[:2] != b"\x1f\x8b":  # zstd/brotli (argo >= 4.1 option): not supported
            return None
        decoded: dict[str, Json] = json.loads(gzip.decompress(raw))
        return decoded
    if status.get("offloadNodeStatusVersion"):
        return None
    return {}


def message_code(node: Json) -> int | None:
    """The exit code a node's failure message names (argo ``inferFailedReason``:
    ``<container>: <reason> (exit code N)...``), else None."""
    match = _MESSAGE_EXIT_CODE.match(str(node.get("message") or ""))
    return int(match.group(1)) if match else None


def exit_code(node: Json) -> int | None:
    """A Pod node's exit code: ``outputs.exitCode``, else the one its failure message names."""
    code = (node.get("outputs") or {}).get("exitCode")
    if code not in (None, ""):
        return int(code)
    return message_code(node)
