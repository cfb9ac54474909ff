"""The states other engines write and trainweave reads, as ``StrEnum``s (a member compares equal
to its wire string): Argo node and Workflow phases (argo v4.0.7 ``pkg/apis/workflow/v1alpha1``
``NodePhase``, ``WorkflowPhase``), pod phases (k8s.io/api core/v1 ``PodPhase``), Kueue Workload
condition types (kueue v0.19.2 ``apis/kueue/v1beta2/workload_types.go``) and admission check
states (``CheckState``), condition statuses
(metav1 ``ConditionStatus``), and ``Condition``, one entry of a ``status.conditions`` list.
TrainJob condition types and reasons are ``labels.ConditionType`` and ``labels.Reason``;
tests/unit/test_invariants.py keeps the wire strings here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any


class ArgoPhase(enum.StrEnum):
    """An Argo node's or Workflow's ``status.phase``."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    ERROR = "Error"
    SKIPPED = "Skipped"
    OMITTED = "Omitted"


class PodPhase(enum.StrEnum):
    """A pod's ``status.phase``."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


class KueueCondition(enum.StrEnum):
    """Kueue Workload condition types trainweave reads (``QuotaState`` is where a step stands)."""

    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    FINISHED = "Finished"
    EVICTED = "Evicted"


class CheckState(enum.StrEnum):
    """An admission check's ``state`` on a Workload (kueue v0.19.2
    ``apis/kueue/v1beta2/admissioncheck_types.go:23-44``, ``status.admissionChecks[].state``)."""

    PENDING = "Pending"
    READY = "Ready"
    RETRY = "Retry"
    REJECTED = "Rejected"


class ConditionStatus(enum.StrEnum):
    """metav1 ``ConditionStatus``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@dataclass(frozen=True)
class Condition:
    """One ``status.conditions`` entry, read from its wire dict (absent fields are "")."""

    type: str
    status: str = ""
    reason: str = ""
    message: str = ""
    last_transition_time: str = ""

    @property
    def true(self) -> bool:
        """``status`` is ``True``."""
        return self.status == ConditionStatus.TRUE

    @classmethod
    def of(cls, wire: dict[str, Any]) -> Condition:
        """The Condition of a wire dict."""
        return cls(
            str(wire.get("type") or ""),
            str(wire.get("status") or ""),
            str(wire.get("reason") or ""),
            str(wire.get("message") or ""),
            str(wire.get("lastTransitionTime") or ""),
        )


def conditions(status: dict[str, Any]) -> list[Condition]:
    """The typed ``conditions`` of a ``status`` wire dict (entries that are no map skipped)."""
    return [Condition.of(c) for c in status.get("conditions") or [] if isinstance(c, dict)]
