"""TrainJob + runtime checks that need no translation: rejected fields, names, initializers,
and what Kubeflow Trainer v2.3.0 refuses at admission (its runtime webhook, the runtime CRD's CEL
rules, the JobSet plugin's runtimePatches check).

Pure. Each function returns the InputErrors it finds; ``adapters.trainjob.trainer`` runs them
before building the Pipeline.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trainweave.adapters import names
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec, TrainJob
from trainweave.k8s_names import DNS1123_SUBDOMAIN_FMT
from trainweave.labels import TRAINJOB_ANCESTOR, Ancestor, Reason
from trainweave.model import Job

Json = dict[str, Any]


def jobset_errors(spec: RuntimeSpec) -> list[InputError]:
    js = spec.template.spec
    base = "spec.template.spec"
    errors = []
    rejected = {
        "suspend": (js.suspend, "suspend the TrainJob instead"),
        "managedBy": (js.managed_by, "the pipeline is managed by trainweave"),
        "startupPolicy": (
            js.startup_policy and js.startup_policy.startup_policy_order == "InOrder",
            "use dependsOn (InOrder is being deprecated by JobSet)",
        ),
    }
    for key, (value, why) in rejected.items():
        if value:
            errors.append(
                InputError(
                    f"{base}.{key}", f"is not supported: {why}", reason=Reason.UNSUPPORTED_FIELD
                )
            )
    fp = js.failure_policy
    if fp is not None and fp.rules:
        errors.append(
            InputError(
                f"{base}.failurePolicy.rules",
                "are not supported: every failure restarts the pipeline while maxRestarts lasts",
                reason=Reason.UNSUPPORTED_FIELD,
            )
        )
    if fp is not None and fp.restart_strategy == "InPlaceRestart":
        errors.append(
            InputError(
                f"{base}.failurePolicy.restartStrategy",
                "InPlaceRestart is not supported: a restart is a fresh Workflow attempt",
                reason=Reason.UNSUPPORTED_FIELD,
            )
        )
    sp = js.success_policy
    if sp is not None and sp.operator == "Any" and len(sp.target_replicated_jobs) != 1:
        errors.append(
            InputError(
                f"{base}.successPolicy.operator",
                "Any is supported only with one target: Argo cannot end a pipeline on the first of several jobs",
                reason=Reason.UNSUPPORTED_FIELD,
            )
        )
    if spec.pod_group_policy is not None:
        errors.append(
            InputError(
                "spec.podGroupPolicy",
                "is not supported: it asks the coscheduling/volcano scheduler to place every pod"
                " of the TrainJob at once, while trainweave admits each step as its own Kueue"
                " gang (all of a step's pods or none); remove it",
                reason=Reason.UNSUPPORTED_FIELD,
            )
        )
    return errors


# trainingruntime_webhook.go expectedContainerNames: the container each ancestor job must have
_REQUIRED_CONTAINER = {
    Ancestor.TRAINER: "node",
    Ancestor.DATASET_INITIALIZER: "dataset-initializer",
    Ancestor.MODEL_INITIALIZER: "model-initializer",
}


def runtime_errors(spec: RuntimeSpec) -> list[InputError]:
    """What Trainer refuses in a runtime before any TrainJob uses it.

    The (Cluster)TrainingRuntime webhook's ``validateReplicatedJobs``
    (kubeflow/trainer@v2.3.0 ``pkg/webhooks/trainingruntime_webhook.go``): a job labelled with
    an ancestor runs once (``replicas`` 1) and has that ancestor's container among its
    ``containers``; and the CRD's CEL rule (``manifests/base/crds``) on ``volumeClaimPolicies``
    (templates without a namespace). The one on ``mlPolicy`` (one policy at most) is the
    policies registry's (``policies.Registry.conflict_errors``).
    """
    errors = []
    for i, rj in enumerate(spec.template.spec.replicated_jobs):
        labels = (rj.template.get("metadata") or {}).get("labels") or {}
        label = labels.get(TRAINJOB_ANCESTOR)
        if label not in {a.value for a in Ancestor}:
            continue
        path = f"spec.template.spec.replicatedJobs[{i}]"
        if rj.replicas != 1:
            errors.append(
                InputError(
                    f"{path}.replicas",
                    f"always must be 1 in a job labelled {TRAINJOB_ANCESTOR}: {label}, got"
                    f" {rj.replicas}",
                    reason=Reason.INVALID_RUNTIME,
                )
            )
        pod = ((rj.template.get("spec") or {}).get("template") or {}).get("spec") or {}
        required = _REQUIRED_CONTAINER[Ancestor(label)]
        # none at all: the CRD's pod schema refuses it first (to_pipeline says so)
        if pod.get("containers") and container(pod, required) is None:
            errors.append(
                InputError(
                    f"{path}.template.spec.template.spec.containers",
                    f"must contain the required container for the ancestor: {label} (a"
                    f" container named {required!r})",
                    reason=Reason.INVALID_RUNTIME,
                )
            )
    for i, claims in enumerate(spec.template.spec.volume_claim_policies):
        for j, tpl in enumerate(claims.templates):
            # the CRD's CEL rule on volumeClaimPolicies: the PVC goes in the TrainJob's namespace
            if (tpl.get("metadata") or {}).get("namespace"):
                errors.append(
                    InputError(
                        f"spec.template.spec.volumeClaimPolicies[{i}].templates[{j}]"
                        ".metadata.namespace",
                        "namespace cannot be set for VolumeClaimPolicies templates",
                        reason=Reason.INVALID_RUNTIME,
                    )
                )
    return errors


# k8s.io/apimachinery pkg/util/validation IsDomainPrefixedPath: a DNS-1123 subdomain host, "/",
# then an HTTP path
_SUBDOMAIN = re.compile(DNS1123_SUBDOMAIN_FMT)
_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def manager_errors(trainjob: TrainJob) -> list[InputError]:
    """``spec.runtimePatches[i].manager``: a domain-prefixed path such as ``example.com/tuner``
    (the JobSet plugin's Validate, kubeflow/trainer@v2.3.0
    ``pkg/runtime/framework/plugins/jobset/jobset.go``, with ``IsDomainPrefixedPath``)."""
    errors = []
    for i, patch in enumerate(trainjob.spec.runtime_patches):
        host, slash, rest = patch.manager.partition("/")
        if (
            not slash
            or not rest
            or len(host) > 253
            or not _SUBDOMAIN.fullmatch(host)
            or not _HTTP_PATH.fullmatch(rest)
        ):
            errors.append(
                InputError(
                    f"spec.runtimePatches[{i}].manager",
                    f"{patch.manager!r} must be a domain-prefixed path (such as"
                    ' "acme.io/foo"): the domain of the tool that wrote the patch',
                    reason=Reason.INVALID_TRAINJOB,
                )
            )
    return errors


def initializer_errors(trainjob: TrainJob, raw_jobs: list[Json]) -> list[InputError]:
    init = trainjob.spec.initializer
    errors = []
    for which, spec in (
        ("dataset", init.dataset if init else None),
        ("model", init.model if init else None),
    ):
        if spec is None:
            continue
        name = f"{which}-initializer"
        job = next((j for j in raw_jobs if j["name"] == name), None)
        pod = (((job or {}).get("template") or {}).get("spec") or {}).get("template", {}).get(
            "spec"
        ) or {}
        found = container(pod, name)
        mounts = {m.get("name") for m in (found or {}).get("volumeMounts") or []}
        # jobset.go Validate names spec.runtimeRef: the runtime lacks what the TrainJob uses
        if job is None:
            errors.append(
                InputError(
                    "spec.runtimeRef",
                    f"must have {name} job when trainJob is configured with"
                    f" spec.initializer.{which}",
                )
            )
        elif found is None:
            errors.append(
                InputError(
                    "spec.runtimeRef",
                    f"must have container with name - {name} in the {name} job"
                    f" (spec.initializer.{which} is set)",
                )
            )
        elif "initializer" not in mounts:
            errors.append(
                InputError(
                    "spec.runtimeRef",
                    f"must have volumeMount with name - initializer in container {name} of the"
                    f" {name} job (spec.initializer.{which} is set)",
                )
            )
    return errors


def name_errors(trainjob: str, jobs: list[Job]) -> list[InputError]:
    errors = []
    for job in jobs:
        longest = names.pod_hostname(trainjob, job.name, job.replicas - 1, job.pods_per_replica - 1)
        if len(longest) > names.MAX_LABEL:
            errors.append(
                InputError(
                    "metadata.name",
                    f"{trainjob!r} gives pod hostname {longest!r} ({len(longest)} characters); a"
                    f" hostname may have at most {names.MAX_LABEL}: shorten the TrainJob name",
                )
            )
    return errors


# Container names Argo Workflows gives its own containers in every step pod
# (argo-workflows v4.1.4 workflow/common/common.go: InitContainerName, WaitContainerName,
# SupervisorContainerName, ArtifactPluginSidecarPrefix, ArtifactPluginInitPrefix). v4.1.4 refuses a
# containerSet container so named (workflow/validate/validate.go:904-908, IsArgoSidecar); on
# v4.0.7 the pod would hold two containers of one name, which the API server refuses.
ARGO_RESERVED = ("init", "wait", "supervisor")
ARGO_RESERVED_PREFIXES = ("artifact-plugin-", "init-artifact-")


def argo_reserved(name: str) -> str | None:
    """Why ``name`` cannot name a step pod's container (``ARGO_RESERVED``), or None."""
    if name in ARGO_RESERVED or name.startswith(ARGO_RESERVED_PREFIXES):
        return (
            f"{name!r} is a name Argo Workflows gives its own containers in every step pod"
            " (init, wait, supervisor, artifact-plugin-*, init-artifact-*): rename the container"
        )
    return None


