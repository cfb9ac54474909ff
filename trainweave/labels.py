"""Wire strings: label, annotation and condition keys shared by every adapter.

trainweave's own keys live under ``trainweave.io/``. Kueue keys are from
kueue v0.19.2 ``pkg/controller/jobs/pod/constants``; Trainer keys from
kubeflow/trainer v2.3.0 ``pkg/constants``; JobSet keys from jobset v0.12.0
``api/jobset/v1alpha2`` (set on pods so the Kubeflow SDK finds them).
"""

from __future__ import annotations

import enum

# --- trainweave ------------------------------------------------------------
TRAINJOB = "trainweave.io/trainjob"  # TrainJob name, on every object and pod
STEP = "trainweave.io/step"  # step name, on step pods
REPLICATED_JOB = "trainweave.io/replicated-job"  # runtime replicatedJob name, on pods
ATTEMPT = "trainweave.io/attempt"  # whole-pipeline attempt (0, 1, ...), on Workflow and pods
ROLE = "trainweave.io/role"  # StepRole value, on step pods
COMPONENT = "trainweave.io/component"  # workflow | service | runtime-snapshot | pvc
MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGER = "trainweave"
QUOTA_ANNOTATION = "trainweave.io/quota"  # JSON quota summary on the TrainJob
ATTEMPTS_ANNOTATION = "trainweave.io/attempts"  # whole-pipeline attempts started
SEGMENT = "trainweave.io/segment"  # resume segment within one attempt (0, 1, ...), on Workflow
STOPPED_FOR = "trainweave.io/stopped-for"  # why the controller stopped a Workflow: StoppedFor
MAX_RESTARTS_ANNOTATION = "trainweave.io/max-restarts"  # JobSet maxRestarts, on the Workflow
# JSON {step: {job: {backoffLimit, rules, shared, judged, perIndex}}}: the Job retry policies only
# the controller keeps (a backoffLimit shared by a step's pods, pods of several containers), on
# the Workflow (Argo retries each pod on its own and sees one container's exit code)
BACKOFF_LIMITS_ANNOTATION = "trainweave.io/backoff-limits"
# kept queue position (adapters/kueue/kept.py): a later step's Workload is created at the start,
# held by this Kueue admission gate until its predecessors succeed; the steps it waits for and how
# long its position is kept (seconds) are annotations on it; a ClusterQueue annotated
# kept-position: "false" opts its queues out
KEPT_GATE = "trainweave.io/predecessors"
KEPT_AFTER_ANNOTATION = "trainweave.io/kept-after"
KEPT_FOR_ANNOTATION = "trainweave.io/kept-for-seconds"
KEPT_POSITION_ANNOTATION = "trainweave.io/kept-position"

# --- Kueue (plain-pod groups) ------------------------------------------------
KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
KUEUE_POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
KUEUE_POD_GROUP_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_RETRIABLE_IN_GROUP = "kueue.x-k8s.io/retriable-in-group"
KUEUE_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
KUEUE_IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
KUEUE_POD_GROUP_POD_INDEX = "kueue.x-k8s.io/pod-group-pod-index"  # the pod's rank in its PodSet
KUEUE_ADMISSION_GATE = "kueue.x-k8s.io/admission"  # the scheduling gate until admitted
# Topology-Aware Scheduling (kueue v0.19.2 apis/kueue/v1beta2/topology_types.go): pod annotations
# Kueue's pod integration turns into the PodSet's topologyRequest (jobframework/tas.go Build)
KUEUE_PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PODSET_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
KUEUE_PODSET_SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
KUEUE_PODSET_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
KUEUE_PODSET_SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
KUEUE_PODSET_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
KUEUE_TOPOLOGY_GATE = "kueue.x-k8s.io/topology"  # the scheduling gate until TAS-assigned
KUEUE_RESOURCE_IN_USE = "kueue.x-k8s.io/resource-in-use"  # Workload finalizer
# comma-separated admission gates on a Workload (kueue v0.19.2 pkg/constants, AdmissionGatedBy)
KUEUE_ADMISSION_GATED_BY = "kueue.x-k8s.io/admission-gated-by"

# --- Argo (v4.0.7 pkg/apis/workflow/v1alpha1) --------------------------------
ARGO_WORKFLOW = "workflows.argoproj.io/workflow"  # on every pod of a Workflow
ARGO_NODE_NAME = "workflows.argoproj.io/node-name"  # pod annotation: its node in status.nodes

# --- Kubeflow Trainer ----------------------------------------------------------
TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_VERSION = "v1alpha1"
TRAINJOB_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
RUNTIME_SNAPSHOT_KEY = "runtime"  # ConfigMap key, as upstream KEP-2599
TRAINER_MANAGED_BY = "trainer.kubeflow.org/trainjob-controller"  # TrainJob spec.managedBy default

