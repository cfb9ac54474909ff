"""The dynamic oracle: one TrainJob run under upstream and under trainweave, statuses compared.

Upstream is Kubeflow Trainer v2.3.0's controller manager + the JobSet controller its go.mod
requires + Kueue's TrainJob integration (one Workload per TrainJob on one ClusterQueue), on the
same engines (`hack/cluster.py upstream on`). Upstream and trainweave never manage the same
TrainJob: the upstream half of every scenario runs first, all at once, in namespaces labelled
``trainweave.test/upstream``; then upstream is switched off (Kueue back to its pod integration)
and each scenario runs under trainweave's controller (docs/fidelity.md, "The dynamic oracle").

Per scenario the TrainJob's final status is compared: conditions in order of appearance (type,
status, reason, message) and ``jobsStatus``. The differences found must be exactly those
docs/fidelity.md lists for the scenario.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from .controller_proc import ControllerProc
from .kube import E2E_NAMESPACE_LABEL, KUEUE, Kube, condition, wait_until
from .pipelines import apply, example, for_upstream, trainjob

# as in test_admission.py: the script checked as a file, not followed from here
admission: Any = importlib.import_module("benchmarks.admission")

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
FIDELITY = ROOT / "docs" / "fidelity.md"
UPSTREAM_LABEL = "trainweave.test/upstream"
Json = dict[str, Any]

# scenario -> example() knobs (tests/e2e/pipelines.py): pod outcomes per replicatedJob and attempt
SCENARIOS: dict[str, dict[str, Any]] = {
    "success": {},
    "permanent-failure": {"codes": {"node": [1]}},  # the runtime's FailJob rule (exit 1 or 2)
    "retryable-then-success": {"codes": {"node": [3, 0]}},  # counted, then the retry succeeds
    "backoff-exhausted": {"codes": {"node": [3, 3, 3]}},  # backoffLimitPerIndex: 2
    "max-restarts": {"codes": {"node": [1]}, "max_restarts": 1},
    "deadline": {"deadline": 25, "durations": {"node": "600s"}},
}


def cluster(*args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster.py"), *args], check=True)


def terminal(kube: Kube, ns: str) -> Json | None:
    tj = trainjob(kube, ns)
    for ctype in ("Complete", "Failed"):
        c = condition(tj, ctype)
        if c and c.get("status") == "True":
            return tj
    return None


@pytest.fixture(scope="module")
def upstream_runs(kube: Kube) -> dict[str, Json]:
    """Every scenario's TrainJob as upstream ends it (all run at once); upstream is off again
    (its namespaces gone) before any trainweave run starts."""
    cluster("upstream", "on")
    made: dict[str, str] = {}
    try:
        for name, knobs in SCENARIOS.items():
            ns = f"upstream-{name}-{uuid.uuid4().hex[:5]}"
            kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true", UPSTREAM_LABEL: "true"})
            made[name] = ns
            for obj in admission.queues(ns, upstream=True, gpus=16):
                plural = "clusterqueues" if obj["kind"] == "ClusterQueue" else "localqueues"
                kube.create(KUEUE, plural, obj, obj["metadata"].get("namespace"))
            tj, rt = example(ns, **knobs)
            for_upstream(ns, tj, rt)
            apply(kube, ns, tj, rt)
        return {
            name: wait_until(f"upstream {name} ends", partial(terminal, kube, ns), timeout=300)
            for name, ns in made.items()
        }
    finally:
        for ns in made.values():
            for wl in kube.list(KUEUE, "workloads", ns):
                kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
            kube.delete_namespace(ns, wait=120)
            kube.delete(KUEUE, "clusterqueues", f"{ns}-all")
        cluster("upstream", "off")


def status(tj: Json) -> Json:
    """What is compared: conditions in order of appearance and jobsStatus by job."""
    st = tj.get("status") or {}
    conds = sorted(
        enumerate(st.get("conditions") or []), key=lambda ic: (ic[1]["lastTransitionTime"], ic[0])
    )
    return {
        "conditions": [
            (c["type"], c["status"], c.get("reason", ""), c.get("message", "")) for _, c in conds
        ],
        "jobsStatus": {
            j["name"]: {k: v for k, v in j.items() if k != "name"}
            for j in st.get("jobsStatus") or []
        },
    }


def differences(upstream: Json, ours: Json, jobs: bool = True) -> set[str]:
    """One line per difference: a condition type whose status or reason differs (or that one
    side lacks), a message that is not upstream's (trainweave may add ``: <detail>`` after it),
    the order of appearance of the types both have, and (``jobs``) each job's jobsStatus."""
    up, tw = status(upstream), status(ours)
    out = set()
    u_conds = {c[0]: c[1:] for c in up["conditions"]}
    t_conds = {c[0]: c[1:] for c in tw["conditions"]}
    for ctype in sorted(set(u_conds) | set(t_conds)):
        u, t = u_conds.get(ctype), t_conds.get(ctype)
        if u is None or t is None or u[:2] != t[:2]:
            out.add(f"{ctype}: upstream {u} | trainweave {t}")
        elif not (t[2] == u[2] or t[2].startswith(u[2] + ": ")):
            out.add(f"{ctype} message: upstream {u[2]!r} | trainweave {t[2]!r}")
    u_order = [c[0] for c in up["conditions"] if c[0] in t_conds]
    t_order = [c[0] for c in tw["conditions"] if c[0] in u_conds]
    if u_order != t_order:
        out.add(f"order: upstream {u_order} | trainweave {t_order}")
    for job in sorted(set(up["jobsStatus"]) | set(tw["jobsStatus"])) if jobs else ():
        u_job, t_job = up["jobsStatus"].get(job), tw["jobsStatus"].get(job)
        if u_job != t_job:
            out.add(f"jobsStatus {job}: upstream {u_job} | trainweave {t_job}")
    return out


def listed(scenario: str) -> list[str]:
    """docs/fidelity.md's dynamic-oracle rows for ``scenario`` or for every one (``*``): the
    second column is a regexp a difference line must match whole."""
    rows = re.findall(r"^\| `([a-z*-]+)` \| `(.+?)` \|", FIDELITY.read_text(), flags=re.M)
    return [pattern for name, pattern in rows if name in (scenario, "*")]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_status_matches_upstream(
    scenario: str,
    upstream_runs: dict[str, Json],
    kube: Kube,
    namespace: str,
    queues: Any,
    controller: ControllerProc,
) -> None:
    queues()
    apply(kube, namespace, *example(namespace, **SCENARIOS[scenario]))
    ours = wait_until(f"trainweave {scenario} ends", lambda: terminal(kube, namespace), timeout=300)
    # at its deadline upstream deletes the JobSet, and its jobsStatus empties or not depending on
    # which of the two the status read sees first (trainjob_controller.go): conditions only
    found = differences(upstream_runs[scenario], ours, jobs=scenario != "deadline")
    patterns = listed(scenario)
    unexplained = sorted(d for d in found if not any(re.fullmatch(p, d) for p in patterns))
    vanished = sorted(p for p in patterns if not any(re.fullmatch(p, d) for d in found))
    assert (unexplained, vanished) == ([], []), (
        f"upstream {status(upstream_runs[scenario])}\ntrainweave {status(ours)}"
    )
