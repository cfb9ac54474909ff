"""The dynamic oracle: one TrainJob run under upstream and under trainweave, statuses compared.

Upstream is Kubeflow Trainer v2.3.0's controller manager + the JobSet controller its go.mod
requires + Kueue's TrainJob integration (one Workload per TrainJob on one ClusterQueue), on the
same engines (`hack/cluster.py upstream on`). Upstream and trainweave never manage the same
TrainJob: the upstream half of every scenario runs first, all at once, in namespaces labelled
``trainweave.test/upstream`` (tests/e2e/upstream_phase.py's ``oracle`` half, run with upstream's
other halves while upstream is on once per run); then upstream is off (Kueue back to its pod
integration) and each scenario runs under trainweave's controller (docs/fidelity.md, "The dynamic
oracle").

Per scenario the TrainJob's final status is compared: conditions in order of appearance (type,
status, reason, message) and ``jobsStatus``. The differences found must be exactly those
docs/fidelity.md lists for the scenario.

The trainweave half also runs every scenario at once (a namespace, queues and controller each),
and each scenario's run is checked for what trainweave alone promises (``OWN_CHECKS``: the quota
annotation, the Workflows made, the quota released, the CLI's status): one run proves both.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from .controller_proc import ControllerProc
from .integrity import Integrity
from .kube import (
    E2E_NAMESPACE_LABEL,
    KUEUE,
    Kube,
    condition,
    default_kubeconfig,
    load_manifest,
    wait_until,
)
from .pipelines import RJOBS, apply, example, workflows, workload_done
from .upstream_phase import SCENARIOS, UpstreamResults, terminal

pytestmark = [pytest.mark.e2e, pytest.mark.serial]
ROOT = Path(__file__).resolve().parents[2]
FIDELITY = ROOT / "docs" / "fidelity.md"
Json = dict[str, Any]


@pytest.fixture(scope="module")
def upstream_runs(upstream_results: UpstreamResults) -> dict[str, Json]:
    """Every scenario's TrainJob as upstream ended it (all run at once, ``SCENARIOS``: the
    ``oracle`` half of tests/e2e/upstream_phase.py); upstream is off again (its namespaces gone)
    before any trainweave run starts. When that half raised, every test here errors with its
    traceback, and the trainweave half does not run."""
    return upstream_results.oracle.get()


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


@dataclass
class Ours:
    """A scenario's trainweave run: its namespace, controller and final TrainJob."""

    namespace: str
    controller: ControllerProc
    trainjob: Json


def _ready(ctl: ControllerProc) -> bool:
    return ctl.get("/readyz")[0] == 200


@pytest.fixture(scope="module")
def trainweave_runs(
    kube: Kube, upstream_runs: dict[str, Json], controller_kubeconfig: Path
) -> Iterator[dict[str, Ours]]:
    """Every scenario under trainweave, all at once (after upstream is off): each in its own
    namespace with its queues (tests/e2e/manifests/queues.yaml) and its controller."""
    made: dict[str, tuple[str, ControllerProc]] = {}
    checkers: list[Integrity] = []  # as the ``namespace`` fixture: pods' references exist
    try:
        for name, knobs in SCENARIOS.items():
            ns = f"tw-{name}-{uuid.uuid4().hex[:5]}"
            kube.create_namespace(ns, {E2E_NAMESPACE_LABEL: "true"})
            checkers.append(Integrity(kube.api, ns).start())
            for obj in load_manifest("queues.yaml", NS=ns, GPU_QUOTA="16"):
                plural = "clusterqueues" if obj["kind"] == "ClusterQueue" else "localqueues"
                kube.create(KUEUE, plural, obj, obj["metadata"].get("namespace"))
            ctl = ControllerProc(ns, "a", controller_kubeconfig)
            made[name] = (ns, ctl)
            wait_until(f"controller of {name} ready", partial(_ready, ctl))
            apply(kube, ns, *example(ns, **knobs))
        yield {
            name: Ours(
                ns,
                ctl,
                wait_until(f"trainweave {name} ends", partial(terminal, kube, ns), timeout=400),
            )
            for name, (ns, ctl) in made.items()
        }
        for checker in checkers:
            checker.stop()
            assert checker.problems == [], f"pods reference missing objects: {checker.problems}"
    finally:
        coord = client.CoordinationV1Api(kube.api)
        for ns, ctl in made.values():
            ctl.stop(signal.SIGKILL)
            try:
                coord.delete_namespaced_lease(ctl.lease_name, ctl.lease_namespace)
            except client.ApiException as e:
                if e.status != 404:
                    raise
            for wl in kube.list(KUEUE, "workloads", ns):
                kube.delete(KUEUE, "workloads", wl["metadata"]["name"], ns)
            kube.delete_namespace(ns)
            for cq in ("cpu", "gpu"):
                kube.delete(KUEUE, "clusterqueues", f"{ns}-{cq}")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_status_matches_upstream(
    scenario: str, upstream_runs: dict[str, Json], trainweave_runs: dict[str, Ours], kube: Kube
) -> None:
    ours = trainweave_runs[scenario].trainjob
    # at its deadline upstream deletes the JobSet, and its jobsStatus empties or not depending on
    # which of the two the status read sees first (trainjob_controller.go): conditions only
    found = differences(upstream_runs[scenario], ours, jobs=scenario != "deadline")
    patterns = listed(scenario)
    unexplained = sorted(d for d in found if not any(re.fullmatch(p, d) for p in patterns))
    vanished = sorted(p for p in patterns if not any(re.fullmatch(p, d) for d in found))
    assert (unexplained, vanished) == ([], []), (
        f"upstream {status(upstream_runs[scenario])}\ntrainweave {status(ours)}"
    )
    OWN_CHECKS[scenario](kube, trainweave_runs[scenario])


