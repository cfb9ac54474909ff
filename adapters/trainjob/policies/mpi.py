"""mlPolicy.mpi: Validate, EnforceMLPolicy and Build in one module, as upstream's plugin.

Pure. As kubeflow/trainer@v2.3.0 ``pkg/runtime/framework/plugins/mpi/mpi.go``:

- Validate: numNodes >= 2 with runLauncherAsNode needs both jobs, then reserved OpenMPI env
  (upstream's order).
- EnforceMLPolicy: the ``mpi-ssh-auth`` Secret volume on the ``node`` and ``launcher`` jobs
  (mounted at ``sshAuthMountPath`` in their ``node`` container), the ``mpi-hostfile`` ConfigMap
  volume and OpenMPI env on the launcher, the TrainJob's ``numNodes`` as node pods (one fewer
  when the launcher runs as a node); without it, and on the launcher, the count Trainer's
  newRuntimeInfo gives the job (mlPolicy.numNodes under the trainer ancestor, else its
  parallelism), which mpi.go leaves as it is; hostfile slots from ``numProcPerNode`` (GPUs
  when the runtime says 1).
- Build (``MpiPart``): the hostfile ConfigMap ``<trainjob>-mpi-hostfile`` (one
  ``<pod FQDN> slots=<n>`` line per node pod, and per launcher pod when it runs as a node) and
  the ``kubernetes.io/ssh-auth`` Secret ``<trainjob>-mpi-ssh-auth`` around the key pair the
  edge draws (``trainweave.sshkeys``, as ``buildSSHAuthSecret``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from trainweave.adapters import k8s_objects, names
from trainweave.adapters.trainjob import validate, wirelists
from trainweave.adapters.trainjob.policies.base import Context, Policy, reserved_env_errors
from trainweave.adapters.trainjob.policies.shared import gpus_per_node
from trainweave.errors import InputError
from trainweave.inputs import RuntimeSpec
from trainweave.labels import Ancestor
from trainweave.model import Pipeline
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]
RESERVED = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
    "OMPI_MCA_plm_rsh_args",
)
JOBS = ("node", "launcher")  # upstream constants.Node, constants.Launcher


def hostfile_name(trainjob: str) -> str:
    """The hostfile ConfigMap: ``<trainjob>`` + constants.MPIHostfileConfigMapSuffix."""
    return f"{trainjob}-mpi-hostfile"


def secret_name(trainjob: str) -> str:
    """The SSH auth Secret, as mpi.go's sshAuthSecretName (constants.MPISSHAuthSecretSuffix)."""
    return f"{trainjob}-mpi-ssh-auth"


def launcher_as_node(spec: RuntimeSpec) -> bool:
    """``mlPolicy.mpi.runLauncherAsNode``: the one place trainweave reads it."""
    mpi = spec.ml_policy.mpi if spec.ml_policy else None
    return mpi is not None and mpi.run_launcher_as_node


def slots(policy_slots: int, nproc: int | None, resources: Json) -> int:
    """Hostfile slots: TrainJob numProcPerNode, else GPUs when the runtime says 1."""
    if nproc is not None:
        return nproc
    if policy_slots == 1 and gpus_per_node(resources) > 1:
        return gpus_per_node(resources)
    return policy_slots


