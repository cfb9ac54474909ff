"""Hypothesis strategies for hostile cluster objects: every kind the controller watches or reads,
in any shape the API server admits for that kind (tests only).

What "admits" means per kind:

- Workflow: Argo's CRDs. The minimal CRD (Argo's quick-start and many installs) types ``spec``
  and ``status`` as ``type: object`` with ``x-kubernetes-preserve-unknown-fields``: any JSON
  object; the full CRD types them but has no status subresource, so anyone who may patch a
  Workflow writes its status, ``compressedNodes`` being any string. So ``spec`` and ``status``
  get any structural edit (``mutations.edit``: any JSON type anywhere) and ``compressedNodes``
  any string (not base64, base64 of no gzip, gzip of no JSON, of a JSON list, of a map of
  scalars);
- Pod, Workload, TrainJob, the runtime kinds: typed by their schemas (core/v1, Kueue's and
  Trainer's CRDs): every field keeps its JSON type, so the edits are the typed ones
  (``typed_edit``: a value of the same type, an optional key deleted, a list emptied or an item
  repeated, a condition or gate added with typed fields);
- ``metadata`` of every kind is ObjectMeta, which the API server checks for every kind: labels
  and annotations stay string maps (any strings).
"""

from __future__ import annotations

import base64
import copy
import gzip
import json
from typing import Any

from hypothesis import strategies as st

from tests.mutations import _SAME_TYPE, _STRINGS, Loc, _at, _parent, _set, edit, locations

Json = dict[str, Any]

_GZIP = gzip.compress
COMPRESSED_NODES = st.one_of(
    _STRINGS,
    st.sampled_from(
        [
            "%%% not base64 %%%",
            "YQ",  # base64 without its padding
            base64.b64encode(b"\x1f\x8bnot gzip").decode(),
            base64.b64encode(b"plain text").decode(),
            base64.b64encode(_GZIP(b"not json")).decode(),
            base64.b64encode(_GZIP(b"[1, 2]")).decode(),
            base64.b64encode(_GZIP(b'{"a": 1, "b": "x", "c": null}')).decode(),
            base64.b64encode(_GZIP(b'{"n": {"name": 5, "type": [], "phase": {}}}')).decode(),
            base64.b64encode(_GZIP(b"{}") + b"trailing").decode(),
            base64.b64encode(_GZIP(b"{}")[:-3]).decode(),  # cut short
        ]
    ),
    st.builds(
        lambda d: base64.b64encode(_GZIP(json.dumps(d).encode())).decode(),
        st.dictionaries(st.text(max_size=8), st.one_of(st.none(), st.integers(), st.text())),
    ),
)
# the annotations the controller writes on its own objects and reads back as JSON or numbers
OUR_ANNOTATIONS = (
    "trainweave.io/backoff-limits",
    "trainweave.io/disruptions",
    "trainweave.io/max-restarts",
    "trainweave.io/stopped-for",
    "trainweave.io/quota",
    "trainweave.io/attempts",
    "trainweave.io/kept-after",
    "trainweave.io/kept-for-seconds",
)
# values of the right JSON shape with the wrong insides, per annotation
SHAPED: dict[str, list[str]] = {
    "trainweave.io/backoff-limits": [
        '{"node": 3}',
        '{"node": {"0": "x"}}',
        '{"trainer": {"node": {"backoffLimit": "x"}}}',
        '{"trainer": {"node": {"backoffLimit": 1, "rules": [["FailJob"]]}}}',
        '{"trainer": {"node": {"backoffLimit": 1, "rules": [[1, 2, 3, 4]]}}}',
        '{"trainer": {"node": {"backoffLimit": 1, "rules": [["FailJob", "In", ["x"], 0]]}}}',
        '{"trainer": {"node": {"backoffLimit": 0, "rules": 5}}}',
        '{"trainer": {"node": {"backoffLimit": 1e999}}}',
    ],
    "trainweave.io/disruptions": [
        '{"node": [{"at": 1, "pods": 5}]}',
        '{"node": [{"pods": {"a": 1}}, 7, null]}',
        '{"node": {"at": "x"}}',
    ],
    "trainweave.io/max-restarts": ["-5", "1e3", "99999999999999999999", " 2"],
    "trainweave.io/stopped-for": ["job-failed/", "suspend/x/y", "finished"],
    "trainweave.io/quota": [
        '{"steps": 5}',
        '{"steps": {"x": 1}}',
        '{"steps": {"x": {"state": []}}}',
    ],
    "trainweave.io/attempts": ["-1", "0", "1e9", "x", "99999999999999999999"],
    "trainweave.io/kept-after": ["init,", ",,", '["x"]'],
    "trainweave.io/kept-for-seconds": ["-1", "nan", "inf", "1e400"],
}
JSONISH = st.one_of(
    _STRINGS,
    st.sampled_from(
        [
            "{}",
            "[]",
            "null",
            "1e999",
            "-1",
            '{"a": 1}',
            '{"a": [1, {"b": null}]}',
            '{"node": {"limit": "x", "count": []}}',
            '{"node": [{"at": 1, "pods": 5}]}',
            '{"node": [{"pods": {"a": 1}}]}',
            '{"steps": {"x": {"state": 1}}}',
        ]
    ),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=4),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=8,
    ).map(json.dumps),
)
CONDITION_TYPES = ("Ready", "QuotaReserved", "Admitted", "Finished", "Evicted", "DisruptionTarget")


