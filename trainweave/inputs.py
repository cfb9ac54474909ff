"""Typed inputs: TrainJob, TrainingRuntime, ClusterTrainingRuntime (Trainer v2.3.0).

Our own pydantic models of ``trainer.kubeflow.org/v1alpha1`` (from
``kubeflow/trainer@v2.3.0 pkg/apis/trainer/v1alpha1``) and the JobSet
``v1alpha2`` spec it embeds (``sigs.k8s.io/jobset@v0.12.0``). Every model
forbids unknown fields; embedded Kubernetes objects (pod templates, env,
resources, PVC templates) stay wire dicts and are checked field by field by
``k8s_schema``. Why not the ``kubeflow-trainer-api`` package: it drops unknown
keys silently, has no enums and takes ~1 s to import (docs/inputs.md). The ``Wire`` base,
``ObjectMeta`` and pydantic's errors as ``InputErrors`` are ``trainweave.wire``'s (the Kueue and
Topology inputs share them).
"""

from __future__ import annotations

import enum
import re
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel

from trainweave import k8s_schema, object_meta, pod_resources, pod_rules
from trainweave.errors import InputError, InputErrors
from trainweave.k8s_names import DNS1035_LABEL, DNS1035_LABEL_FMT, DNS1123_LABEL_MAX
from trainweave.labels import TRAINER_GROUP, TRAINER_VERSION, Reason
from trainweave.wire import ObjectMeta, Wire, validate_model, without_nulls

API_VERSION = f"{TRAINER_GROUP}/{TRAINER_VERSION}"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")
Json = dict[str, Any]


class _Model(Wire):
    # strict: no coercion ("yes" is not a boolean, "3" not an integer), as the CRD's OpenAPI types
    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=False, frozen=True, strict=True
    )


# --- TrainJob -----------------------------------------------------------------


class RuntimeRef(_Model):
    name: str = Field(min_length=1, max_length=253)
    api_group: str = TRAINER_GROUP
    kind: Literal["ClusterTrainingRuntime", "TrainingRuntime"] = "ClusterTrainingRuntime"


class SecretRef(_Model):
    name: str = Field(min_length=1)


class InitializerSpec(_Model):
    """DatasetInitializer / ModelInitializer: same fields in v2.3.0."""

    storage_uri: str | None = Field(default=None, max_length=2048)
    env: list[Json] = Field(default_factory=list, max_length=128)
    secret_ref: SecretRef | None = None


class Initializer(_Model):
    dataset: InitializerSpec | None = None
    model: InitializerSpec | None = None


def _required(value: str) -> str:
    """An empty string refused in the API server's words (field.Required)."""
    if not value:
        raise ValueError("Required value")
    return value


class Trainer(_Model):
    # "" is set on the node container as given (Trainer v2.3.0 jobset/builder.go: image != nil),
    # and the API server refuses a container without an image: refused here by field
    image: Annotated[str, AfterValidator(_required)] | None = Field(default=None, max_length=500)
    command: list[str] = Field(default_factory=list, max_length=128)
    args: list[str] = Field(default_factory=list, max_length=128)
    env: list[Json] = Field(default_factory=list, max_length=128)
    num_nodes: int | None = None
    resources_per_node: Json | None = None
    num_proc_per_node: int | None = Field(default=None, ge=1)


class RuntimePatch(_Model):
    manager: str = Field(min_length=1, max_length=253)
    time: str | None = None
    training_runtime_spec: Json | None = None


class TrainJobSpec(_Model):
    runtime_ref: RuntimeRef
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] = Field(default_factory=list, max_length=16)
    suspend: bool = False
    active_deadline_seconds: int | None = Field(default=None, ge=1)
    # the CRD's CEL rule: one of the two controllers Trainer v2.3.0 knows, if set
    managed_by: (
        Literal["trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue"] | None
    ) = None


