"""The Hera author's path: a Workflow built with trainweave.workflows, submitted with Hera's own
``WorkflowsService`` to the local control plane's ``argo server`` (hack/cluster.py), runs to
Succeeded on the engines with each step one Kueue pod group admitted on its own queue; Hera's
status calls (``get_workflow``, ``Workflow.wait``) report it.

The author authenticates as Argo's ``--auth-mode=client`` expects: a bearer token of their own
ServiceAccount, allowed Workflows in the test namespace only.
"""

from __future__ import annotations

import json
import os
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import yaml
from hera.exceptions import BadRequest, Unauthorized
from hera.workflows import DAG, Container, Parameter, Task, Workflow, WorkflowsService
from hera.workflows import models as m
from kubernetes import client

from trainweave.workflows import exit_cleanup, trainer

from .kube import KUEUE, Kube, condition_is, default_kubeconfig, wait_until

pytestmark = pytest.mark.e2e
EXAMPLES = Path(__file__).parents[2] / "examples" / "hera"
AUTHOR = "hera-author"


@pytest.fixture(scope="session")
def argo_server() -> str:
    """URL of the Argo server: TRAINWEAVE_ARGO_SERVER, else hack/cluster.py's (cluster.json)."""
    url = os.environ.get("TRAINWEAVE_ARGO_SERVER")
    if url:
        return url
    state = default_kubeconfig().parent / "cluster.json"
    if not state.exists():
        pytest.skip("no Argo server: not the local control plane; set TRAINWEAVE_ARGO_SERVER")
    url = json.loads(state.read_text()).get("argo_server")
    if not url:
        pytest.fail(
            "the running cluster has no argo server (started before it was added): restart it"
        )
    return str(url)


def author_token(kube: Kube, ns: str) -> str:
    """A ServiceAccount for the Hera author, allowed Argo Workflows in ``ns``; its bound token."""
    rbac = client.RbacAuthorizationV1Api(kube.api)
    meta = {"name": AUTHOR, "namespace": ns}
    kube.core.create_namespaced_service_account(ns, cast(Any, {"metadata": meta}))
    rule = {
        "apiGroups": ["argoproj.io"],
        "resources": ["workflows"],
        "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"],
    }
    rbac.create_namespaced_role(ns, cast(Any, {"metadata": meta, "rules": [rule]}))
    binding = {
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": AUTHOR},
        "subjects": [{"kind": "ServiceAccount", "name": AUTHOR, "namespace": ns}],
    }
    rbac.create_namespaced_role_binding(ns, cast(Any, binding))
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    out = kube.core.create_namespaced_service_account_token(AUTHOR, ns, request)
    assert out.status is not None
    return str(out.status.token)


def example_in(path: Path, ns: str) -> Workflow:
    """The Workflow ``w`` of a Hera example as written, but in namespace ``ns``."""
    source = path.read_text()
    assert source.count('namespace="ml-team"') == 1
    module = types.ModuleType(f"hera_{path.stem}_e2e")
    module.__file__ = str(path)
    code = compile(source.replace('namespace="ml-team"', f'namespace="{ns}"'), path, "exec")
    exec(code, module.__dict__)
    w: Workflow = module.w
    return w


def on_kwok(w: Workflow) -> None:
    """What the engines here cannot provide, replaced: the workspace claim template becomes an
    emptyDir (no volume provisioner), and containers without a command get one (Argo's emissary
    would ask the image registry for the entrypoint; it is unreachable here, docs/engines.md)."""
    w.volume_claim_templates = None
    w.volumes = [m.Volume(name="workspace", empty_dir=m.EmptyDirVolumeSource())]
    for t in w.templates or []:
        if isinstance(t, m.Template) and t.container_set is not None:
            for c in t.container_set.containers:
                c.command = c.command or ["/entrypoint"]


def local_queues(kube: Kube, ns: str) -> None:
    """The example's queue names, on the per-test ClusterQueues (``queues`` fixture)."""
    for lq, cq in (("cpu-queue", f"{ns}-cpu"), ("gpu-queue", f"{ns}-gpu")):
        obj = {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": lq, "namespace": ns},
            "spec": {"clusterQueue": cq},
        }
        kube.create(KUEUE, "localqueues", obj, ns)

        def active(lq: str = lq) -> bool:
            return condition_is(kube.get(KUEUE, "localqueues", lq, ns), "Active")

        wait_until(f"LocalQueue {lq} Active", active, timeout=30)