# --- JobSet / batch (pod labels the Kubeflow SDK selects on) -----------------
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_NAME = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX = "jobset.sigs.k8s.io/job-index"
JOB_COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


class Ancestor(enum.StrEnum):
    """Values of the ``trainjob-ancestor-step`` label (Trainer v2.3.0)."""

    DATASET_INITIALIZER = "dataset-initializer"
    MODEL_INITIALIZER = "model-initializer"
    TRAINER = "trainer"


class StepRole(enum.StrEnum):
    """What a step is for in the pipeline (``trainweave.io/role``)."""

    INITIALIZER = "initializer"
    TRAINER = "trainer"
    POST_PROCESSOR = "post-processor"
    AUXILIARY = "auxiliary"  # any other job (no ancestor, not after the trainer)


class ConditionType(enum.StrEnum):
    """TrainJob condition types (Trainer v2.3.0 has exactly these three)."""

    SUSPENDED = "Suspended"
    COMPLETE = "Complete"
    FAILED = "Failed"


class Reason(enum.StrEnum):
    """TrainJob condition reasons: JobSet-compatible, plus our input errors."""

    ALL_JOBS_COMPLETED = "AllJobsCompleted"
    FAILED_JOBS = "FailedJobs"
    REACHED_MAX_RESTARTS = "ReachedMaxRestarts"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    SUSPENDED = "Suspended"
    RESUMED = "Resumed"
    TRAINING_RUNTIME_NOT_FOUND = "TrainingRuntimeNotFound"
    INVALID_RUNTIME = "InvalidRuntime"
    INVALID_TRAINJOB = "InvalidTrainJob"
    UNSUPPORTED_FIELD = "UnsupportedField"
    # the API server refused a dryRun=All create of an object or step pod of the start
    REFUSED_BY_API_SERVER = "RefusedByAPIServer"
    INVALID_QUEUES = "InvalidQueues"  # trainweave plan's queue files


class StoppedFor(enum.StrEnum):
    """Values of ``trainweave.io/stopped-for``: why the controller stopped a Workflow."""

    SUSPEND = "suspend"  # the TrainJob was suspended; resuming starts a new segment
    DELETED = "deleted"  # the TrainJob is being deleted in foreground
    FINISHED = "finished"  # the TrainJob finished (its deadline) while the Workflow ran
    # "job-failed/<job>": the controller failed the job as its Job would (backoffLimit spent,
    # a FailJob rule); "backoff-limit/<job>" is what trainweave wrote before
    JOB_FAILED = "job-failed"
    JOB_FAILED_OLD = "backoff-limit"


class EventType(enum.StrEnum):
    """core/v1 Event ``type``."""

    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(enum.StrEnum):
    """Reasons of the Events the controller writes on a TrainJob (besides condition reasons)."""

    STEP_WAITING_FOR_QUOTA = "StepWaitingForQuota"
    STEP_ADMITTED = "StepAdmitted"
    # a step's admission check (a ProvisioningRequest, integrations/views/read/checks.py): it
    # holds the step's quota while capacity is provisioned; it took the quota back and Kueue
    # makes a new request (Retry); Kueue deactivated the step's Workload (Rejected)
    STEP_WAITING_FOR_CAPACITY = "StepWaitingForCapacity"
    STEP_CAPACITY_RETRY = "StepCapacityRetry"
    STEP_CAPACITY_REJECTED = "StepCapacityRejected"
    # a step pod stopped by Kueue or disrupted (integrations/views/read/disruption.py): not counted
    STEP_DISRUPTED = "StepDisrupted"
    # Trainer v2.3.0's reason when it cannot create a TrainJob's objects (trainjob_controller.go)
    RESOURCES_CREATION_FAILED = "TrainJobResourcesCreationFailed"
    # kept queue position (integrations/views/decide/kept.py): a step's gate lifted, or its position given up
    STEP_UNGATED = "StepUngated"
    KEPT_POSITION_EXPIRED = "KeptPositionExpired"
    # one of the TrainJob's children could not be read: skipped, or kept with a part unknown
    # (a Workflow's compressedNodes that does not decode) (controller.py)
    OBJECT_UNREADABLE = "ObjectUnreadable"
    # a TrainJob re-created under a name whose earlier run's Workflow or pods are still there
    # (integrations/views/decide/leftovers.py): it starts once they are gone
    EARLIER_RUN_REMAINS = "EarlierRunRemains"


class TrainJobState(enum.StrEnum):
    """A TrainJob's state as the ``trainweave_trainjobs`` gauge and ``trainweave queues`` show it."""

    RUNNING = "Running"
    SUSPENDED = "Suspended"
    COMPLETE = "Complete"
    FAILED = "Failed"
