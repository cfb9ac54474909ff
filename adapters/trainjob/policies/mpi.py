"""mlPolicy.mpi -> SSH Secret and hostfile volumes, OpenMPI env, node pod count.

Pure. As kubeflow/trainer@v2.3.0 ``plugins/mpi/mpi.go``: the ``mpi-ssh-auth`` Secret
volume on the ``node`` and ``launcher`` jobs (mounted at ``sshAuthMountPath`` in their
``node`` container), the ``mpi-hostfile`` ConfigMap volume and OpenMPI env on the launcher,
the TrainJob's ``numNodes`` as node pods (one fewer when the launcher runs as a node); without
it, and on the launcher, the count Trainer's newRuntimeInfo gives the job (mlPolicy.numNodes
under the trainer ancestor, else its parallelism), which mpi.go leaves as it is; hostfile slots
from ``numProcPerNode`` (GPUs when the runtime says 1). Validation: numNodes >= 2 with
runLauncherAsNode needs both jobs, then reserved OpenMPI env (upstream's order).
"""

from __future__ import annotations

from typing import Any

from trainweave.adapters.trainjob import mlpolicy, validate, wirelists
from trainweave.adapters.trainjob.policies.base import Context, reserved_env_errors
from trainweave.errors import InputError
from trainweave.labels import Ancestor


class MPI:
    """mlPolicy.mpi."""

    trainer_env_first = False

    def validate(self, ctx: Context) -> list[InputError]:
        errors: list[InputError] = []
        mpi = ctx.spec.ml_policy.mpi if ctx.spec.ml_policy else None
        tj = ctx.trainjob.spec.trainer
        jobs = {rj.name for rj in ctx.spec.template.spec.replicated_jobs}
        if (
            mpi is not None
            and mpi.run_launcher_as_node
            and tj is not None
            and (tj.num_nodes or 1) >= 2
            and not {"launcher", "node"} <= jobs
        ):
            errors.append(
                InputError(
                    "spec.trainer.numNodes",
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does"
                    " not have either launcher and node",
                )
            )
        return errors + reserved_env_errors(ctx.trainjob, mlpolicy.MPI_RESERVED)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: dict[str, Any]
    ) -> int | None:
        mpi = ctx.spec.ml_policy.mpi if ctx.spec.ml_policy else None
        if mpi is None or job not in ("node", "launcher"):
            return None
        ctx.mpi_slots = mlpolicy.mpi_slots(mpi.num_proc_per_node, ctx.nproc, ctx.resources)
        wirelists.upsert_by_name(
            pod_spec.setdefault("volumes", []), [mlpolicy.mpi_secret_volume(ctx.name)]
        )
        node = validate.container(pod_spec, "node")
        if node is not None:
            mounts = [{"name": "mpi-ssh-auth", "mountPath": mpi.ssh_auth_mount_path}]
            if job == "launcher":
                mounts.append({"name": "mpi-hostfile", "mountPath": "/etc/mpi"})
                wirelists.upsert_env(node, mlpolicy.openmpi_env(ctx.mpi_slots))
            wirelists.upsert_by_name(node.setdefault("volumeMounts", []), mounts)
        if job == "launcher":
            wirelists.upsert_by_name(pod_spec["volumes"], [mlpolicy.mpi_hostfile_volume(ctx.name)])
            return _runtime_count(ctx, job, ancestor)
        tj = ctx.trainjob.spec.trainer
        if tj is None or tj.num_nodes is None:
            return _runtime_count(ctx, job, ancestor)
        return max(tj.num_nodes - 1, 1) if mpi.run_launcher_as_node else tj.num_nodes


def _runtime_count(ctx: Context, job: str, ancestor: Ancestor | None) -> int:
    """A job's pods as Trainer's newRuntimeInfo counts them (trainingruntime.go): mlPolicy
    numNodes under the trainer ancestor, else the Job's parallelism (1 when unset)."""
    if ancestor is Ancestor.TRAINER and ctx.spec.ml_policy is not None:
        return ctx.spec.ml_policy.num_nodes
    for rj in ctx.spec.template.spec.replicated_jobs:
        if rj.name == job:
            return int((rj.template.get("spec") or {}).get("parallelism") or 1)
    return 1