def string_map(draw: st.DrawFn, base: Any) -> dict[str, str]:
    """Labels or annotations: ``base``'s, some values or keys changed (any strings)."""
    out = dict(base) if isinstance(base, dict) else {}
    for key in draw(st.lists(st.sampled_from(sorted(out) or ["x"]), max_size=2)):
        out[key] = draw(_STRINGS)
    out.update(draw(st.dictionaries(_STRINGS, _STRINGS, max_size=2)))
    return out


def typed_edit(doc: Any, draw: st.DrawFn, keep: frozenset[Loc] = frozenset()) -> Any:
    """``doc`` (a deep copy) with one edit that keeps every value's JSON type, as a typed
    schema admits: a scalar replaced by another of its type, an optional key deleted (not the
    locations in ``keep``), a list emptied or an item repeated, a typed condition added to a
    ``conditions`` list."""
    doc = copy.deepcopy(doc)
    locs = [loc for loc in locations(doc) if loc and loc[0] != "metadata"]
    if not locs:
        return doc
    loc = draw(st.sampled_from(locs))
    target = _at(doc, loc)
    op = draw(st.sampled_from(["same-type", "same-type", "delete", "empty", "repeat", "add"]))
    if op == "same-type" and type(target) in _SAME_TYPE:
        return _set(doc, loc, draw(_SAME_TYPE[type(target)]))
    if op == "delete" and loc not in keep:
        del _parent(doc, loc)[loc[-1]]
        return doc
    if op == "empty" and isinstance(target, list | dict):
        target.clear()
        return doc
    if op == "repeat" and isinstance(target, list) and target:
        target.append(copy.deepcopy(target[draw(st.integers(0, len(target) - 1))]))
        return doc
    if op == "add" and isinstance(target, list) and loc[-1] == "conditions":
        target.append(
            {
                "type": draw(st.sampled_from(CONDITION_TYPES) | _STRINGS),
                "status": draw(st.sampled_from(["True", "False", "Unknown"]) | _STRINGS),
                "reason": draw(_STRINGS),
                "message": draw(_STRINGS),
                "lastTransitionTime": draw(st.sampled_from(["2026-11-01T10:00:00Z", ""])),
            }
        )
    return doc


@st.composite
def hostile_metadata(draw: st.DrawFn, obj: Json) -> Json:
    """``obj`` with its labels and annotations changed (string maps still)."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        if draw(st.booleans()):
            meta[key] = string_map(draw, meta.get(key))
    for key in draw(st.lists(st.sampled_from(OUR_ANNOTATIONS), max_size=3, unique=True)):
        meta.setdefault("annotations", {})[key] = draw(st.sampled_from(SHAPED[key]) | JSONISH)
    return obj


@st.composite
def hostile_workflow(draw: st.DrawFn, base: Json) -> Json:
    """A Workflow whose spec and status are anything a JSON object may hold."""
    wf: Json = draw(hostile_metadata(base))
    for part in draw(st.sets(st.sampled_from(["spec", "status"]), min_size=1)):
        for _ in range(draw(st.integers(1, 3))):
            wf[part] = edit(wf.get(part) or {}, draw)
        if not isinstance(wf[part], dict):
            wf[part] = {"x": wf[part]}  # the CRD asks for an object there
    if draw(st.booleans()):
        status = wf["status"] if isinstance(wf.get("status"), dict) else {}
        status["compressedNodes"] = draw(COMPRESSED_NODES)
        if draw(st.booleans()):
            status.pop("nodes", None)
        wf["status"] = status
    out: Json = json.loads(json.dumps(wf))
    return out


@st.composite
def hostile_typed(draw: st.DrawFn, base: Json, keep: frozenset[Loc] = frozenset()) -> Json:
    """A Pod, Workload or TrainJob edited within its types."""
    obj: Json = draw(hostile_metadata(base))
    for _ in range(draw(st.integers(1, 4))):
        obj = typed_edit(obj, draw, keep)
    out: Json = json.loads(json.dumps(obj))
    return out