def apply_service(kube: Kube, w: Workflow, name: str, ns: str) -> None:
    """The headless Service, as the Workflow's trainweave-service resource template applies it
    (kwok runs that template's pod without executing anything)."""
    (template,) = [
        t for t in w.templates or [] if isinstance(t, m.Template) and t.name == "trainweave-service"
    ]
    assert template.resource is not None and template.resource.manifest is not None
    service = yaml.safe_load(template.resource.manifest.replace("{{workflow.name}}", name))
    assert service["metadata"]["namespace"] == ns
    kube.core.create_namespaced_service(ns, service)


@pytest.fixture
def author(
    kube: Kube, namespace: str, queues: Callable[..., None], argo_server: str
) -> WorkflowsService:
    """Hera's WorkflowsService on the Argo server with the author's token; the examples' queues
    and their HuggingFace token Secret in the test namespace."""
    queues()
    local_queues(kube, namespace)
    secret = {"metadata": {"name": "hf-token"}, "stringData": {"HF_TOKEN": "test"}}
    kube.core.create_namespaced_secret(namespace, cast(Any, secret))
    return WorkflowsService(
        host=argo_server, token=author_token(kube, namespace), namespace=namespace
    )


def submit_and_wait(
    kube: Kube, author: WorkflowsService, w: Workflow
) -> tuple[m.Workflow, dict[str, dict[str, Any]]]:
    """Create ``w`` with Hera, follow it with ``get_workflow`` until it ends, then Hera's
    ``wait``; returns the finished Workflow and every Workload seen (all Finished)."""
    ns = str(w.namespace)
    on_kwok(w)
    w.workflows_service = author
    created = w.create()
    assert created.metadata.name is not None and w.name == created.metadata.name
    name = created.metadata.name
    apply_service(kube, w, name, ns)
    seen: dict[str, dict[str, Any]] = {}

    def workloads() -> None:
        for wl in kube.list(KUEUE, "workloads", ns):
            seen[wl["metadata"]["name"]] = wl

    def finished() -> str | None:
        workloads()
        wf = author.get_workflow(name, namespace=ns)
        phase = wf.status.phase if isinstance(wf, m.Workflow) and wf.status else None
        return phase if phase in ("Succeeded", "Failed", "Error") else None

    assert wait_until(f"workflow {name} finished (Hera get_workflow)", finished, 90) == "Succeeded"
    done = w.wait(poll_interval=1)  # Hera's own wait: returns at once now
    assert isinstance(done, m.Workflow) and done.status is not None
    assert done.status.phase == "Succeeded"

    def workloads_finished() -> bool:
        workloads()
        return all(condition_is(wl, "Finished") for wl in seen.values())

    wait_until("Workloads Finished", workloads_finished, timeout=30)
    return done, seen


def assert_workloads(
    seen: dict[str, dict[str, Any]], ns: str, expected: dict[str, tuple[str, str, int]]
) -> None:
    """Exactly the ``expected`` Workloads (name -> LocalQueue, ClusterQueue suffix, pods),
    each admitted on its ClusterQueue."""
    assert set(seen) == set(expected)
    for wl_name, (queue, cq, pods) in expected.items():
        wl = seen[wl_name]
        assert wl["spec"]["queueName"] == queue, wl_name
        assert sum(ps["count"] for ps in wl["spec"]["podSets"]) == pods, wl_name
        assert wl["status"]["admission"]["clusterQueue"] == f"{ns}-{cq}", wl_name


def test_hera_example_submitted_with_workflows_service(
    kube: Kube, namespace: str, author: WorkflowsService, argo_server: str
) -> None:
    # --auth-mode=client: a request without the author's token is refused
    with pytest.raises(Unauthorized):
        WorkflowsService(host=argo_server, namespace=namespace).list_workflows(namespace)
    done, seen = submit_and_wait(kube, author, example_in(EXAMPLES / "llm_pipeline.py", namespace))
    name = done.metadata.name
    # one Workload per trainweave step (the plain Hera `notify` has none), each on its queue
    assert_workloads(
        seen,
        namespace,
        {
            f"{name}-dataset-initializer-a0": ("cpu-queue", "cpu", 1),
            f"{name}-model-initializer-a0": ("cpu-queue", "cpu", 1),
            f"{name}-node-a0": ("gpu-queue", "gpu", 2),
            f"{name}-model-exporter-a0": ("cpu-queue", "cpu", 1),
        },
    )
    assert done.status is not None
    nodes = {n.display_name: n.phase for n in (done.status.nodes or {}).values()}
    assert nodes["notify"] == "Succeeded"


