"""Preemption for real (issue 11, item 3): Kueue preempts a running trainer step on the real
node of hack/node.py, the kubelet kills its containers, Argo's retry brings the step back.

examples/real runs at low priority (the TrainJob's ``kueue.x-k8s.io/priority-class`` label,
which ``adapters.trainjob.trainer`` puts on every step's pods and so on each step Workload's
``priorityClassRef``), its trainer slowed by STEP_SLEEP_SECONDS. Its trainer-cq gets
``withinClusterQueue: LowerPriority`` and a quota that fits the trainer step or one urgent pod,
not both. Once both trainer containers run, a high-priority Kueue-managed pod arrives: Kueue
evicts the step Workload, the real containers die, Argo retries the pods (a 143 is a disruption,
retried outside the budget: docs/design.md D11), the same Workload is re-admitted once the
urgent pod is done, the trainer trains again from the start and the TrainJob ends Complete.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from trainweave.integrations.views.read.argo_view import view

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, Pod, condition, condition_is, pod_nodes, wait_until
from .pipelines import apply, trainer_spent, trainjob, wait_condition, workflows
from .real import NODE, Json, exit_codes, logs, none_admitted, step_pods

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real-node")]

LOW, HIGH = 100, 1000
# the trainer step asks 2 x (100m, 128Mi) (TrainJob resourcesPerNode), the urgent pod 200m, 256Mi:
# either fits in 300m / 512Mi, both do not.
QUOTA = {"cpu": "300m", "memory": "512Mi"}
URGENT_REQUESTS = {"cpu": "200m", "memory": "256Mi"}
URGENT_SECONDS = 15
TRAIN = {"TRAIN_STEPS": "60", "STEP_SLEEP_SECONDS": "0.5"}  # about 30 s of training
KILLED = re.compile(r"^node: \w+ [(]exit code (\d+)[)]$")


@pytest.fixture
def priorities(kube: Kube, namespace: str) -> Iterator[tuple[str, str]]:
    """A WorkloadPriorityClass pair (low, high), cluster-scoped, deleted afterwards."""
    names = (f"{namespace}-low", f"{namespace}-high")
    for name, value in zip(names, (LOW, HIGH), strict=True):
        kube.create(
            KUEUE,
            "workloadpriorityclasses",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            },
        )
    yield names
    for name in names:
        kube.delete(KUEUE, "workloadpriorityclasses", name)


def preempting_trainer_queue(kube: Kube, namespace: str) -> None:
    """The test's trainer-cq (made by ``real_example``): preemption within the ClusterQueue of
    lower priorities, a quota that fits one workload."""
    name = f"{namespace}-trainer-cq"
    cq = kube.get(KUEUE, "clusterqueues", name)
    assert cq is not None
    cq["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    (group,) = cq["spec"]["resourceGroups"]
    (flavor,) = group["flavors"]
    flavor["resources"] = [{"name": k, "nominalQuota": v} for k, v in QUOTA.items()]
    kube.custom.replace_cluster_custom_object(*KUEUE, "clusterqueues", name, cq)
    got = kube.get(KUEUE, "clusterqueues", name)
    assert got is not None and got["spec"]["preemption"]["withinClusterQueue"] == "LowerPriority"
    wait_until(
        "trainer-cq Active",
        lambda: condition_is(kube.get(KUEUE, "clusterqueues", name), "Active"),
        timeout=30,
    )


def urgent_pod(namespace: str, priority: str) -> Json:
    """A plain pod Kueue manages (the namespace is labelled for its pod integration) on the
    trainer's LocalQueue; the real flavor sends it to the real node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "urgent",
            "namespace": namespace,
            "labels": {
                "kueue.x-k8s.io/queue-name": "trainer-queue",
                "kueue.x-k8s.io/priority-class": priority,
            },
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 5,
            "containers": [
                {
                    "name": "urgent",
                    "image": "trainweave.local/workload:dev",
                    "imagePullPolicy": "Never",
                    "command": [
                        "python3",
                        "-c",
                        f"import time; time.sleep({URGENT_SECONDS}); print('urgent done')",
                    ],
                    "resources": {"requests": URGENT_REQUESTS},
                }
            ],
        },
    }


def running(pod: Pod, container: str) -> bool:
    return any(
        s.name == container and s.state is not None and s.state.running is not None
        for s in pod.status.container_statuses or []
    )


