"""Hostile and broken TrainJobs and runtimes for the storm (tests/e2e/test_hostile.py). Pure.

Each case mutates the e2e pipeline (pipelines.example) and says how it must end:
- ``REJECTED``: the API server refuses the TrainJob (Trainer's CRD schema and CEL rules);
- ``FAILED``: the controller sets ``Failed`` with ``reason``, its message naming the field;
- ``WAITS``: a step waits in Kueue for what only an admin can give (a Warning Event);
- ``COMPLETES``: the runtime is deleted or edited while the TrainJob runs, which runs on from
  its snapshot.
Value families (names, counts, env names) are drawn by hypothesis, derandomized: the same
cases on every run.
"""

from __future__ import annotations

import copy
import enum
import hashlib
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from .pipelines import example

Json = dict[str, Any]
RJ = "spec.template.spec.replicatedJobs"


class Outcome(enum.Enum):
    REJECTED = "rejected"
    FAILED = "failed"
    WAITS = "waits"
    COMPLETES = "completes"


@dataclass(frozen=True)
class Case:
    name: str  # also the TrainJob's, unless the case is about names
    trainjob: Json
    runtime: Json | None  # None: no runtime is created
    outcome: Outcome
    reason: str = ""  # the Failed condition's reason
    says: str = ""  # in the rejection or the condition message


def drawn(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """``n`` distinct values of ``strategy``, the same on every run."""
    out: list[Any] = []

    @settings(
        derandomize=True,
        database=None,
        max_examples=n * 20,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        if value not in out and len(out) < n:
            out.append(value)

    collect()
    assert len(out) == n, f"hypothesis drew {len(out)} of {n} values"
    return out


def _case(
    ns: str,
    name: str,
    mutate: Callable[[Json, Json], None],
    outcome: Outcome,
    reason: str = "",
    says: str = "",
    runtime: bool = True,
) -> Case:
    tj, rt = example(ns, name, runtime_name=f"rt-{hashlib.sha256(name.encode()).hexdigest()[:12]}")
    tj["spec"]["runtimeRef"]["name"] = rt["metadata"]["name"]
    mutate(tj, rt)
    return Case(name, tj, rt if runtime else None, outcome, reason, says)


def _set(path: str, value: Any) -> Callable[[Json, Json], None]:
    """A mutation setting ``tj.<path>`` (dotted) to ``value``."""

    def mutate(tj: Json, rt: Json) -> None:
        *head, last = path.split(".")
        node = tj
        for key in head:
            node = node.setdefault(key, {})
        node[last] = copy.deepcopy(value)

    return mutate


def _rjob(rt: Json, name: str) -> Json:
    return next(j for j in rt["spec"]["template"]["spec"]["replicatedJobs"] if j["name"] == name)


def _pod(rt: Json, name: str) -> Json:
    return _rjob(rt, name)["template"]["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _invalid_label(name: str) -> bool:
    ok = name[:1] in string.ascii_lowercase and len(name) <= 63
    return not (ok and all(c in string.ascii_lowercase + string.digits + "-" for c in name)) or (
        name.endswith("-")
    )


R, F, W = Outcome.REJECTED, Outcome.FAILED, Outcome.WAITS
TJ_BAD, RT_BAD, NOT_FOUND = "InvalidTrainJob", "InvalidRuntime", "TrainingRuntimeNotFound"
GPU = "nvidia.com/gpu"
PATCH_NOPE = {
    "manager": "example.com/x",
    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [{"name": "nope"}]}}},
}
# (case, TrainJob field, value, outcome, Failed reason, what the refusal or message says)
ONE_FIELD: list[tuple[str, str, Any, Outcome, str, str]] = [
    ("label-70", "metadata.labels", {"team": "t" * 70}, R, "", "metadata.labels"),
    ("nodes-text", "spec.trainer.numNodes", "many", R, "", "spec.trainer.numNodes"),
    ("deadline-0", "spec.activeDeadlineSeconds", 0, R, "", "spec.activeDeadlineSeconds"),
    ("uri-bare", "spec.initializer.dataset.storageUri", "just-a-path", R, "", "storageUri"),
    ("managedby-x", "spec.managedBy", "example.com/other", R, "", "ManagedBy"),
    # Kueue's TrainJob webhook decodes it first: "quantities must match the regular expression"
    ("quantity-text", "spec.trainer.resourcesPerNode.limits", {GPU: "8 GPUs"}, R, "",
     "quantities must match"),
    ("cpu-negative", "spec.trainer.resourcesPerNode.requests.cpu", "-2", F, TJ_BAD,
     "must be greater than or equal to 0"),
    # a quantity's pattern is the CRD's, but an env var name has no length limit there
    ("env-1mib", "spec.trainer.env", [{"name": "A=" + "x" * 1_000_000}], F, TJ_BAD,
     "more characters)"),
    ("patch-unknown-job", "spec.runtimePatches", [PATCH_NOPE], F, TJ_BAD,
     "no replicatedJob 'nope' in the runtime"),
    ("runtime-traversal", "spec.runtimeRef.name", "../../kube-system/trainingruntimes/x", F,
     NOT_FOUND, "not found"),
    ("gpus-10000", "spec.trainer.resourcesPerNode",
     {"requests": {"cpu": "1", GPU: "10000"}, "limits": {GPU: "10000"}}, W, "",
     "> maximum capacity (16)"),
    ("queue-missing", "metadata.annotations", {"queue.trainweave.io/node": "nope"}, W, "",
     "Inadmissible: LocalQueue nope doesn't exist"),
]  # fmt: skip