class TrainJob(Wire):
    """A TrainJob document; ``status`` is read but never required."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TrainJob"]
    metadata: ObjectMeta
    spec: TrainJobSpec
    status: Json | None = None


# --- JobSet v1alpha2 ------------------------------------------------------------


class DependsOn(_Model):
    name: str
    status: Literal["Ready", "Complete"]


class DependsOnStatus(enum.StrEnum):
    """JobSet ``dependsOn[].status``: the ``DependsOn.status`` values."""

    READY = "Ready"
    COMPLETE = "Complete"


class ReplicatedJob(_Model):
    name: str = Field(min_length=1)
    group_name: str = "default"
    template: Json
    replicas: int = Field(default=1, ge=0)
    depends_on: list[DependsOn] = Field(default_factory=list, max_length=5)


class Network(_Model):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class SuccessPolicy(_Model):
    operator: Literal["All", "Any"]
    target_replicated_jobs: list[str] = Field(default_factory=list)


class FailurePolicyRule(_Model):
    name: str
    action: Literal[
        "FailJobSet",
        "RestartJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
        "RestartJob",
        "RestartJobAndIgnoreMaxRestarts",
    ]
    on_job_failure_reasons: list[str] = Field(default_factory=list)
    on_job_failure_message_patterns: list[str] = Field(default_factory=list)
    target_replicated_jobs: list[str] = Field(default_factory=list)


class FailurePolicy(_Model):
    max_restarts: int = Field(default=0, ge=0)
    restart_strategy: Literal["Recreate", "BlockingRecreate", "InPlaceRestart"] = "Recreate"
    rules: list[FailurePolicyRule] = Field(default_factory=list)


class StartupPolicy(_Model):
    startup_policy_order: Literal["AnyOrder", "InOrder"]


class Coordinator(_Model):
    replicated_job: str
    job_index: int = 0
    pod_index: int = 0


class RetentionPolicy(_Model):
    when_deleted: Literal["Delete", "Retain"] | None = None


class VolumeClaimPolicy(_Model):
    templates: list[Json] = Field(default_factory=list, max_length=50)
    retention_policy: RetentionPolicy | None = None


class JobSetSpec(_Model):
    replicated_jobs: list[ReplicatedJob] = Field(default_factory=list)
    network: Network | None = None
    success_policy: SuccessPolicy | None = None
    failure_policy: FailurePolicy | None = None
    startup_policy: StartupPolicy | None = None
    suspend: bool | None = None
    coordinator: Coordinator | None = None
    managed_by: str | None = None
    ttl_seconds_after_finished: int | None = None
    volume_claim_policies: list[VolumeClaimPolicy] = Field(default_factory=list)


class JobSetTemplate(_Model):
    metadata: Json | None = None
    spec: JobSetSpec = Field(default_factory=JobSetSpec)


# --- runtimes -------------------------------------------------------------------


class EnvInjectionTarget(_Model):
    job_name: str
    container_names: list[str] = Field(min_length=1, max_length=8)


class EnvInjection(_Model):
    targets: list[EnvInjectionTarget] = Field(default_factory=list, max_length=16)


class TorchPolicy(_Model):
    env_injection: EnvInjection | None = None


class MPIPolicy(_Model):
    num_proc_per_node: int = Field(default=1, ge=1)
    mpi_implementation: Literal["OpenMPI", ""] = "OpenMPI"
    ssh_auth_mount_path: str = "/root/.ssh"
    run_launcher_as_node: bool = False


class FluxPolicy(_Model):
    num_proc_per_node: int | None = Field(default=None, ge=1)


class MLPolicy(_Model):
    num_nodes: int = Field(default=1, ge=1)
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None
    flux: FluxPolicy | None = None
    jax: Json | None = None
    xgboost: Json | None = None


class PodGroupPolicy(_Model):
    coscheduling: Json | None = None
    volcano: Json | None = None


class RuntimeSpec(_Model):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplate = Field(default_factory=JobSetTemplate)


class Runtime(Wire):
    """A TrainingRuntime or ClusterTrainingRuntime document."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    api_version: Literal["trainer.kubeflow.org/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TrainingRuntime", "ClusterTrainingRuntime"]
    metadata: ObjectMeta
    spec: RuntimeSpec

    @cached_property
    def snapshot(self) -> Json:
        """The runtime as given (unset defaults left out), for the snapshot ConfigMap.

        Computed once per parsed runtime: many TrainJobs share one. Callers must not mutate it.
        """
        return self.model_dump(by_alias=True, exclude_unset=True, mode="json")


# --- parsing ----------------------------------------------------------------------


def parse_trainjob(doc: Json, source: str = "") -> TrainJob:
    """A TrainJob from a wire dict; InputErrors name every problem."""
    if doc.get("kind") != "TrainJob" or doc.get("apiVersion") != API_VERSION:
        raise InputErrors([_not_a(doc, "TrainJob", source, Reason.INVALID_TRAINJOB)])
    job = validate_model(TrainJob, doc, source, Reason.INVALID_TRAINJOB)
    # ValidateObjectMeta: the namespace goes into every manifest, the labels onto the Workflow
    errors = object_meta.errors(doc.get("metadata"), "metadata", Reason.INVALID_TRAINJOB)
    errors += _trainjob_checks(job)
    if errors:
        raise InputErrors(errors).at(source)
    # the embedded objects' nulls were checked (an unknown field is one, null or not): now absent
    return validate_model(TrainJob, without_nulls(doc), source, Reason.INVALID_TRAINJOB)