def secret_volume(trainjob: str) -> Json:
    """The SSH auth Secret volume Trainer's MPI plugin mounts in node and launcher pods."""
    return {
        "name": "mpi-ssh-auth",
        "secret": {
            "secretName": secret_name(trainjob),
            "defaultMode": 0o400,
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
                {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
                {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
            ],
        },
    }


def hostfile_volume(trainjob: str) -> Json:
    """The hostfile ConfigMap volume of the launcher pod."""
    return {
        "name": "mpi-hostfile",
        "configMap": {
            "name": hostfile_name(trainjob),
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }


def openmpi_env(n: int) -> list[Json]:
    """OpenMPI env on the launcher's node container."""
    return [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": str(n)},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]


def hostfile(endpoints: list[str], n: int) -> str:
    """``<endpoint> slots=<n>`` per line, as Trainer's buildHostFileConfigMap."""
    return "".join(f"{e} slots={n}\n" for e in endpoints)


class MPI(Policy):
    """mlPolicy.mpi."""

    needs_ssh_keys: ClassVar[bool] = True

    def validate(self, ctx: Context) -> list[InputError]:
        errors: list[InputError] = []
        tj = ctx.trainjob.spec.trainer
        jobs = {rj.name for rj in ctx.spec.template.spec.replicated_jobs}
        if (
            launcher_as_node(ctx.spec)
            and tj is not None
            and (tj.num_nodes or 1) >= 2
            and not set(JOBS) <= jobs
        ):
            errors.append(
                InputError(
                    "spec.trainer.numNodes",
                    "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does"
                    " not have either launcher and node",
                )
            )
        return errors + reserved_env_errors(ctx.trainjob, RESERVED)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: Json
    ) -> int | None:
        mpi = ctx.spec.ml_policy.mpi if ctx.spec.ml_policy else None
        if mpi is None or job not in JOBS:
            return None
        wirelists.upsert_by_name(pod_spec.setdefault("volumes", []), [secret_volume(ctx.name)])
        node = validate.container(pod_spec, "node")
        if node is not None:
            mounts = [{"name": "mpi-ssh-auth", "mountPath": mpi.ssh_auth_mount_path}]
            if job == "launcher":
                mounts.append({"name": "mpi-hostfile", "mountPath": "/etc/mpi"})
                wirelists.upsert_env(node, openmpi_env(_slots(ctx)))
            wirelists.upsert_by_name(node.setdefault("volumeMounts", []), mounts)
        if job == "launcher":
            wirelists.upsert_by_name(pod_spec["volumes"], [hostfile_volume(ctx.name)])
            return _runtime_count(ctx, job, ancestor)
        tj = ctx.trainjob.spec.trainer
        if tj is None or tj.num_nodes is None:
            return _runtime_count(ctx, job, ancestor)
        return max(tj.num_nodes - 1, 1) if mpi.run_launcher_as_node else tj.num_nodes

    def sized_by_nodes(self, ctx: Context, job: str) -> bool:
        return job == "node"

    def takes_trainer(self, ctx: Context, job: str) -> bool:
        return job == "node" and launcher_as_node(ctx.spec)

    def part(self, ctx: Context) -> MpiPart | None:
        """The hostfile slots and launcher role, when the runtime has a node or launcher job."""
        if not {rj.name for rj in ctx.spec.template.spec.replicated_jobs} & set(JOBS):
            return None
        n = _slots(ctx)
        return MpiPart(n, launcher_as_node(ctx.spec)) if n else None


@dataclass(frozen=True)
class MpiPart:
    """What an MPI Pipeline keeps for its objects beside the pods."""

    slots: int
    launcher_as_node: bool

    def endpoints(self, pipeline: Pipeline) -> list[str]:
        """Pod FQDNs of the node pods (and the launcher when it runs as a node), in runtime
        order (``isNode`` in mpi.go)."""
        subdomain = pipeline.service.name if pipeline.service else pipeline.name
        return [
            f"{names.pod_hostname(pipeline.name, job.name, replica, index)}.{subdomain}"
            for step in pipeline.steps
            for job in step.jobs
            if job.name == "node" or (job.name == "launcher" and self.launcher_as_node)
            for replica in range(job.replicas)
            for index in range(job.pods_per_replica)
        ]

    def objects(self, pipeline: Pipeline) -> list[Json]:
        """The hostfile ConfigMap (key ``hostfile``)."""
        text = hostfile(self.endpoints(pipeline), self.slots)
        return [
            k8s_objects.config_map(
                pipeline, hostfile_name(pipeline.name), "mpi-hostfile", {"hostfile": text}
            )
        ]

    def secrets(self, pipeline: Pipeline, keys: KeyPair | None) -> list[Json]:
        """The SSH auth Secret as Trainer's MPI plugin makes it: ``kubernetes.io/ssh-auth``,
        immutable, ``ssh-privatekey``/``ssh-publickey``."""
        if keys is None:
            raise ValueError("an MPI pipeline needs Options.ssh_keys for its SSH Secret")
        data = {"ssh-privatekey": keys.private, "ssh-publickey": keys.public}
        name = secret_name(pipeline.name)
        return [k8s_objects.secret(pipeline, name, "mpi-ssh-auth", "kubernetes.io/ssh-auth", data)]


def _slots(ctx: Context) -> int:
    mpi = ctx.spec.ml_policy.mpi if ctx.spec.ml_policy else None
    return slots(mpi.num_proc_per_node, ctx.nproc, ctx.resources) if mpi else 0


def _runtime_count(ctx: Context, job: str, ancestor: Ancestor | None) -> int:
    """A job's pods as Trainer's newRuntimeInfo counts them (trainingruntime.go): mlPolicy
    numNodes under the trainer ancestor, else the Job's parallelism (1 when unset)."""
    if ancestor is Ancestor.TRAINER and ctx.spec.ml_policy is not None:
        return ctx.spec.ml_policy.num_nodes
    for rj in ctx.spec.template.spec.replicated_jobs:
        if rj.name == job:
            return int((rj.template.get("spec") or {}).get("parallelism") or 1)
    return 1