def _depends(job: str, on: list[str]) -> Callable[[Json, Json], None]:
    def mutate(tj: Json, rt: Json) -> None:
        _rjob(rt, job)["dependsOn"] = [{"name": d, "status": "Complete"} for d in on]

    return mutate


def _cycle(tj: Json, rt: Json) -> None:
    _depends("node", ["model-exporter"])(tj, rt)
    _depends("model-exporter", ["node"])(tj, rt)


def _exporter_pod(change: Callable[[Json], None]) -> Callable[[Json, Json], None]:
    return lambda tj, rt: change(_pod(rt, "model-exporter"))


def _exporter_job(change: Callable[[Json], None]) -> Callable[[Json, Json], None]:
    return lambda tj, rt: change(_rjob(rt, "model-exporter"))


# (case, runtime mutation, Failed reason, what the message says)
RUNTIME: list[tuple[str, Callable[[Json, Json], None], str, str]] = [
    ("depends-cycle", _cycle, RT_BAD, "forms a cycle"),
    ("depends-self", _depends("node", ["node"]), RT_BAD, "forms a cycle: node -> node"),
    ("depends-unknown", _depends("node", ["tokenizer"]), RT_BAD,
     "names unknown replicatedJob 'tokenizer'"),
    ("container-name", _exporter_pod(lambda p: p["containers"][0].update(name="Bad_Name")),
     RT_BAD, "is not a lowercase RFC 1123 label"),
    ("volume-name", _exporter_pod(lambda p: p["volumes"].append({"name": "Bad Vol"})), RT_BAD,
     "is not a lowercase RFC 1123 label"),
    ("port-zero", _exporter_pod(lambda p: p["containers"][0].update(ports=[{"containerPort": 0}])),
     RT_BAD, "0 is not 1-65535"),
    ("replicas-5000", _exporter_job(lambda j: j.update(replicas=5000)), RT_BAD,
     "a TrainJob may run at most 2000"),
    ("job-field", lambda tj, rt: _rjob(rt, "node")["template"]["spec"].update(maxFailedIndexes=1),
     "UnsupportedField", "Argo has no cross-pod failed-index budget"),
]  # fmt: skip


def cases(ns: str) -> list[Case]:
    """Every hostile case for namespace ``ns`` (at least 40)."""
    # refused by the API server: Trainer's CRD (CEL on metadata.name, minimums, patterns)
    names = drawn(
        st.text(alphabet="abcXYZ.-_ü0", min_size=1, max_size=70).filter(_invalid_label), 5
    )
    out = [
        _case(ns, f"badname-{i}", _set("metadata.name", bad), R, says="metadata.name")
        for i, bad in enumerate([*names, "a" * 64, "a" * 253])
    ]
    out += [_case(ns, c, _set(path, v), o, r, says) for c, path, v, o, r, says in ONE_FIELD]
    # Failed by the controller's input checks (the same as `trainweave render`'s)
    for i, n in enumerate(drawn(st.integers(max_value=0, min_value=-(2**31)), 3)):
        out.append(_case(ns, f"nodes-low-{i}", _set("spec.trainer.numNodes", n), F, TJ_BAD,
                         f"spec.trainer.numNodes: must be at least 1, got {n}"))  # fmt: skip
    for i, n in enumerate(drawn(st.integers(min_value=2001, max_value=2**31 - 1), 3)):
        out.append(_case(ns, f"nodes-high-{i}", _set("spec.trainer.numNodes", n), F, TJ_BAD,
                         f"gives {n + 3} pods ({n} in job 'node'); a TrainJob may run at most 2000"))  # fmt: skip
    for n in drawn(st.integers(min_value=41, max_value=63), 3):
        out.append(_case(ns, "h" * n, lambda tj, rt: None, F, TJ_BAD,
                         "a hostname may have at most 63: shorten the TrainJob name"))  # fmt: skip
    env_names = ["", "ü", *drawn(st.text(alphabet="AB=_1 ", min_size=1, max_size=8).filter(
        lambda s: "=" in s), 3)]  # fmt: skip
    for i, bad in enumerate(env_names):
        out.append(_case(ns, f"env-{i}", _set("spec.trainer.env", [{"name": bad, "value": "v"}]),
                         F, TJ_BAD, "spec.trainer.env[0].name: "))  # fmt: skip
    out.append(_case(ns, "runtime-missing", lambda tj, rt: None, F, NOT_FOUND,
                     "not found in namespace", runtime=False))  # fmt: skip
    out += [_case(ns, c, mutate, F, reason, says) for c, mutate, reason, says in RUNTIME]
    # the runtime changes under a running TrainJob (test_hostile deletes or edits it)
    for name in ("runtime-deleted", "runtime-edited"):
        tj, rt = example(ns, name, runtime_name=f"rt-{name}", nodes=1, durations={"node": "15s"})
        tj["spec"]["runtimeRef"]["name"] = rt["metadata"]["name"]
        out.append(Case(name, tj, rt, Outcome.COMPLETES))
    return out
