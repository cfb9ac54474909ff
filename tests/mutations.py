"""Hypothesis strategies that break valid inputs structurally (tests only).

A ``Case`` is a valid TrainJob, its runtime and a queues file (the examples under
``examples/`` and ``tests/builders``); ``mutate`` applies a few random edits at random
paths of a document: delete a key or item, replace a value by another JSON type (None,
bool, int, huge int, float incl. nan/inf, strings long, empty or unicode, lists, maps), put
another subtree of the same document in its place, duplicate a list item, empty a list or
map, insert an unknown (or non-string) key, rename a key, swap ``kind``; or, most often, put
an odd value of the same type in its place (0, -1, 2**63 - 1, another string), which parses
and so reaches render and plan. ``broken_text``
then sometimes damages the YAML text itself (truncation, a stray character).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.builders import make_runtime, make_trainjob

Json = dict[str, Any]
Key = str | int
Loc = tuple[Key, ...]
ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@dataclass(frozen=True, eq=False)
class Case:
    """A valid TrainJob, the runtime it names and queues holding its LocalQueues."""

    name: str
    trainjob: Json
    runtime: Json
    queues: tuple[Json, ...]


def _docs(path: Path) -> list[Json]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _example(name: str, tj: str, rt: str, queues: str) -> Case:
    return Case(
        name, _docs(EXAMPLES / tj)[0], _docs(EXAMPLES / rt)[0], tuple(_docs(EXAMPLES / queues))
    )


def _builders() -> Case:
    rt = make_runtime(name="rt", kind="ClusterTrainingRuntime").with_initializers().gpu(8)
    rt.with_exporter()
    tj = make_trainjob(
        runtime="rt",
        kind="ClusterTrainingRuntime",
        trainer={"numNodes": 2, "env": [{"name": "A", "value": "1"}]},
        initializer={"dataset": {"storageUri": "hf://org/data"}},
    )
    queues = [
        d | {"metadata": {**d["metadata"], "namespace": "ml"}} if d["kind"] == "LocalQueue" else d
        for d in _docs(EXAMPLES / "llm-finetune/queues.yaml")
    ]
    return Case("builders", tj, rt.build(), tuple(queues))


def _tas() -> Case:
    """A torch trainer of 2 nodes x 8 GPUs needing one block (Kueue TAS), on a flavor of
    Topology ``dc`` with two Nodes in one block."""
    block, rack, host = (
        "cloud.example.com/block",
        "cloud.example.com/rack",
        "kubernetes.io/hostname",
    )
    rt = make_runtime(name="rt", kind="ClusterTrainingRuntime").gpu(8)
    pod = rt.job_spec("node")["template"]
    pod["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": block}}
    tj = make_trainjob(runtime="rt", kind="ClusterTrainingRuntime", trainer={"numNodes": 2})
    api = "kueue.x-k8s.io/v1beta2"
    quota = [{"name": "nvidia.com/gpu", "nominalQuota": "16"}]
    queues: list[Json] = [
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas"},
            "spec": {"nodeLabels": {"pool": "tas"}, "topologyName": "dc"},
        },
        {
            "apiVersion": api,
            "kind": "Topology",
            "metadata": {"name": "dc"},
            "spec": {"levels": [{"nodeLabel": level} for level in (block, rack, host)]},
        },
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "gpu-cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [{"name": "tas", "resources": quota}],
                    }
                ]
            },
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "gpu-queue", "namespace": "ml"},
            "spec": {"clusterQueue": "gpu-cq"},
        },
    ]
    for i in range(2):
        labels = {"pool": "tas", block: "b1", rack: f"r{i}", host: f"n{i}"}
        queues.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"n{i}", "labels": labels},
                "status": {"allocatable": {"nvidia.com/gpu": "8"}},
            }
        )
    return Case("tas", tj, rt.build(), tuple(queues))


CASES: tuple[Case, ...] = (
    _example(
        "llm-finetune",
        "llm-finetune/trainjob.yaml",
        "llm-finetune/runtime.yaml",
        "llm-finetune/queues.yaml",
    ),
    _example("mpi", "mpi/trainjob.yaml", "mpi/runtime.yaml", "llm-finetune/queues.yaml"),
    _example(
        "torch-distributed",
        "torch-distributed/trainjob.yaml",
        "torch-distributed/runtime.yaml",
        "llm-finetune/queues.yaml",
    ),
    _example("real", "real/trainjob.yaml", "real/runtime.yaml", "real/queues.yaml"),
    _example("real-mpi", "real/mpi_trainjob.yaml", "real/mpi_runtime.yaml", "real/queues.yaml"),
    _builders(),
    _tas(),
)

KINDS = (
    "TrainJob",
    "TrainingRuntime",
    "ClusterTrainingRuntime",
    "ResourceFlavor",
    "ClusterQueue",
    "LocalQueue",
    "Workflow",
    "Pod",
    "",
)
_STRINGS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            " ",
            "0",
            "-1",
            "nan",
            "inf",
            "1e400",
            "8Gi",
            "-8Gi",
            "0.5",
            "100m",
            "1.5e3",
            "yes",
            "null",
            "a" * 5000,
            "ünïcødé/名前",
            "a\nb",
            "a: b",
            "{{inputs.parameters.x}}",
            "$(X)",
            "../x",
            "Node",
            "node",
            "trainer",
            "torch",
            "ml-team",
            "gpu-queue",
            "kueue.x-k8s.io/queue-name",
            "nvidia.com/gpu",
            "Complete",
            "Ready",
        ]
    ),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2**31, 2**63, -(2**63) - 1, 10**30]),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, -0.0, 1e-9, 1e308, float("nan"), float("inf"), float("-inf")]),
    _STRINGS,
)
VALUES: st.SearchStrategy[Any] = st.one_of(
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=6), _SCALARS, max_size=3),
    # built anew for each draw: a shared object would carry one example's later edits into the
    # next (hypothesis: "Inconsistent data generation")
    st.builds(lambda: [{}]),
    st.builds(lambda: {"name": None}),
)
NEW_KEYS = st.one_of(
    st.text(max_size=10),
    st.sampled_from(["name", "kind", "spec", "template", "replicas", "x-unknown", "status"]),
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
)
_SAME_TYPE: dict[type, st.SearchStrategy[Any]] = {
    bool: st.booleans(),
    int: st.one_of(
        st.sampled_from([0, 1, -1, 2, 8, 255, 65536, 2**31 - 1, 2**31, 2**53, 2**63 - 1]),
        st.integers(-100, 10**7),
    ),
    float: st.floats(allow_nan=True, allow_infinity=True),
    str: _STRINGS,
}
META_KEYS = (
    "kueue.x-k8s.io/queue-name",
    "kueue.x-k8s.io/priority-class",
    "queue.trainweave.io/node",
    "queue.trainweave.io/dataset-initializer",
    "trainweave.io/attempts",
    "trainer.kubeflow.org/trainjob-ancestor-step",
)
OPS = (
    "same-type",
    "same-type",
    "delete",
    "replace",
    "graft",
    "duplicate",
    "empty",
    "insert",
    "rename",
    "kind",
)


def locations(doc: Any, loc: Loc = ()) -> list[Loc]:
    """Every path in ``doc`` (the root first)."""
    out = [loc]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += locations(value, (*loc, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += locations(value, (*loc, i))
    return out


def _parent(doc: Any, loc: Loc) -> Any:
    for key in loc[:-1]:
        doc = doc[key]
    return doc


def _at(doc: Any, loc: Loc) -> Any:
    for key in loc:
        doc = doc[key]
    return doc


def _set(doc: Any, loc: Loc, value: Any) -> Any:
    if not loc:
        return value
    _parent(doc, loc)[loc[-1]] = value
    return doc


def edit(doc: Any, draw: st.DrawFn) -> Any:
    """``doc`` (a deep copy) with one random structural edit."""
    doc = copy.deepcopy(doc)
    locs = locations(doc)
    loc = draw(st.sampled_from(locs))
    op = draw(st.sampled_from(OPS))
    target = _at(doc, loc)
    if op == "same-type" and type(target) in _SAME_TYPE:
        # a value of the right type (parses), and odd: drives render and plan past the parsers
        return _set(doc, loc, draw(_SAME_TYPE[type(target)]))
    if op == "delete" and loc:
        parent = _parent(doc, loc)
        del parent[loc[-1]]
        return doc
    if op == "graft":
        other = _at(doc, draw(st.sampled_from(locs)))
        return _set(doc, loc, copy.deepcopy(other))
    if op == "duplicate" and isinstance(target, list) and target:
        i = draw(st.integers(0, len(target) - 1))
        target.insert(i, copy.deepcopy(target[i]))
        return doc
    if op == "empty" and isinstance(target, list | dict):
        target.clear()
        return doc
    if op == "insert" and isinstance(target, dict):
        target[draw(NEW_KEYS)] = draw(VALUES)
        return doc
    if op == "rename" and loc and isinstance(_parent(doc, loc), dict):
        parent = _parent(doc, loc)
        new = draw(st.sampled_from([f"{loc[-1]}s", str(loc[-1]).lower(), f"x{loc[-1]}"]))
        parent[new] = parent.pop(loc[-1])
        return doc
    if op == "kind" and isinstance(doc, dict):
        doc["kind"] = draw(st.sampled_from(KINDS))
        return doc
    return _set(doc, loc, draw(VALUES))


def mutate(doc: Any, draw: st.DrawFn, max_edits: int = 2) -> Any:
    """``doc`` after 1 to ``max_edits`` random edits."""
    for _ in range(draw(st.integers(1, max_edits))):
        doc = edit(doc, draw)
    return doc


def dump(docs: list[Any]) -> str:
    """YAML text of ``docs`` (one document each; libyaml's emitter, for speed)."""
    return yaml.dump_all(docs, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)


def broken_text(text: str, draw: st.DrawFn) -> str:
    """``text``, sometimes truncated or with a stray character (most often unchanged)."""
    how = draw(st.sampled_from(["keep"] * 6 + ["truncate", "stray"]))
    if how == "keep" or not text:
        return text
    at = draw(st.integers(0, len(text)))
    if how == "truncate":
        return text[:at]
    return (
        text[:at]
        + draw(st.sampled_from(["\t", ":", "- ", "{", "'", "&a", "*a", "!!python/x"]))
        + text[at:]
    )


@cache
def _texts(case: Case) -> tuple[str, str, str]:
    return dump([case.trainjob]), dump([case.runtime]), dump(list(case.queues))


@st.composite
def mutated_case(draw: st.DrawFn) -> tuple[Case, str, str, str]:
    """A case and the texts of its TrainJob, runtime and queues files, one of them mutated
    (sometimes two)."""
    case = draw(st.sampled_from(CASES))
    which = draw(
        st.sets(st.sampled_from(["trainjob", "runtime", "queues"]), min_size=1, max_size=2)
    )
    texts = list(_texts(case))
    if "trainjob" in which:
        texts[0] = dump([mutate(case.trainjob, draw)])
    if "runtime" in which:
        texts[1] = dump([mutate(case.runtime, draw)])
    if draw(st.integers(0, 9)) == 0:  # a runtime file of several runtimes (or two of one name)
        texts[1] += "---\n" + dump([draw(st.sampled_from(CASES)).runtime])
    if "queues" in which:
        queues = mutate(list(case.queues), draw)
        texts[2] = dump(queues if isinstance(queues, list) else [queues])
    i = draw(st.integers(0, 2))
    texts[i] = broken_text(texts[i], draw)
    return case, texts[0], texts[1], texts[2]


@st.composite
def mutated_pair(draw: st.DrawFn) -> tuple[Case, Json, Json, str | None]:
    """A case with its TrainJob ``spec`` and/or its runtime mutated (as the API server would
    serve them: documents, not text), and sometimes the runtime as the text of its snapshot
    ConfigMap (which a user may edit)."""
    case = draw(st.sampled_from(CASES))
    tj, rt = copy.deepcopy(case.trainjob), case.runtime
    which = draw(st.sampled_from(["trainjob", "runtime", "both"]))
    if which != "runtime":
        tj["spec"] = mutate(tj["spec"], draw)
    for field in ("labels", "annotations"):  # map[string]string, whatever the strings say
        extra = draw(st.dictionaries(st.sampled_from(META_KEYS), _STRINGS, max_size=2))
        if extra:
            tj["metadata"][field] = {**tj["metadata"].get(field, {}), **extra}
    if which != "trainjob":
        rt = mutate(rt, draw)
    if not isinstance(rt, dict):  # the API server serves an object, whatever it holds
        rt = case.runtime
    # JSON on the wire: every map key a string (YAML's 1: or true: keys are the CLI's to meet)
    rt = json.loads(json.dumps(rt))
    snapshot = None
    if draw(st.integers(0, 4)) == 0:  # from the runtime snapshot ConfigMap, as YAML text
        snapshot = broken_text(dump([rt]), draw)
    return case, json.loads(json.dumps(tj)), rt, snapshot
