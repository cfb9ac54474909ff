"""The static oracle: Kubeflow Trainer's own framework and trainweave on the same inputs.

Cases are every runtime of the pinned Trainer module's catalog (``manifests/base/runtimes``,
read from the Go module cache) x the TrainJobs the Kubeflow SDK 0.5 sends for it (made by the
SDK itself, ``sdk_trainjobs.py``). Upstream's answer comes from ``hack/oracle`` (built by
``hack/build.sh oracle``); trainweave's from ``adapters.trainjob.trainer.to_pipeline``. ``differences``
compares, per replicatedJob, the pod count and the pod template (containers, volumes and the
pod-level fields), and whether each side accepts the case.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import tempfile
import venv
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from tests.crds import module_dir
from tests.versions import PINS
from trainweave.adapters import render
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.errors import InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.quantity import parse
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]
ROOT = Path(__file__).parents[2]
TRAINER_MODULE = "github.com/kubeflow/trainer/v2"
SDK = "kubeflow==0.5.0"
NAMESPACE = "default"


@dataclass(frozen=True)
class Case:
    """One TrainJob on one runtime."""

    name: str
    trainjob: Json
    runtime: Json


def trainer_dir() -> Path:
    return module_dir(TRAINER_MODULE, PINS["TRAINER_VERSION"])


def catalog() -> list[Json]:
    """Every (Cluster)TrainingRuntime in the pinned module's manifests/base/runtimes."""
    out = []
    for path in sorted((trainer_dir() / "manifests" / "base" / "runtimes").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and str(doc.get("kind", "")).endswith("TrainingRuntime"):
                out.append(doc)
    return out


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trainweave"


def sdk_python() -> Path:
    """The SDK's own virtualenv (it pins kubernetes<36), created once in the user cache."""
    env = _cache() / "sdk-venv-kubeflow-0.5.0"
    py = env / "bin" / "python"
    env.parent.mkdir(parents=True, exist_ok=True)
    # e2e workers run at once (pytest-xdist): one creates the venv, the others wait for it
    with (env.parent / "sdk-venv.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (env / ".installed").exists():
            venv.create(env, with_pip=True, clear=True)
            subprocess.run([str(py), "-m", "pip", "install", "-q", SDK], check=True, timeout=600)
            (env / ".installed").touch()
    return py


def sdk_cases(runtimes: list[Json]) -> list[Case]:
    """Run the SDK's TrainJob builder for every runtime; one Case per TrainJob it sends."""
    with tempfile.TemporaryDirectory() as tmp:  # one file per caller: workers run at once
        source = Path(tmp) / "oracle-runtimes.json"
        source.write_text(json.dumps(runtimes))
        out = subprocess.run(
            [str(sdk_python()), str(Path(__file__).with_name("sdk_trainjobs.py")), str(source)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"sdk_trainjobs.py failed:\n{out.stderr[-3000:]}")
    by_name = {rt["metadata"]["name"]: rt for rt in runtimes}
    cases = []
    for made in json.loads(out.stdout):
        job = made["trainJob"]
        job["metadata"]["namespace"] = NAMESPACE
        cases.append(Case(f"{made['runtime']}/{made['case']}", job, by_name[made["runtime"]]))
    return cases


def oracle_binary() -> Path:
    """hack/oracle, built (once per source and Trainer version) by hack/build.sh oracle."""
    subprocess.run(["bash", str(ROOT / "hack" / "build.sh"), "oracle"], check=True, timeout=1800)
    eng = subprocess.run(
        ["bash", str(ROOT / "hack" / "build.sh"), "--print-dir"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return Path(eng) / "bin" / "oracle"


def upstream(cases: list[Case]) -> dict[str, Json]:
    """What Trainer's framework answers for each case, by case name."""
    payload = [{"name": c.name, "trainJob": c.trainjob, "runtime": c.runtime} for c in cases]
    crds = trainer_dir() / "manifests" / "base" / "crds"
    out = subprocess.run(
        [str(oracle_binary()), "--crds", str(crds)],
        input=json.dumps(payload), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"oracle failed:\n{out.stderr[-3000:]}")
    return {r["name"]: r for r in json.loads(out.stdout)}


# --- one normal form for both sides -------------------------------------------------------


def _quantity(value: Any) -> str:
    return str(Decimal(parse(value)).normalize()) if value is not None else ""


def _resources(res: Json | None) -> Json:
    return {
        section: {k: _quantity(v) for k, v in sorted((res or {}).get(section, {}).items())}
        for section in ("limits", "requests")
        if (res or {}).get(section)
    }


CONTAINER_FIELDS = (
    "image", "command", "args", "env", "envFrom", "ports", "volumeMounts", "securityContext",
    "workingDir",
)  # fmt: skip
POD_FIELDS = (
    "volumes", "tolerations", "nodeSelector", "affinity", "serviceAccountName",
    "securityContext", "imagePullSecrets",
)  # fmt: skip


def pod_form(pod_spec: Json) -> Json:
    """The fields of a pod spec the oracle compares, by path."""
    out: Json = {}
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or []:
            where = f"{key}[{c.get('name')}]"
            for f in CONTAINER_FIELDS:
                if c.get(f) not in (None, [], {}):
                    out[f"{where}.{f}"] = c[f]
            if _resources(c.get("resources")):
                out[f"{where}.resources"] = _resources(c.get("resources"))
    for f in POD_FIELDS:
        if pod_spec.get(f) not in (None, [], {}):
            out[f] = pod_spec[f]
    return out


def _env_order_free(case: Case) -> bool:
    """Upstream's env order is random here: Trainer's framework runs its plugins in Go map
    order (``framework/core/framework.go`` ranges over the registry), and for xgboost both
    PlainML and XGBoost add env to the node container."""
    policy = case.runtime.get("spec", {}).get("mlPolicy") or {}
    return "xgboost" in policy


def _sorted_env(jobs: dict[str, Json]) -> dict[str, Json]:
    return {
        job: {k: sorted(v, key=lambda e: e["name"]) if k.endswith(".env") else v
              for k, v in form.items()}
        for job, form in jobs.items()
    }  # fmt: skip


def upstream_jobs(answer: Json) -> dict[str, Json]:
    """Per replicatedJob of upstream's JobSet: pods and the pod form."""
    (jobset,) = [o for o in answer["objects"] if o.get("kind") == "JobSet"]
    out = {}
    for rj in jobset["spec"]["replicatedJobs"]:
        spec = rj["template"]["spec"]
        pods = int(spec.get("parallelism", 1)) * int(rj.get("replicas", 1))
        out[rj["name"]] = {"pods": pods, **pod_form(spec["template"].get("spec") or {})}
    return out


def trainweave_jobs(case: Case) -> tuple[dict[str, Json], list[str]]:
    """Per replicatedJob of trainweave's Pipeline: pods and the pod form; or its errors."""
    try:
        pipeline = to_pipeline(
            parse_trainjob(case.trainjob), parse_runtime(case.runtime), default_queue="q"
        )
    except InputErrors as e:
        return {}, [err.path for err in e.errors]
    out = {}
    for step in pipeline.steps:
        for job in step.jobs:
            out[job.name] = {"pods": job.pods, **pod_form(job.pod_template.get("spec") or {})}
    return out, []


def differences(case: Case, answer: Json) -> list[str]:
    """``<case>: <job>: <path>`` for every compared field where the two sides differ.

    Where both reject, one of trainweave's error paths must be upstream's field or lie under it.
    """
    ours, our_errors = trainweave_jobs(case)
    up_errors = answer["runtimeErrors"] + [e["field"] for e in answer["errors"]]
    if answer.get("buildError"):
        up_errors.append("build: " + answer["buildError"])
    if up_errors or our_errors:
        if bool(up_errors) != bool(our_errors):
            who = "trainweave" if our_errors else "upstream"
            return [f"{case.name}: rejected by {who} only: {(our_errors or up_errors)[0]}"]
        up_fields = {e["field"] for e in answer["errors"]}
        if up_fields and not any(o.startswith(u) for o in our_errors for u in up_fields):
            return [
                f"{case.name}: rejected naming {sorted(up_fields)[0]} upstream, {our_errors[0]} here"
            ]
        return []
    theirs = upstream_jobs(answer)
    if _env_order_free(case):
        ours, theirs = _sorted_env(ours), _sorted_env(theirs)
    out = object_differences(case, answer)
    for job in sorted(set(ours) | set(theirs)):
        a, b = ours.get(job, {}), theirs.get(job, {})
        for path in sorted(set(a) | set(b)):
            if a.get(path) != b.get(path):
                out.append(f"{case.name}: {job}: {path}")
    return out


# Upstream's JobSet controller, not Trainer, makes these (the oracle stops at the JobSet).
JOBSET_MADE = ("Service", "PersistentVolumeClaim")


def _object_form(obj: Json) -> Json:
    """What is compared of an object either side creates beside the pods."""
    data = obj.get("data") or {}
    form: Json = {"kind": obj.get("kind", "ConfigMap")}
    if form["kind"] == "Secret":
        form.update(type=obj.get("type"), immutable=obj.get("immutable"), keys=sorted(data))
    elif str(obj["metadata"]["name"]).endswith("-runtime-snapshot"):
        snapshot = yaml.safe_load(data.get("runtime") or "{}") or {}
        # its spec is the runtime as each side read it (upstream: CRD-defaulted Go structs)
        form.update(keys=sorted(data), runtime=(snapshot.get("metadata") or {}).get("name"))
    else:
        form.update(data=data)
    return form


def object_differences(case: Case, answer: Json) -> list[str]:
    """``<case>: object <name>: <field>`` for the Secrets and ConfigMaps upstream creates
    (Trainer's MPI Secret and hostfile, the runtime snapshot) against trainweave's render."""
    keys = KeyPair("test", "test")
    rendered = render.render(
        parse_trainjob(case.trainjob),
        parse_runtime(case.runtime),
        render.Options(ssh_keys=keys, default_queue="q"),
    )
    ours = {o["metadata"]["name"]: _object_form(o) for o in rendered if o["kind"] != "Workflow"}
    made = [o for o in answer["objects"] + answer["created"] if o.get("kind") != "JobSet"]
    theirs = {o["metadata"]["name"]: _object_form(o) for o in made}
    out = []
    for name in sorted(set(ours) | set(theirs)):
        if name not in theirs and ours[name]["kind"] in JOBSET_MADE:
            continue
        a, b = ours.get(name, {}), theirs.get(name, {})
        out += [
            f"{case.name}: object {name}: {k}"
            for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k)
        ]
    return out


def detail(case: Case, answer: Json, job: str, path: str) -> tuple[Any, Any]:
    """(trainweave's, upstream's) value at one differing path: for messages."""
    ours, _ = trainweave_jobs(case)
    theirs = upstream_jobs(answer)
    if _env_order_free(case):
        ours, theirs = _sorted_env(ours), _sorted_env(theirs)
    return ours.get(job, {}).get(path), theirs.get(job, {}).get(path)


def example_cases() -> list[Case]:
    """The project's own examples (examples/*/trainjob.yaml + runtime.yaml)."""
    out = []
    for folder in sorted((ROOT / "examples").iterdir()):
        tj, rt = folder / "trainjob.yaml", folder / "runtime.yaml"
        if tj.exists() and rt.exists():
            out.append(Case(f"example/{folder.name}", yaml.safe_load(tj.read_text()), _doc(rt)))
    return out


def _doc(path: Path) -> Json:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return next(d for d in docs if str(d.get("kind", "")).endswith("TrainingRuntime"))


def _runtime(node: Json, *, pod: Json | None = None, network: Json | None = None) -> Json:
    """A TrainingRuntime with one torch trainer job whose node container is ``node``."""
    spec: Json = {"replicatedJobs": [{
        "name": "node",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [node], **(pod or {})}}},
        },
    }]}  # fmt: skip
    if network is not None:
        spec["network"] = network
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": "rt", "namespace": NAMESPACE},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": spec}},
    }