# -- what trainweave promises beyond upstream's status, per scenario (were tests/e2e/test_controller.py's
# test_llm_finetune_completes, test_permanent_exit_code_fails_naming_step_and_code,
# test_retryable_exit_code_recovers, test_max_restarts_then_reached_max_restarts and
# test_deadline_fails_and_stops_workflow, which ran the same pipelines a second time)


def _cond(tj: Json, ctype: str) -> Json:
    c = condition(tj, ctype)
    assert c is not None and c.get("status") == "True", (ctype, tj.get("status"))
    return c


def _jobs(tj: Json) -> dict[str, Json]:
    return {j["name"]: j for j in tj["status"]["jobsStatus"]}


def _success(kube: Kube, run: Ours) -> None:
    tj, ns = run.trainjob, run.namespace
    assert _cond(tj, "Complete")["reason"] == "AllJobsCompleted"
    jobs = _jobs(tj)
    assert set(jobs) == set(RJOBS)
    # counted in Jobs as JobSet does: the two trainer pods are one Job (Trainer's torch runtime)
    assert jobs["node"]["succeeded"] == 1 and jobs["dataset-initializer"]["succeeded"] == 1
    assert all(j["failed"] == j["active"] == 0 for j in jobs.values())
    quota = json.loads(tj["metadata"]["annotations"]["trainweave.io/quota"])
    steps = {s["step"]: s for s in quota["steps"]}
    assert set(steps) == set(RJOBS)
    assert steps["node"]["clusterQueue"] == f"{ns}-gpu"
    assert steps["node"]["usage"]["nvidia.com/gpu"] == "2"
    assert steps["node"]["resourceSeconds"]["nvidia.com/gpu"] > 0
    assert [w["metadata"]["name"] for w in workflows(kube, ns)] == ["ft"]
    assert run.controller.metric("trainweave_step_admission_wait_seconds_count") >= 4
    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "status", "ft", "-n", ns,
         "--kubeconfig", str(default_kubeconfig())],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "model-exporter" in out.stdout and "GPU-hours" in out.stdout


def _permanent(kube: Kube, run: Ours) -> None:
    cond = _cond(run.trainjob, "Failed")
    assert cond["reason"] == "FailedJobs"
    assert "'node'" in cond["message"] and "exit code 1" in cond["message"]
    jobs = _jobs(run.trainjob)
    assert (jobs["node"]["failed"], jobs["node"]["succeeded"]) == (1, 0)
    # Argo gave up: the trainer's pod group no longer holds GPU quota
    wait_until(
        "trainer Workload released", lambda: workload_done(kube, run.namespace, "ft-node-a0")
    )


def _retried(kube: Kube, run: Ours) -> None:
    jobs = _jobs(run.trainjob)
    assert _cond(run.trainjob, "Complete")["reason"] == "AllJobsCompleted"
    assert (jobs["node"]["succeeded"], jobs["node"]["failed"]) == (1, 0)


def _backoff(kube: Kube, run: Ours) -> None:
    assert _cond(run.trainjob, "Failed")["reason"] == "FailedJobs"


def _max_restarts(kube: Kube, run: Ours) -> None:
    tj = run.trainjob
    restarts = int(SCENARIOS["max-restarts"]["max_restarts"])
    assert _cond(tj, "Failed")["reason"] == "ReachedMaxRestarts"
    assert tj["metadata"]["annotations"]["trainweave.io/attempts"] == str(restarts + 1)
    names = sorted(w["metadata"]["name"] for w in workflows(kube, run.namespace))
    assert names == ["ft", *(f"ft-r{i}" for i in range(1, restarts + 1))]


def _deadline(kube: Kube, run: Ours) -> None:
    cond = _cond(run.trainjob, "Failed")
    assert (cond["reason"], cond["message"]) == (
        "DeadlineExceeded",
        "TrainJob exceeded its active deadline",
    )
    ns = run.namespace
    wait_until(
        "workflow stopped", lambda: kube.workflow(ns, "ft")["spec"].get("shutdown") == "Stop"
    )
    wait_until("trainer Workload released", lambda: workload_done(kube, ns, "ft-node-a0"))
    assert [w["metadata"]["name"] for w in workflows(kube, ns)] == ["ft"]  # never retried


OWN_CHECKS: dict[str, Callable[[Kube, Ours], None]] = {
    "success": _success,
    "permanent-failure": _permanent,
    "retryable-then-success": _retried,
    "backoff-exhausted": _backoff,
    "max-restarts": _max_restarts,
    "deadline": _deadline,
}