def urgent_workload(kube: Kube, namespace: str) -> Json | None:
    return next(
        (
            wl
            for wl in kube.list(KUEUE, "workloads", namespace)
            if any(o.get("name") == "urgent" for o in wl["metadata"].get("ownerReferences") or [])
        ),
        None,
    )


def test_preempted_trainer_is_killed_for_real_and_argo_brings_it_back(
    kube: Kube,
    namespace: str,
    real_example: Any,
    priorities: tuple[str, str],
    controller: ControllerProc,
) -> None:
    low, high = priorities
    preempting_trainer_queue(kube, namespace)
    tj, rt = real_example()
    env = {e["name"]: e for e in tj["spec"]["trainer"]["env"]}
    for k, v in TRAIN.items():  # the factory appends, and TRAIN_STEPS is set already
        env.setdefault(k, {"name": k})["value"] = v
    tj["spec"]["trainer"]["env"] = list(env.values())
    tj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/priority-class"] = low
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]
    group = f"{name}-node-a0"
    seen_tj: set[tuple[str, str, str]] = set()

    def watch_tj() -> None:
        for c in (trainjob(kube, namespace, name).get("status") or {}).get("conditions") or []:
            seen_tj.add((c["type"], c["status"], c.get("reason", "")))
        assert ("Failed", "True") not in {(t, s) for t, s, _ in seen_tj}, seen_tj

    # 1. both trainer containers really run on the real node, training has begun
    def training() -> list[Pod] | None:
        watch_tj()
        pods = step_pods(kube, namespace, "node")
        if len(pods) != 2 or not all(running(p, "node") for p in pods):
            return None
        return (
            pods
            if all("rendezvous complete" in logs(kube, namespace, p, "node") for p in pods)
            else None
        )

    first = wait_until("both trainer containers running and training", training, timeout=300)
    assert all(p.spec.node_name == NODE for p in first)
    first_uids = {p.metadata.uid: p.metadata.name for p in first}
    wl = kube.workload(namespace, group)
    assert wl is not None and condition_is(wl, "QuotaReserved"), wl
    uid = wl["metadata"]["uid"]
    assert wl["spec"]["priorityClassRef"]["name"] == low, wl["spec"]
    assert wl["spec"].get("priority") == LOW, wl["spec"]

    # 2. the urgent pod arrives: Kueue evicts the low step Workload (same object)
    t0 = time.monotonic()
    kube.core.create_namespaced_pod(namespace, cast(Any, urgent_pod(namespace, high)))
    wl = kube.wait_workload(
        namespace,
        group,
        lambda w: condition_is(w, "Evicted") and condition_is(w, "QuotaReserved", "False"),
        "evicted",
        timeout=60,
    )
    t_evicted = time.monotonic() - t0
    assert wl["metadata"]["uid"] == uid
    ev, pre = condition(wl, "Evicted"), condition(wl, "Preempted")
    assert ev and ev["reason"] == "Preempted", ev
    assert pre and pre["status"] == "True" and pre["reason"] == "InClusterQueue", pre

    # 3. the kubelet kills the trainer containers: each first pod is deleted and its container
    # terminated with a non-zero code (Kueue's finalizer keeps it a while), or already gone
    killed: dict[str, int | None] = {}
    reasons: dict[str, str] = {}

    def all_killed() -> bool:
        watch_tj()
        now = {p.metadata.uid: p for p in kube.pods(namespace)}
        for pod_uid, pod_name in first_uids.items():
            pod = now.get(pod_uid)
            if pod is None:
                killed.setdefault(pod_name, None)
                continue
            code = exit_codes(pod).get("node")
            if code is not None:
                assert pod.metadata.deletion_timestamp is not None, pod_name
                killed[pod_name] = code
                for c in pod.status.conditions or []:
                    if c.type == "TerminationTarget":
                        reasons[pod_name] = c.reason
        return len(killed) == len(first_uids)

    wait_until("trainer containers killed", all_killed, timeout=60)
    t_killed = time.monotonic() - t0
    assert all(code != 0 for code in killed.values()), killed  # None: gone before it was seen
    assert set(reasons.values()) <= {"WorkloadEvictedDueToPreempted"}, reasons

    # Argo saw the pods fail with the real exit code and retries them (no budget used up)
    def retried() -> list[Json] | None:
        watch_tj()
        (wf,) = workflows(kube, namespace)
        nodes = pod_nodes(wf, "node-0-")
        return nodes if len(nodes) >= 4 else None

    nodes = wait_until("Argo retried both trainer pods", retried, timeout=90)
    t_retried = time.monotonic() - t0
    failed = [n for n in nodes if n["phase"] in ("Failed", "Error")]
    assert len(failed) == 2, [(n["displayName"], n["phase"], n.get("message")) for n in nodes]
    argo_codes = {}
    for n in failed:
        m = KILLED.match(n.get("message") or "")
        assert m, n
        argo_codes[n["displayName"]] = int(m[1])
    # SIGTERM kills a rank (143); a rank whose peer died first may exit 4 (peer lost) before its
    # own SIGTERM lands, and Argo judges that 4 as an ordinary failure (see docs/real-containers.md)
    observed = {c for c in killed.values() if c is not None}
    assert observed <= set(argo_codes.values()), (killed, argo_codes)
    assert 143 in argo_codes.values() and set(argo_codes.values()) <= {143, 4}, argo_codes

    # 4. the urgent pod runs on the real node and succeeds; the step waits meanwhile
    def urgent_done() -> Pod | None:
        watch_tj()
        wl = kube.workload(namespace, group)
        assert wl is not None and wl["metadata"]["uid"] == uid
        pod: Pod = kube.core.read_namespaced_pod("urgent", namespace)
        if pod.status.phase != "Succeeded":
            assert not condition_is(wl, "QuotaReserved"), "re-admitted while the urgent pod runs"
            return None
        return pod

    pod = wait_until("urgent pod Succeeded", urgent_done, timeout=120)
    t_urgent = time.monotonic() - t0
    assert pod.spec.node_name == NODE
    assert "urgent done" in logs(kube, namespace, pod, "urgent")
    uwl = urgent_workload(kube, namespace)
    assert uwl is not None and uwl["spec"]["priorityClassRef"]["name"] == high, uwl

    # 5. the same Workload is re-admitted, the retried trainer trains from the start, the
    # TrainJob ends Complete with a trained model
    kube.wait_workload(
        namespace, group, lambda w: condition_is(w, "QuotaReserved"), "re-admitted", timeout=120
    )
    t_readmitted = time.monotonic() - t0
    got = wait_condition(kube, namespace, "Complete", timeout=300, name=name)
    t_complete = time.monotonic() - t0
    watch_tj()
    failure = condition(got, "Failed")
    assert failure is None or failure["status"] != "True"
    (wf,) = workflows(kube, namespace)
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")
    wl = kube.workload(namespace, group)
    assert wl is not None and wl["metadata"]["uid"] == uid
    fin = condition(wl, "Finished")
    assert fin and fin["reason"] == "Succeeded", fin

    second = [p for p in step_pods(kube, namespace, "node") if p.metadata.uid not in first_uids]
    assert len(second) == 2, [p.metadata.name for p in step_pods(kube, namespace, "node")]
    hashes = set()
    for p in second:
        assert p.spec.node_name == NODE
        assert exit_codes(p).get("node") == 0, exit_codes(p)
        log = logs(kube, namespace, p, "node")
        m = re.search(r"world=2: final loss=([0-9.]+) model_sha256=([0-9a-f]{64})", log)
        assert m, log[-2000:]
        assert float(m[1]) < 0.05, m[0]
        hashes.add(m[2])
    assert len(hashes) == 1, hashes
    (exporter,) = step_pods(kube, namespace, "model-exporter")
    assert "learned weights=" in logs(kube, namespace, exporter, "model-exporter")
    wait_until("no Workload holds quota", lambda: none_admitted(kube, namespace), timeout=120)

    print(
        f"\nkilled (kubelet exit codes): {killed}; TerminationTarget: {reasons}; "
        f"Argo: {argo_codes}\nTrainJob conditions seen: {sorted(seen_tj)}\n"
        f"after the urgent pod's creation: evicted {t_evicted:.1f}s, killed {t_killed:.1f}s, "
        f"retried {t_retried:.1f}s, urgent Succeeded {t_urgent:.1f}s, "
        f"re-admitted {t_readmitted:.1f}s, TrainJob Complete {t_complete:.1f}s"
    )