def _trainjob(name: str, trainer: Json | None = None, patch: Json | None = None) -> Json:
    spec: Json = {"runtimeRef": {"name": "rt", "kind": "TrainingRuntime"}}
    if trainer is not None:
        spec["trainer"] = trainer
    if patch is not None:
        spec["runtimePatches"] = [{"manager": "example.com/test", "trainingRuntimeSpec": {"template": {
            "spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                "spec": patch}}}}]}}}}]  # fmt: skip
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


_NODE = {
    "name": "node",
    "image": "trainer:1",
    "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "8Gi"}},
    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    "securityContext": {"runAsUser": 1000, "runAsNonRoot": True},
}
_POD = {
    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}],
    "tolerations": [{"key": "pool", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
}


def merge_cases() -> list[Case]:
    """How TrainJob fields and runtimePatches merge into a runtime's pod (hand-made)."""
    rt = _runtime(_NODE, pod=_POD)
    return [
        Case(
            "merge/resources-per-node",
            _trainjob(
                "res",
                {
                    "numNodes": 2,
                    # an extended resource needs its limit (the API server's pod rules)
                    "resourcesPerNode": {
                        "requests": {"nvidia.com/gpu": "2", "cpu": "3"},
                        "limits": {"nvidia.com/gpu": "2"},
                    },
                },
            ),
            rt,
        ),
        Case(
            "merge/fractional-gpu-limit",
            _trainjob(
                "frac",
                {
                    "resourcesPerNode": {"limits": {"cpu": "2500m"}},
                },
            ),
            rt,
        ),
        Case(
            "merge/patch-tolerations",
            _trainjob(
                "tol",
                patch={
                    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            ),
            rt,
        ),
        Case(
            "merge/patch-mount-same-path",
            _trainjob(
                "mnt",
                patch={
                    "containers": [
                        {"name": "node", "volumeMounts": [{"name": "cache", "mountPath": "/data"}]}
                    ],
                },
            ),
            rt,
        ),
        Case(
            "merge/patch-security-context",
            _trainjob(
                "sec",
                patch={
                    "containers": [{"name": "node", "securityContext": {"runAsUser": 2000}}],
                    "nodeSelector": {"pool": "b"},
                },
            ),
            rt,
        ),
        Case(
            "merge/network-subdomain",
            _trainjob("sub", {"numNodes": 2}),
            _runtime(_NODE, pod=_POD, network={"subdomain": "other"}),
        ),
    ]


def _with_initializer(container: Json) -> Json:
    """``_runtime`` plus a ``dataset-initializer`` job running ``container``."""
    rt = _runtime(_NODE, pod=_POD)
    rt["spec"]["template"]["spec"]["replicatedJobs"].insert(0, {
        "name": "dataset-initializer",
        "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}},
            "spec": {"template": {"spec": {"containers": [container]}}},
        },
    })  # fmt: skip
    return rt


def initializer_cases() -> list[Case]:
    """The runtime must carry what a TrainJob's ``spec.initializer`` uses (jobset.go Validate)."""
    dataset = {"initializer": {"dataset": {"storageUri": "hf://org/data"}}}
    mounted = {"name": "dataset-initializer", "image": "init:1",
               "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}]}  # fmt: skip
    out = []
    for name, runtime, extra in (
        ("initializer/no-model-job", _with_initializer(mounted),
         {"initializer": {"model": {"storageUri": "hf://org/model"}}}),
        ("initializer/no-container-of-the-name", _with_initializer({**mounted, "name": "fetch"}),
         dataset),
        ("initializer/no-initializer-mount",
         _with_initializer({**mounted, "volumeMounts": [{"name": "cache", "mountPath": "/w"}]}),
         dataset),
    ):  # fmt: skip
        tj = _trainjob(name.split("/")[1])
        tj["spec"].update(extra)
        out.append(Case(name, tj, runtime))
    return out


def all_cases() -> list[Case]:
    """Every case the static oracle compares."""
    return sdk_cases(catalog()) + example_cases() + merge_cases() + initializer_cases()