def parse_runtime(doc: Json, source: str = "") -> Runtime:
    """A TrainingRuntime/ClusterTrainingRuntime from a wire dict."""
    if doc.get("kind") not in ("TrainingRuntime", "ClusterTrainingRuntime") or (
        doc.get("apiVersion") != API_VERSION
    ):
        raise InputErrors([_not_a(doc, "TrainingRuntime", source, Reason.INVALID_RUNTIME)])
    given = validate_model(Runtime, doc, source, Reason.INVALID_RUNTIME)
    # the embedded objects as given (an unknown field is one, null or not), then with their
    # nulls absent, as the API server prunes them (Wire)
    runtime = validate_model(Runtime, without_nulls(doc), source, Reason.INVALID_RUNTIME)
    namespaced = doc.get("kind") == "TrainingRuntime"
    errors = object_meta.errors(doc.get("metadata"), "metadata", Reason.INVALID_RUNTIME, namespaced)
    spec = runtime.spec.template.spec
    for i, rjob in enumerate(spec.replicated_jobs):
        path = f"spec.template.spec.replicatedJobs[{i}].template"
        raw = given.spec.template.spec.replicated_jobs[i].template
        errors += k8s_schema.check(raw, "V1JobTemplateSpec", path, Reason.INVALID_RUNTIME)
        # the pod template's labels and annotations become the pods' (ValidateObjectMeta)
        errors += object_meta.errors(
            _at(raw, "spec", "template", "metadata"),
            f"{path}.spec.template.metadata",
            Reason.INVALID_RUNTIME,
            namespaced=False,
        )
        # the CRD's embedded pod schema: required fields (and the pod API's enums); the rest of
        # the pod rules judge the rendered pod, once the TrainJob's overrides are in
        errors += pod_rules.schema_errors(
            rjob.template, "V1JobTemplateSpec", path, Reason.INVALID_RUNTIME
        )
    for i, policy in enumerate(given.spec.template.spec.volume_claim_policies):
        for j, pvc in enumerate(policy.templates):
            path = f"spec.template.spec.volumeClaimPolicies[{i}].templates[{j}]"
            errors += k8s_schema.check(pvc, "V1PersistentVolumeClaim", path, Reason.INVALID_RUNTIME)
    if errors:
        raise InputErrors(errors).at(source)
    return runtime


def _at(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, or None where a step is missing or not a map."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _trainjob_checks(job: TrainJob) -> list[InputError]:
    errors: list[InputError] = []
    name = job.metadata.name
    if not DNS1035_LABEL.match(name) or len(name) > DNS1123_LABEL_MAX:
        errors.append(
            InputError(
                "metadata.name",
                f"{name!r} must match ^{DNS1035_LABEL_FMT}$ and be at most 63 characters",
            )
        )
    init = job.spec.initializer
    for which, spec in (
        ("dataset", init.dataset if init else None),
        ("model", init.model if init else None),
    ):
        if spec is None:
            continue
        path = f"spec.initializer.{which}"
        if spec.storage_uri and not _URI.match(spec.storage_uri):
            errors.append(
                InputError(
                    f"{path}.storageUri",
                    f"{spec.storage_uri!r} must be a URI of the form scheme://path (e.g. hf://org/name)",
                )
            )
        errors += k8s_schema.check(
            spec.env, "List[V1EnvVar]", f"{path}.env", Reason.INVALID_TRAINJOB
        )
        errors += _unique_names(spec.env, f"{path}.env")
        errors += _env_rules(spec.env, f"{path}.env")
    trainer = job.spec.trainer
    if trainer is not None:
        if trainer.num_nodes is not None and trainer.num_nodes < 1:
            errors.append(
                InputError("spec.trainer.numNodes", f"must be at least 1, got {trainer.num_nodes}")
            )
        errors += k8s_schema.check(
            trainer.env, "List[V1EnvVar]", "spec.trainer.env", Reason.INVALID_TRAINJOB
        )
        errors += _unique_names(trainer.env, "spec.trainer.env")
        errors += _env_rules(trainer.env, "spec.trainer.env")
        errors += k8s_schema.check(
            trainer.resources_per_node,
            "V1ResourceRequirements",
            "spec.trainer.resourcesPerNode",
            Reason.INVALID_TRAINJOB,
        )
        errors += pod_resources.errors(
            trainer.resources_per_node,
            "spec.trainer.resourcesPerNode",
            Reason.INVALID_TRAINJOB,
            whole=False,
        )
    return errors


def _env_rules(env: list[Json], path: str) -> list[InputError]:
    """The pod API's rules for env vars (``trainweave.pod_rules``)."""
    reason = Reason.INVALID_TRAINJOB
    return pod_rules.schema_errors(env, "List[V1EnvVar]", path, reason) + pod_rules.env_errors(
        env, path, reason
    )


def _unique_names(items: list[Json], path: str) -> list[InputError]:
    """A list-map keyed by ``name`` (``x-kubernetes-list-type: map``): a repeated name is the
    API server's ``Duplicate value``."""
    seen: set[str] = set()
    errors = []
    for i, item in enumerate(items):
        name = item.get("name")
        if not isinstance(name, str):  # k8s_schema names a missing or mistyped name
            continue
        if name in seen:
            errors.append(InputError(f"{path}[{i}].name", f"duplicate name {name!r}"))
        seen.add(name)
    return errors


def _not_a(doc: Json, kind: str, source: str, reason: Reason) -> InputError:
    got = f"{doc.get('apiVersion', '?')} {doc.get('kind', '?')}" if isinstance(doc, dict) else "?"
    return InputError("kind", f"expected {API_VERSION} {kind}, got {got}", source, reason)
