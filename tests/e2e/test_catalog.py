"""Every runtime of Trainer v2.3.0's catalog, with a TrainJob the Kubeflow SDK made, under the
controller on the engines; and ``trainweave render`` equals what the controller creates.

The cases come from the static oracle's harness (tests/oracle): the pinned module's
``manifests/base/runtimes`` and the SDK's own TrainJob builder. Made to fit kwok, and nothing
else changed: the ClusterTrainingRuntime becomes a TrainingRuntime of the test namespace (no
cluster-scoped leftovers), containers without a command get ``true`` (Argo's emissary cannot
look image entrypoints up offline), jobs a successPolicy does not target (MPI's sshd nodes) run
until stopped instead of kwok's default second, and each PVC of ``volumeClaimPolicies`` gets a static
PersistentVolume to bind (kwok has no provisioner). The queue is the SDK's way: the
``kueue.x-k8s.io/queue-name`` label on the TrainJob. Every pod that runs is checked for
referential integrity by the ``namespace`` fixture.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from kubernetes import client

from tests.oracle import harness

from .controller_proc import ControllerProc
from .kube import ARGO, Kube, condition, default_kubeconfig, wait_until

pytestmark = pytest.mark.e2e
TRAINER = ("trainer.kubeflow.org", "v1alpha1")
Json = dict[str, Any]

CASES = [
    "torchtune-llama3.2-1b/torchtune-lora",
    "torchtune-qwen2.5-1.5b/torchtune-full",
    "jax-distributed/custom-fn-2nodes-fractional-cpu",
    "xgboost-distributed/custom-fn-gpu",
    "deepspeed-distributed/custom-fn-2nodes-fractional-cpu",
    "mlx-distributed/custom-fn-2nodes-fractional-cpu",
    "torch-distributed/custom-fn-gpu",
]


@pytest.fixture(scope="module")
def sdk_cases() -> dict[str, harness.Case]:
    return {c.name: c for c in harness.sdk_cases(harness.catalog())}


def for_kwok(case: harness.Case, ns: str) -> tuple[Json, Json]:
    """The case's TrainJob and runtime in ``ns``, fitted to kwok as the module says."""
    tj, rt = copy.deepcopy(case.trainjob), copy.deepcopy(case.runtime)
    rt["kind"] = "TrainingRuntime"
    rt["metadata"] = {**rt["metadata"], "namespace": ns}
    tj["metadata"]["namespace"] = ns
    tj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "gpu"
    tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    targets = (rt["spec"]["template"]["spec"].get("successPolicy") or {}).get(
        "targetReplicatedJobs"
    ) or []
    for rjob in rt["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]
        for c in pod["spec"]["containers"]:
            c.setdefault("command", ["true"])
        if targets and rjob["name"] not in targets:  # MPI's sshd nodes run until stopped
            pod.setdefault("metadata", {}).setdefault("annotations", {})[
                "trainweave.test/duration"
            ] = "10m"
    return tj, rt


def volume_for(kube: Kube, name: str, tpl: Json, claim: client.V1ObjectReference | None) -> str:
    """A hostPath PersistentVolume that fits a volumeClaimPolicies template (pre-bound to
    ``claim`` when the PVC's name is known)."""
    meta = client.V1ObjectMeta(name=name[:63])
    pv = client.V1PersistentVolume(
        metadata=meta,
        spec=client.V1PersistentVolumeSpec(
            capacity={"storage": tpl["spec"]["resources"]["requests"]["storage"]},
            access_modes=tpl["spec"]["accessModes"],
            host_path=client.V1HostPathVolumeSource(path=f"/tmp/{name[:63]}"),
            claim_ref=claim,
            storage_class_name="",
        ),
    )
    kube.core.create_persistent_volume(pv)
    return str(meta.name)


def static_volumes(kube: Kube, ns: str, tj: Json, rt: Json) -> list[str]:
    """A PersistentVolume pre-bound to each PVC the runtime's volumeClaimPolicies make."""
    made = []
    for policy in rt["spec"]["template"]["spec"].get("volumeClaimPolicies") or []:
        for tpl in policy["templates"]:
            claim = f"{tpl['metadata']['name']}-{tj['metadata']['name']}"
            ref = client.V1ObjectReference(namespace=ns, name=claim)
            made.append(volume_for(kube, f"{ns}-{claim}", tpl, ref))
    return made


@pytest.mark.parametrize("name", CASES)
def test_catalog_runtime_with_sdk_trainjob_completes(
    kube: Kube,
    namespace: str,
    queues: Any,
    controller: ControllerProc,
    sdk_cases: dict[str, harness.Case],
    name: str,
) -> None:
    queues()
    tj, rt = for_kwok(sdk_cases[name], namespace)
    pvs = static_volumes(kube, namespace, tj, rt)
    try:
        kube.create(TRAINER, "trainingruntimes", rt, namespace)
        kube.create(TRAINER, "trainjobs", tj, namespace)
        job = tj["metadata"]["name"]

        def done() -> Json | None:
            got = cast(Json, kube.get(TRAINER, "trainjobs", job, namespace))
            for ctype in ("Complete", "Failed"):
                c = condition(got, ctype)
                if c and c.get("status") == "True":
                    return got
            return None

        got = wait_until(f"TrainJob {job} finished", done, timeout=240)
        assert condition(got, "Failed") is None, condition(got, "Failed")
        complete = condition(got, "Complete")
        assert complete is not None and complete["reason"] == "AllJobsCompleted"
        jobs = {j["name"] for j in got["status"]["jobsStatus"]}
        assert jobs == {r["name"] for r in rt["spec"]["template"]["spec"]["replicatedJobs"]}
        # Pods may already be gone once the TrainJob is Complete: read what ran from Argo.
        wf = kube.workflow(namespace, job)
        ran = [
            n
            for n in (wf.get("status") or {}).get("nodes", {}).values()
            if n.get("type") == "Pod" and n.get("phase") == "Succeeded"
        ]
        assert ran, "no pod succeeded"
        if name.startswith("torchtune"):
            (tpl,) = [t for t in wf["spec"]["templates"] if t["name"] == "node"]
            argv = tpl["containerSet"]["containers"][0]["command"]
            assert argv[:2] == ["tune", "run"] and "--config" in argv, argv
    finally:
        for pv in pvs:
            kube.core.delete_persistent_volume(pv)


def test_render_equals_what_the_controller_creates(
    kube: Kube, namespace: str, queues: Any, controller: ControllerProc, tmp_path: Path
) -> None:
    """The MPI example: ``trainweave render --controller`` and the controller's children are
    the same objects (every rendered field as the cluster holds it), apart from the controller's
    ownerReference and the freshly drawn SSH keys."""
    root = Path(__file__).resolve().parents[2]
    tj = yaml.safe_load((root / "examples/mpi/trainjob.yaml").read_text())
    rt = yaml.safe_load((root / "examples/mpi/runtime.yaml").read_text())
    for obj in (tj, rt):
        obj["metadata"]["namespace"] = namespace
    rt["kind"] = tj["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    queues()
    kube.create(TRAINER, "trainingruntimes", rt, namespace)
    # The CLI gets the runtime as the API server holds it (spec defaulted by the CRD schema),
    # which is what the controller reads.
    live_rt = cast(Json, kube.get(TRAINER, "trainingruntimes", rt["metadata"]["name"], namespace))
    keep = ("name", "namespace", "uid", "labels", "annotations")
    live_rt["metadata"] = {k: v for k, v in live_rt["metadata"].items() if k in keep}
    (tmp_path / "tj.yaml").write_text(yaml.safe_dump(tj))
    (tmp_path / "rt.yaml").write_text(yaml.safe_dump(live_rt))
    out = subprocess.run(
        [sys.executable, "-m", "trainweave.cli", "render", str(tmp_path / "tj.yaml"),
         "--runtime", str(tmp_path / "rt.yaml"), "--controller"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
    live_tj = kube.create(TRAINER, "trainjobs", tj, namespace)
    name = tj["metadata"]["name"]
    wait_until(
        "Workflow created", lambda: kube.list(ARGO, "workflows", namespace) or None, timeout=60
    )
    owner = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "name": name,
        "uid": live_tj["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    assert {d["kind"] for d in rendered} == {
        "Workflow", "Service", "ConfigMap", "Secret",
    }  # fmt: skip
    for doc in rendered:
        live = read(kube, namespace, doc)
        assert live["metadata"]["ownerReferences"] == [owner], doc["kind"]
        want = copy.deepcopy(doc)
        if doc["kind"] == "Secret":  # keys are drawn per render: compare their shape
            assert set(live["data"]) == set(want.pop("data"))
            private = live["data"]["ssh-privatekey"]
            assert "BEGIN EC PRIVATE KEY" in _b64(private)
            assert _b64(live["data"]["ssh-publickey"]).startswith("ecdsa-sha2-nistp521 ")
        assert_subset(want, live, f"{doc['kind']} {doc['metadata']['name']}")


def _b64(value: str) -> str:
    import base64

    return base64.b64decode(value).decode()


def read(kube: Kube, ns: str, doc: Json) -> Json:
    name, kind = doc["metadata"]["name"], doc["kind"]
    if kind == "Workflow":
        return cast(Json, kube.get(ARGO, "workflows", name, ns))
    read_fn = {
        "Service": kube.core.read_namespaced_service,
        "ConfigMap": kube.core.read_namespaced_config_map,
        "Secret": kube.core.read_namespaced_secret,
        "PersistentVolumeClaim": kube.core.read_namespaced_persistent_volume_claim,
    }[kind]
    out: Json = kube.api.sanitize_for_serialization(  # type: ignore[no-untyped-call]
        read_fn(name, ns)
    )
    return out


def assert_subset(want: Any, got: Any, where: str) -> None:
    """Every field of ``want`` is in ``got`` with the same value (the server may add fields)."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        for key, value in want.items():
            assert key in got, f"{where}.{key} missing"
            assert_subset(value, got[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{where}: {want} != {got}"
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            assert_subset(a, b, f"{where}[{i}]")
    else:
        assert want == got, f"{where}: {want!r} != {got!r}"


# --- the Kubeflow SDK's own calls, end to end ---------------------------------------------
SDK_SCRIPT = """
import json, sys
from kubeflow.common.types import KubernetesBackendConfig
from kubeflow.trainer import TrainerClient
from kubeflow.trainer.options.kubernetes import Labels
from kubeflow.trainer.types.types import (
    BuiltinTrainer, CustomTrainer, LoraConfig, TorchTuneConfig
)

ns, kubeconfig = sys.argv[1:3]
c = TrainerClient(KubernetesBackendConfig(namespace=ns, config_file=kubeconfig))
queue = Labels({"kueue.x-k8s.io/queue-name": "gpu"})


def train_fn():
    print("hello from rank", __import__("os").environ.get("PET_NODE_RANK"))


out = {"runtimes": sorted(r.name for r in c.list_runtimes())}
custom = c.train(
    runtime="torch-distributed",
    trainer=CustomTrainer(func=train_fn, num_nodes=2, resources_per_node={"cpu": "1500m"}),
    options=[queue],
)
tune = c.train(
    runtime="torchtune-llama3.2-1b",
    trainer=BuiltinTrainer(
        config=TorchTuneConfig(
            num_nodes=1, peft_config=LoraConfig(lora_rank=8), resources_per_node={"gpu": 2}
        )
    ),
    options=[queue],
)
for name in (custom, tune):
    job = c.wait_for_job_status(name, status={"Complete"}, timeout=240, polling_interval=2)
    got = c.get_job(name)
    out[name] = {
        "waited": job.status,
        "runtime": got.runtime.name,
        "num_nodes": got.num_nodes,
        "steps": sorted(s.name for s in got.steps),
    }
out["listed"] = sorted(j.name for j in c.list_jobs())
c.delete_job(custom)
out["after_delete"] = sorted(j.name for j in c.list_jobs())
out["order"] = [custom, tune]
print(json.dumps(out))
"""


def test_kubeflow_sdk_trains_waits_lists_and_deletes(
    kube: Kube,
    namespace: str,
    queues: Any,
    controller: ControllerProc,
    sdk_cases: dict[str, harness.Case],
    tmp_path: Path,
) -> None:
    """TrainerClient().train() with CustomTrainer and BuiltinTrainer(TorchTuneConfig) on the
    catalog's runtimes (here as TrainingRuntimes of the namespace, fitted to kwok), then
    wait_for_job_status, get_job, list_jobs, list_runtimes and delete_job, against trainweave."""
    queues()
    for name in ("torch-distributed/no-trainer", "torchtune-llama3.2-1b/torchtune-lora"):
        _, rt = for_kwok(sdk_cases[name], namespace)
        kube.create(TRAINER, "trainingruntimes", rt, namespace)
    tune_rt = for_kwok(sdk_cases["torchtune-llama3.2-1b/torchtune-lora"], namespace)[1]
    (tpl,) = tune_rt["spec"]["template"]["spec"]["volumeClaimPolicies"][0]["templates"]
    # the SDK names the TrainJob, so the PV is not pre-bound: it binds to the one PVC that fits
    pvs = [volume_for(kube, f"{namespace}-initializer", tpl, None)]
    try:
        script = tmp_path / "sdk_train.py"  # a file: the SDK ships train_fn's source code
        script.write_text(SDK_SCRIPT)
        out = subprocess.run(
            [str(harness.sdk_python()), str(script), namespace, str(default_kubeconfig())],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        for pv in pvs:
            kube.core.delete_persistent_volume(pv)
    print(out.stdout.strip().splitlines()[-1])  # docs/controller.md shows it (pytest -s)
    custom, tune = got["order"]
    assert got["runtimes"] == ["torch-distributed", "torchtune-llama3.2-1b"]
    assert got[custom] == {
        "waited": "Complete",
        "runtime": "torch-distributed",
        "num_nodes": 2,
        "steps": ["node-0", "node-1"],
    }
    assert got[tune]["waited"] == "Complete" and got[tune]["num_nodes"] == 1
    assert {"dataset-initializer", "model-initializer", "node-0"} <= set(got[tune]["steps"])
    assert got["listed"] == sorted([custom, tune])
    assert got["after_delete"] == [tune]
    assert tune_rt["metadata"]["name"] == "torchtune-llama3.2-1b"
