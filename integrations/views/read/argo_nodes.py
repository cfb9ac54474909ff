"""Argo's node names and node status fields, read one way. Pure.

A trainweave Workflow names each step's task after the step and each pod's task after its slot
(``names.slot``), so a pod's node is ``<wf>.<step>.<slot>``, or ``<wf>.<step>.<slot>(<n>)`` for
attempt ``n`` under a ``Retry`` node (argo ``workflow/controller/operator.go`` names a retry
child ``<parent>(<n>)``); its ``Container`` child nodes are ``<pod node>.<container>``. Each pod
carries its node's name (annotation ``labels.ARGO_NODE_NAME``). ``status.
compressedNodes`` is base64(gzip(JSON)) (argo ``util/file/fileutil.go``: gzip or pgzip, both
gzip streams; v4.0.7 has no other codec); offloaded nodes (``offloadNodeStatusVersion``) live in
Argo's database and are unknown here. Anyone who may patch a Workflow may write any string there
(the CRD types it as a string, with no status subresource): what does not decode as that, or
decodes past ``NODES_MAX`` bytes, is unknown too, never an error.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

from trainweave import labels
from trainweave.adapters.argo.retry import EXIT_CODE_MESSAGE

Json = dict[str, Any]

_POD_NODE = re.compile(r"^(?P<wf>[^.]+)\.(?P<step>[^.]+)\.(?P<slot>[^.()]+)(?:\((?P<n>\d+)\))?$")
_MESSAGE_EXIT_CODE = re.compile(EXIT_CODE_MESSAGE.format(codes="[0-9]+"))
_EXIT_CODE = re.compile(r"-?[0-9]{1,10}")
NODES_MAX = 64 << 20  # bytes of decompressed compressedNodes read at most (a gzip bomb is unknown)


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
    """``status.nodes``, or decompressed ``compressedNodes``; None when offloaded or when
    ``compressedNodes`` is not base64(gzip(a JSON object)) within ``NODES_MAX`` bytes. Only the
    entries that are mappings are nodes. Total: any shape in, never an exception."""
    nodes = status.get("nodes")
    if nodes and isinstance(nodes, dict):
        return {k: v for k, v in nodes.items() if isinstance(k, str) and isinstance(v, dict)}
    packed = status.get("compressedNodes")
    if packed:
        decoded = _unpack(packed) if isinstance(packed, str) else None
        if not isinstance(decoded, dict):
            return None
        return {k: v for k, v in decoded.items() if isinstance(v, dict)}
    if status.get("offloadNodeStatusVersion"):
        return None
    return {}


def _unpack(packed: str) -> object:
    """base64(gzip(JSON)) decoded, at most ``NODES_MAX`` bytes of JSON; None if it is not."""
    try:
        raw = base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError):
        return None
    out = bytearray()
    while raw[:2] == b"\x1f\x8b":  # gzip members (zstd/brotli, argo >= 4.1 options: unknown)
        unzip = zlib.decompressobj(wbits=31)
        try:
            out += unzip.decompress(raw, NODES_MAX + 1 - len(out))
        except zlib.error:
            return None
        if len(out) > NODES_MAX or not unzip.eof:
            return None
        raw = unzip.unused_data
    if not out or raw.strip(b"\0"):
        return None
    try:
        return json.loads(out)
    except ValueError:
        return None


def message_code(node: Json) -> int | None:
    """The exit code a node's failure message names (argo ``inferFailedReason``:
    ``<container>: <reason> (exit code N)...``), else None."""
    match = _MESSAGE_EXIT_CODE.match(str(node.get("message") or ""))
    return int(match.group(1)) if match else None


def exit_code(node: Json) -> int | None:
    """A Pod node's exit code: ``outputs.exitCode``, else the one its failure message names."""
    outputs = node.get("outputs")
    code = outputs.get("exitCode") if isinstance(outputs, dict) else None
    if isinstance(code, int) and not isinstance(code, bool):
        return code
    if isinstance(code, str) and _EXIT_CODE.fullmatch(code.strip()):
        return int(code)
    return message_code(node)
