"""The MPI runtime for real: examples/real/mpi_{runtime,trainjob}.yaml on the real node of
hack/node.py. Two node pods run sshd with the TrainJob's SSH Secret; the launcher runs
``mpirun`` over the hostfile ConfigMap, which starts one rank per node through SSH (OpenMPI's
orted); every rank checks in with rank 0 over TCP (examples/real/mpi_hello.py). One gang on the
trainer queue, admitted on the real flavor; the TrainJob ends Complete when the launcher exits 0.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from .controller_proc import ControllerProc
from .kube import KUEUE, Kube, Pod, Timeout, condition, wait_until
from .pipelines import apply, wait_condition, workflows
from .real import NODE, exit_codes, logs, step_pods

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real-node")]


def test_mpirun_over_ssh_runs_a_rank_on_every_node(
    kube: Kube,
    namespace: str,
    real_node: str,
    real_mpi_example: Any,
    controller: ControllerProc,
) -> None:
    tj, rt = real_mpi_example
    apply(kube, namespace, tj, rt)
    name = tj["metadata"]["name"]

    # Logs are read as soon as the launcher's container ends: once the workflow is over the
    # node pods (Argo daemons) are stopped, and the pods' logs may be gone by the time the
    # TrainJob's Complete is seen.
    def launcher_ended() -> Pod | None:
        pods = step_pods(kube, namespace, "launcher")
        ended = [p for p in pods if exit_codes(p).get("node") is not None]
        return ended[0] if ended else None

    try:
        launcher = wait_until("the launcher's node container ends", launcher_ended, timeout=180)
        log = logs(kube, namespace, launcher, "node")
        nodes = sorted(step_pods(kube, namespace, "node"), key=lambda p: p.metadata.name)
        sshd = {p.metadata.name: logs(kube, namespace, p, "main") for p in nodes}
    except Timeout:
        for pod in kube.pods(namespace):
            for c in pod.spec.containers:
                print(f"--- {pod.metadata.name} -c {c.name} {exit_codes(pod)}")
                print(logs(kube, namespace, pod, c.name)[-3000:])
        raise
    print(f"--- {launcher.metadata.name} (kubectl logs -c node)\n{log}")
    assert launcher.spec.node_name == real_node == NODE
    assert exit_codes(launcher).get("node") == 0, (exit_codes(launcher), log[-3000:])

    got = wait_condition(kube, namespace, "Complete", timeout=120, name=name)
    failure = condition(got, "Failed")
    assert failure is None or failure["status"] != "True"
    (wf,) = workflows(kube, namespace)
    assert wf["status"]["phase"] == "Succeeded", wf["status"].get("message")

    hosts = [p.spec.hostname for p in nodes]
    assert hosts == [f"{name}-node-0-0", f"{name}-node-0-1"], hosts
    for pod in nodes:
        assert pod.spec.node_name == NODE, pod.metadata.name
        # sshd let the launcher's key in (sshd -e logs to the container's stderr)
        assert "Accepted publickey for root" in sshd[pod.metadata.name], sshd

    # each rank ran on its own node pod: mpirun placed rank r on the hostfile's r-th host
    ranks = dict(re.findall(r"rank=(\d) size=2 host=(\S+)", log))
    assert ranks == {"0": hosts[0], "1": hosts[1]}, log
    assert f"rank=0 heard from all 2 ranks: 0@{hosts[0]} 1@{hosts[1]} sum=1" in log, log
    assert f"rank=1 checked in with rank 0 at {hosts[0]}.{name}: sum=1" in log, log

    adm = [
        (wl.get("status") or {}).get("admission") for wl in kube.list(KUEUE, "workloads", namespace)
    ]
    assert [a["clusterQueue"] for a in adm if a] == [f"{namespace}-trainer-cq"], adm
    for a in adm:
        for psa in (a or {}).get("podSetAssignments") or []:
            assert set((psa.get("flavors") or {}).values()) <= {"real"}, psa