def argo_name_errors(jobs: list[Job], index: Mapping[str, int]) -> list[InputError]:
    """A container or init container of a step pod named as one of Argo's own; ``index``:
    each job's position in the runtime's replicatedJobs (the error's path)."""
    errors = []
    for job in jobs:
        pod = job.pod_template.get("spec") or {}
        for key in ("containers", "initContainers"):
            for i, c in enumerate(pod.get(key) or []):
                if why := argo_reserved(str(c.get("name", ""))):
                    errors.append(
                        InputError(
                            f"spec.template.spec.replicatedJobs[{index[job.name]}].template.spec"
                            f".template.spec.{key}[{i}].name",
                            why,
                            reason=Reason.INVALID_RUNTIME,
                        )
                    )
    return errors


# One TrainJob is one Argo Workflow: one object holding a template per pod (about 150 bytes each
# in spec) and, as it runs, a node per pod and per container in its status, all under the API
# server's object size limit (etcd's 1.5 MiB request limit; Argo compresses node status past
# 1 MB). 2000 pods keeps the spec near 300 kB; beyond, the rendering itself grows without bound
# (numNodes: 1000000 took 22 GB before this limit). docs/inputs.md.
MAX_PODS = 2000


def size_errors(jobs: list[Job]) -> list[InputError]:
    """More pods than one Workflow can hold: the error names the largest job's count."""
    total = sum(job.pods for job in jobs)
    if total <= MAX_PODS:
        return []
    biggest = max(jobs, key=lambda job: job.pods)
    trainer = biggest.ancestor is Ancestor.TRAINER or biggest.name == "node"
    return [
        InputError(
            "spec.trainer.numNodes" if trainer else "spec.runtimeRef",
            f"gives {total} pods ({biggest.pods} in job {biggest.name!r}); a TrainJob may run at"
            f" most {MAX_PODS}, all held in one Argo Workflow object",
            reason=Reason.INVALID_TRAINJOB if trainer else Reason.INVALID_RUNTIME,
        )
    ]


def container(pod_spec: Json, name: str, init: bool = False) -> Json | None:
    """The container called ``name`` in a pod spec (also among init containers if ``init``)."""
    for key in ("containers", "initContainers") if init else ("containers",):
        for c in pod_spec.get(key) or []:
            if c.get("name") == name:
                return c  # type: ignore[no-any-return]  # JSON dict from the wire
    return None