def test_hera_sweep_fans_out_one_pod_group_per_item(
    kube: Kube, namespace: str, author: WorkflowsService
) -> None:
    """examples/hera/lr_sweep.py with ``export=false``: plain Hera ``prepare`` beside the
    trainweave steps, the trainer once per learning rate, each its own 2-pod group, and the
    exporter skipped by its ``when``."""
    w = example_in(EXAMPLES / "lr_sweep.py", namespace)
    w.arguments = [Parameter(name="epochs", value="1"), Parameter(name="export", value="false")]
    done, seen = submit_and_wait(kube, author, w)
    name = done.metadata.name
    assert_workloads(
        seen,
        namespace,
        {
            f"{name}-dataset-initializer-a0": ("cpu-queue", "cpu", 1),
            f"{name}-node-1e-4-a0": ("gpu-queue", "gpu", 2),
            f"{name}-node-3e-4-a0": ("gpu-queue", "gpu", 2),
        },
    )
    for rate in ("1e-4", "3e-4"):
        pods = kube.group_pods(namespace, f"{name}-node-{rate}-a0")
        assert len(pods) == 2, rate
        for pod in pods:
            (container,) = [c for c in pod.spec.containers if c.name == "node"]
            assert container.args[:4] == ["--lr", rate, "--epochs", "1"], pod.metadata.name
            env = {e.name: e.value for e in container.env or []}
            assert env["PET_MASTER_ADDR"] == f"{name}-node-{rate}-0-0.{name}"
            assert pod.spec.hostname.startswith(f"{name}-node-{rate}-0-")
    assert done.status is not None
    nodes = {n.display_name: n.phase for n in (done.status.nodes or {}).values()}
    assert nodes["prepare"] == "Succeeded"
    assert nodes["model-exporter"] == "Skipped"


def test_hera_one_step_as_two_tasks_is_two_pod_groups(
    kube: Kube, namespace: str, author: WorkflowsService
) -> None:
    """The trainer step of examples/hera/eval_gate.py called as ``pretrain`` then ``finetune``,
    each with its own ``instance``: two Workloads of 2 pods, each with its own torch master."""
    node = trainer(
        "node",
        "pytorch/pytorch:2.13.0",
        ["torchrun", "train.py"],
        "gpu-queue",
        nodes=2,
        args=["--stage", "{{inputs.parameters.instance}}"],
    )
    with Workflow(generate_name="two-tasks-", namespace=namespace, entrypoint="main") as w:
        with DAG(name="main"):
            pretrain = node(name="pretrain", instance="pretrain")
            pretrain >> node(name="finetune", instance="finetune")
        w.on_exit = exit_cleanup(node)
    done, seen = submit_and_wait(kube, author, w)
    name = done.metadata.name
    stages = ("pretrain", "finetune")
    assert_workloads(
        seen, namespace, {f"{name}-node-{s}-a0": ("gpu-queue", "gpu", 2) for s in stages}
    )
    for stage in stages:
        pods = kube.group_pods(namespace, f"{name}-node-{stage}-a0")
        assert len(pods) == 2, stage
        for pod in pods:
            (container,) = [c for c in pod.spec.containers if c.name == "node"]
            assert container.args == ["--stage", stage]
            env = {e.name: e.value for e in container.env or []}
            assert env["PET_MASTER_ADDR"] == f"{name}-node-{stage}-0-0.{name}"


def test_argo_server_refuses_a_when_on_a_steps_outputs(
    namespace: str, author: WorkflowsService
) -> None:
    """A plain Hera task's ``when`` naming a trainweave task's outputs, which the builders
    cannot see: the Argo server refuses the Workflow on submit (docs/hera.md)."""
    node = trainer("node", "pytorch/pytorch:2.13.0", ["torchrun", "train.py"], "gpu-queue")
    with Workflow(generate_name="when-", namespace=namespace, entrypoint="main") as w:
        notify = Container(name="notify", image="busybox:1.37", command=["true"])
        with DAG(name="main"):
            when = "{{tasks.train.outputs.parameters.loss}} < 0.5"
            node(name="train") >> cast(Task, notify(when=when))
    w.workflows_service = author
    with pytest.raises(BadRequest, match=r"failed to resolve \{\{tasks.train.outputs"):
        w.create()
