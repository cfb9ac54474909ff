"""The Pipeline: trainweave's one internal model, spoken by every adapter.

A Pipeline is an ordered DAG of Steps. A Step is what Kueue admits as one pod
group: one or more Jobs (runtime replicatedJobs joined by ``Ready`` edges), each
a number of identical pods. ``adapters.trainjob.trainer`` builds it from a TrainJob and
its runtime; ``adapters.argo.workflow`` renders it to a Workflow; ``adapters.kueue.workloads``
previews the Workloads it becomes.

Pod specs stay as Kubernetes wire dicts (camelCase), already validated against
the Kubernetes schema by ``trainweave.k8s_schema`` and with every TrainJob
override applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainweave.labels import Ancestor, StepRole
from trainweave.sshkeys import KeyPair

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class ExitCodeRule:
    """One podFailurePolicy rule, in order: first match wins.

    ``action`` is ``FailJob`` (no retry), ``Ignore`` (retry, not counted against
    the budget) or ``Count`` (retry while the budget lasts). ``operator`` is
    ``In`` or ``NotIn`` over ``values``. ``disruption`` marks an
    ``onPodConditions: DisruptionTarget`` rule (pod deleted, e.g. by Kueue
    preemption) instead of exit codes. ``container``: ``onExitCodes.containerName`` (None:
    any container).
    """

    action: str
    operator: str = "In"
    values: tuple[int, ...] = ()
    disruption: bool = False
    container: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """How a failed pod of a Job is retried (batch Job -> Argo retryStrategy).

    ``budget`` counted retries per pod; ``rules`` the podFailurePolicy;
    ``deadline_seconds`` the Job's activeDeadlineSeconds (spans all attempts);
    ``shared``: ``budget`` is the Job's ``backoffLimit``, shared by all its pods (Argo
    retries each pod up to it; the controller stops the step once the pods' counted
    failures together exceed it); ``judged``: the pod has several containers and Argo's
    node message names one, so the controller judges each failed attempt by every
    container's exit code (Argo retries up to the limit; the controller stops the step).
    ``per_index``: the budget is ``backoffLimitPerIndex``.
    """

    budget: int
    rules: tuple[ExitCodeRule, ...] = ()
    deadline_seconds: int | None = None
    shared: bool = False
    judged: bool = False
    per_index: bool = False

    @property
    def by_controller(self) -> bool:
        """The controller, not Argo alone, keeps this policy (shared budget or judged pods)."""
        return self.shared or self.judged


@dataclass(frozen=True)
class Job:
    """One runtime replicatedJob: ``replicas`` Jobs of ``pods_per_replica`` pods.

    ``pod_template`` is the final pod template (``{"metadata": ..., "spec": ...}``)
    with TrainJob fields applied; ``daemon`` is True for a job that keeps running
    while its step succeeds without it (JobSet successPolicy targets others).
    """

    name: str
    ancestor: Ancestor | None
    replicas: int
    pods_per_replica: int
    pod_template: JsonDict
    retry: RetryPolicy
    daemon: bool = False

    @property
    def pods(self) -> int:
        """Pods this job runs at once."""
        return self.replicas * self.pods_per_replica

    @property
    def containers(self) -> list[JsonDict]:
        """The pod's containers, in the runtime's order (at least one)."""
        containers: list[JsonDict] = self.pod_template["spec"]["containers"]
        return containers

    @property
    def main_container(self) -> JsonDict:
        """The pod's first container (its only one in most runtimes)."""
        return self.containers[0]


@dataclass(frozen=True)
class Step:
    """What Kueue admits as one gang: a pod group on one queue."""

    name: str
    role: StepRole
    jobs: tuple[Job, ...]
    queue: str
    depends_on: tuple[str, ...] = ()
    priority_class: str | None = None

    @property
    def pods(self) -> int:
        """Pods in the step: the pod group's total count."""
        return sum(job.pods for job in self.jobs)


@dataclass(frozen=True)
class HeadlessService:
    """Stable DNS for multi-node steps (JobSet ``network``)."""

    name: str
    publish_not_ready_addresses: bool = True


class PolicyPart(Protocol):
    """The per-mlPolicy part of a Pipeline: what one policy decided at translation, and its
    Build half (Trainer's ``ComponentBuilderPlugin``): the objects beside the pods.

    Each policy module in ``adapters.trainjob.policies`` defines its own frozen part (MPI's:
    hostfile slots, launcher as a node); docs/extending.md says how to add one.
    """

    def objects(self, pipeline: Pipeline) -> list[JsonDict]:
        """Objects beside the pods that every render lists after the runtime snapshot."""
        ...

    def secrets(self, pipeline: Pipeline, keys: KeyPair | None) -> list[JsonDict]:
        """Secrets made from the edge's key pair, listed last; ValueError when the part
        needs keys and none are given."""
        ...


@dataclass(frozen=True)
class Pipeline:
    """A TrainJob, translated: steps in topological order, plus shared objects."""

    name: str
    namespace: str
    steps: tuple[Step, ...]
    runtime_kind: str
    runtime_name: str
    runtime_snapshot: JsonDict
    attempt: int = 0
    segment: int = 0
    service: HeadlessService | None = None
    pvcs: tuple[JsonDict, ...] = ()
    pvc_retain: bool = False
    active_deadline_seconds: int | None = None
    max_restarts: int = 0
    suspend: bool = False
    policy: PolicyPart | None = None
    ttl_seconds_after_finished: int | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def step(self, name: str) -> Step:
        """The step called ``name``."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(name)