ROUNDS = 5  # issue 20: the preemption repeated at least 5 times in one run


def budget_spent(kube: Kube, namespace: str) -> dict[str, int]:
    """The trainer's counted failures per rank, as the controller judges its Workflow now."""
    (wf,) = workflows(kube, namespace)
    return trainer_spent(wf)


def test_five_preemptions_cost_no_retry(
    kube: Kube,
    namespace: str,
    real_example: Any,
    priorities: tuple[str, str],
    controller: ControllerProc,
) -> None:
    """The trainer (``backoffLimitPerIndex: 2``) is preempted ROUNDS times while it trains; each
    time both ranks die (143, or 4 for a rank that lost its peer first) and the budget consumed
    stays 0; the same Workload is re-admitted each time and the TrainJob ends Complete."""
    low, high = priorities
    preempting_trainer_queue(kube, namespace)
    tj, rt = real_example()
    env = {e["name"]: e for e in tj["spec"]["trainer"]["env"]}
    for k, v in TRAIN.items():
        env.setdefault(k, {"name": k})["value"] = v
    tj["spec"]["trainer"]["env"] = list(env.values())
    tj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/priority-class"] = low
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]
    group = f"{name}-node-a0"
    gone: set[str] = set()  # uids of the trainer pods preempted so far
    codes: list[dict[str, int | None]] = []

    def not_failed() -> None:
        cond = condition(trainjob(kube, namespace, name), "Failed")
        assert not (cond and cond["status"] == "True"), cond

    for round_ in range(ROUNDS):

        def training(gone: set[str] = gone) -> list[Pod] | None:
            not_failed()
            pods = [p for p in step_pods(kube, namespace, "node") if p.metadata.uid not in gone]
            if len(pods) != 2 or not all(running(p, "node") for p in pods):
                return None
            ok = all("rendezvous complete" in logs(kube, namespace, p, "node") for p in pods)
            return pods if ok else None

        # Argo waits its flat 10 s backoff (controller Workflows), then Kueue re-admits the group
        pods = wait_until(f"round {round_}: both ranks training", training, timeout=300)
        wl = kube.workload(namespace, group)
        assert wl is not None and condition_is(wl, "QuotaReserved"), wl
        uid = wl["metadata"]["uid"]
        urgent = urgent_pod(namespace, high)
        urgent["metadata"]["name"] = f"urgent-{round_}"
        kube.core.create_namespaced_pod(namespace, cast(Any, urgent))
        kube.wait_workload(
            namespace, group, lambda w: condition_is(w, "Evicted"), "evicted", timeout=60
        )
        killed: dict[str, int | None] = {}

        def all_killed(pods: list[Pod] = pods, killed: dict[str, int | None] = killed) -> bool:
            not_failed()
            now = {p.metadata.uid: p for p in kube.pods(namespace)}
            for p in pods:
                live = now.get(p.metadata.uid)
                code = exit_codes(live).get("node") if live is not None else None
                if live is None or code is not None:
                    killed[p.metadata.name] = code
            return len(killed) == len(pods)

        wait_until(f"round {round_}: ranks killed", all_killed, timeout=60)
        codes.append(killed)
        gone.update(p.metadata.uid for p in pods)

        def urgent_done(round_: int = round_) -> bool:
            not_failed()
            pod: Pod = kube.core.read_namespaced_pod(f"urgent-{round_}", namespace)
            return pod.status is not None and pod.status.phase == "Succeeded"

        wait_until(f"round {round_}: urgent pod Succeeded", urgent_done, timeout=120)
        kube.wait_workload(
            namespace, group, lambda w: condition_is(w, "QuotaReserved"), "re-admitted", 600
        )
        got = kube.workload(namespace, group)
        assert got is not None and got["metadata"]["uid"] == uid  # the same Workload each time
        assert budget_spent(kube, namespace) == {}, (round_, killed)

    wait_condition(kube, namespace, "Complete", timeout=600, name=name)
    assert budget_spent(kube, namespace) == {}
    (wf,) = workflows(kube, namespace)
    assert wf["status"]["phase"] == "Succeeded"
    record = view(wf).disruptions["node"]
    assert {m.reason for m in record} == {"WorkloadEvictedDueToPreempted"}
    print(f"\n{ROUNDS} preemptions, trainer exit codes per round: {codes}; budget consumed 0")
