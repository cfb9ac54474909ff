"""Render options: what a render needs beyond the TrainJob and runtime. One class for every render.

``adapters.render`` (the objects) and ``adapters.argo.workflow`` (the Workflow) read the same
``Options``; the CLI and the controller build it at the edge (the controller adds the attempt,
segment and owner; both draw the SSH keys, ``trainweave.sshkeys``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainweave.sshkeys import KeyPair
from trainweave.trainer_status import ServerRef


@dataclass(frozen=True)
class Owner:
    """The controller owner of every object: the TrainJob (garbage collection follows it)."""

    api_version: str
    kind: str
    name: str
    uid: str

    def reference(self) -> dict[str, Any]:
        """The ownerReference (controller, blockOwnerDeletion)."""
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }


@dataclass(frozen=True)
class Options:
    """Knobs of the render that are not in the TrainJob.

    ``attempt``: the whole-pipeline attempt. ``segment`` / ``skip_steps``: a resumed segment
    of the attempt (``<wf>-s<j>``) without the steps that already succeeded (their dependants'
    terms dropped). ``suspend``: start the Workflow suspended (a TrainJob created suspended).
    ``owner``: the controller ownerReference of every object. ``ssh_keys``: must be given for
    an MPI pipeline (its Secret holds them). ``default_queue``: the LocalQueue of steps whose
    runtime job names none. ``exit_cleanup``: add the exit handler that deletes a failed run's
    step Workloads (for ``trainweave render`` without the controller; the controller does it
    itself). ``service_account``: the Workflow's service account (it needs ``delete`` on
    ``workloads.kueue.x-k8s.io`` for the exit handler). ``controller``: the trainweave controller
    runs the Workflow and judges every failed pod attempt itself, from pod conditions Argo
    cannot read (``adapters.argo.retry``: no retry expression, every job's policy in
    ``trainweave.io/backoff-limits``; docs/controller.md). ``trainer_status``: the controller's
    status server is on (``--trainer-status``): the trainer's pods get Trainer's TrainJobStatus
    env, token and CA volume, and the CA ConfigMap is rendered (``adapters.trainjob_status``).
    ``kept_position``: also render the gated Workloads of the later steps, so each keeps its
    place in its queue from the start (``adapters.kueue.kept``), for ``kept_cap_seconds`` at most.
    """

    attempt: int = 0
    segment: int = 0
    skip_steps: frozenset[str] = frozenset()
    suspend: bool = False
    owner: Owner | None = None
    ssh_keys: KeyPair | None = None
    default_queue: str | None = None
    exit_cleanup: bool = True
    service_account: str | None = None
    controller: bool = False
    trainer_status: ServerRef | None = None
    kept_position: bool = False
    kept_cap_seconds: int = 7200


DEFAULTS = Options()  # the render of a fresh TrainJob: attempt 0, with the exit handler
