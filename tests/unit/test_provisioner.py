"""The ProvisioningRequest stand-in (hack/provisioner*.py) without an API server: its decisions
tick by tick (each condition transition, booking expiry against consumption, nodes after the
delay, scale-down, check-capacity against best-effort-atomic, fault injection), the objects it
reads and writes, its command line, and properties over random runs."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.fakeapi.http import Served
from tests.unit.fakeapi.resources import DEFAULT, Resource
from tests.unit.fakeapi.server import FakeApi
from tests.unit.hack_scripts import HACK, load
from trainweave.integrations.views.requests import api

fit = load("provisioner_fit")
model = load("provisioner_model")
core = load("provisioner_core")
wire = load("provisioner_wire")
cli = load("provisioner")

POOL = {"trainweave.test/pool": "gpu"}
GPU_NODE = {"cpu": Decimal(64), "memory": Decimal(2**39), "pods": Decimal(110)}
GPU_NODE["nvidia.com/gpu"] = Decimal(8)
TEMPLATE = fit.NodeShape("", POOL, GPU_NODE)
CONFIG = model.Config(TEMPLATE, max_nodes=4)
ATOMIC, CHECK = model.ATOMIC, model.CHECK_CAPACITY
Json = dict[str, Any]


def gpu_pod(gpus: int = 8) -> Any:
    return fit.PodShape({"cpu": Decimal(4), "nvidia.com/gpu": Decimal(gpus)}, POOL)


def request(name: str = "wl-gpu-1", cls: str = ATOMIC, pods: int = 2, gpus: int = 8) -> Any:
    return model.Request("ns", name, cls, 0.0, pods, (gpu_pod(gpus),) * pods)


def static_node(name: str = "kwok-gpu-0") -> Any:
    return model.Node(fit.NodeShape(name, POOL, GPU_NODE))


def world(*requests: Any, nodes: tuple[Any, ...] = (), pods: tuple[Any, ...] = ()) -> Any:
    return model.World(tuple(requests), nodes, pods)


def tick(w: Any, now: float, memory: Any = None, config: Any = CONFIG) -> Any:
    return core.decide(w, memory or model.Memory(), config, now)


def apply(w: Any, decision: Any) -> Any:
    """What the API server holds after the actions (kwok makes a new node Ready; a deleted
    node's pods are collected)."""
    reqs = {r.key: r for r in w.requests}
    nodes = {n.shape.name: n for n in w.nodes}
    for a in decision.actions:
        key = f"{getattr(a, 'namespace', '')}/{getattr(a, 'name', '')}"
        if isinstance(a, model.SetConditions):
            reqs[key] = replace(reqs[key], conditions=a.conditions)
        elif isinstance(a, model.RecordPlan):
            reqs[key] = replace(reqs[key], plan=a.plan)
        elif isinstance(a, model.CreateNode):
            nodes[a.name] = model.Node(replace(CONFIG.template, name=a.name), a.owner)
        else:
            nodes.pop(a.name)
    pods = tuple(p for p in w.pods if not p.node or p.node in nodes)
    return model.World(tuple(reqs.values()), tuple(nodes.values()), pods)


def conds(decision: Any, name: str = "wl-gpu-1") -> dict[str, tuple[str, str]]:
    """The conditions a decision writes for a request: type -> (status, reason)."""
    for a in decision.actions:
        if isinstance(a, model.SetConditions) and a.name == name:
            return {c.type: (c.status, c.reason) for c in a.conditions}
    return {}


def of(decision: Any, kind: Any) -> list[Any]:
    return [a for a in decision.actions if isinstance(a, kind)]


def consumers(req: Any, node: str, n: int | None = None) -> tuple[Any, ...]:
    """Pods bound to ``node`` that name ``req`` in the consume annotation."""
    count = req.count if n is None else n
    return tuple(model.Pod(req.namespace, f"p{i}", node, gpu_pod(), req.name) for i in range(count))


# -- best-effort-atomic -----------------------------------------------------------------------------
def test_atomic_scale_up_is_provisioned_at_once_and_nodes_come_after_the_delay() -> None:
    d = tick(world(request()), now=100)
    assert conds(d) == {
        "Accepted": ("True", "Accepted"),
        "Provisioned": ("True", "CapacityIsProvisioned"),
    }
    (plan,) = of(d, model.RecordPlan)
    assert plan.plan == model.Plan(2, 100)  # two 8-GPU pods, two 8-GPU nodes
    assert of(d, model.CreateNode) == []
    order = [type(a).__name__ for a in d.actions]
    assert order == ["RecordPlan", "SetConditions"]  # the plan is written first
    w = apply(world(request()), d)
    assert of(tick(w, now=129), model.CreateNode) == []
    created = of(tick(w, now=130), model.CreateNode)
    assert [c.name for c in created] == [
        core.node_name("provisioned", "ns/wl-gpu-1", i) for i in (0, 1)
    ]
    assert {c.owner for c in created} == {"ns/wl-gpu-1"}
    w = apply(w, tick(w, now=130))
    assert tick(w, now=131).actions == ()  # made once


def test_atomic_uses_free_capacity_first() -> None:
    d = tick(world(request(pods=1), nodes=(static_node(),)), now=0)
    assert conds(d)["Provisioned"] == ("True", "CapacityIsFound")
    assert of(d, model.RecordPlan) == []
    d = tick(world(request(pods=3), nodes=(static_node(),)), now=0)
    assert of(d, model.RecordPlan)[0].plan.nodes == 2  # one pod on the free node


def test_atomic_packs_small_pods_onto_few_nodes() -> None:
    d = tick(world(request(pods=5, gpus=2)), now=0)
    assert of(d, model.RecordPlan)[0].plan.nodes == 2  # 4 + 1 two-GPU pods per 8-GPU node


def test_atomic_all_or_nothing_against_the_group_size() -> None:
    d = tick(world(request(pods=5)), now=0)  # 5 nodes > max_nodes 4
    assert conds(d) == {
        "Accepted": ("True", "Accepted"),
        "Provisioned": ("False", "CapacityIsNotFound"),
    }
    assert of(d, model.RecordPlan) == [] and of(d, model.CreateNode) == []


def test_a_pod_no_template_node_takes_is_not_found() -> None:
    req = request(pods=1)
    req = replace(req, pods=(fit.PodShape({"nvidia.com/gpu": Decimal(16)}, POOL),))
    assert conds(tick(world(req), now=0))["Provisioned"] == ("False", "CapacityIsNotFound")
    other = fit.PodShape({"cpu": Decimal(1)}, {"trainweave.test/pool": "cpu"})
    req = replace(req, pods=(other,))
    assert conds(tick(world(req), now=0))["Provisioned"] == ("False", "CapacityIsNotFound")


def test_not_found_is_retried_with_a_doubling_backoff() -> None:
    w = apply(world(request(pods=5)), tick(world(request(pods=5)), now=0))
    memory = model.Memory()
    assert tick(w, now=60, memory=memory).actions == ()  # wait 60 s: strictly after
    d = tick(w, now=61, memory=memory)
    assert conds(d)["Provisioned"] == ("False", "CapacityIsNotFound")
    assert d.memory.backoff == {"ns/wl-gpu-1": 120}
    w = apply(w, d)
    assert tick(w, now=181, memory=d.memory).actions == ()
    d = tick(w, now=182, memory=d.memory)
    assert d.memory.backoff == {"ns/wl-gpu-1": 240}
    assert tick(
        w, now=10_000, memory=replace(d.memory, backoff={"ns/wl-gpu-1": 600})
    ).memory.backoff == {"ns/wl-gpu-1": 600}


def test_a_retry_that_fits_is_provisioned_and_forgets_its_backoff() -> None:
    w = apply(world(request(pods=5)), tick(world(request(pods=5)), now=0))
    w = replace(w, requests=(replace(w.requests[0], count=2, pods=(gpu_pod(),) * 2),))
    d = tick(w, now=61)
    assert conds(d)["Provisioned"] == ("True", "CapacityIsProvisioned")
    assert tick(apply(w, d), now=62, memory=d.memory).memory.backoff == {}


# -- check-capacity -------------------------------------------------------------------------------
def test_check_capacity_never_adds_nodes() -> None:
    d = tick(world(request(cls=CHECK, pods=1), nodes=(static_node(),)), now=0)
    assert conds(d)["Provisioned"] == ("True", "CapacityIsFound")
    d = tick(world(request(cls=CHECK)), now=0)
    assert conds(d)["Provisioned"] == ("False", "CapacityIsNotFound")
    assert of(d, model.RecordPlan) == [] and of(d, model.CreateNode) == []


def test_check_capacity_no_retry_fails() -> None:
    req = replace(request(cls=CHECK), parameters={"noRetry": "true"})
    assert conds(tick(world(req), now=0))["Failed"] == ("True", "CapacityIsNotFound")


def test_a_booking_holds_capacity_against_later_requests() -> None:
    first, second = request("a", cls=CHECK, pods=1), request("b", cls=CHECK, pods=1)
    second = replace(second, created=1.0)
    d = tick(world(first, second, nodes=(static_node(),)), now=2)
    assert conds(d, "a")["Provisioned"] == ("True", "CapacityIsFound")
    assert conds(d, "b")["Provisioned"] == ("False", "CapacityIsNotFound")
    w = apply(world(first, second, nodes=(static_node(),)), d)
    # the next tick books "a" again: "b" still finds nothing once its backoff passed
    assert conds(tick(w, now=63), "b")["Provisioned"] == ("False", "CapacityIsNotFound")


def test_bound_pods_use_capacity() -> None:
    busy = model.Pod("other", "x", "kwok-gpu-0", gpu_pod())
    d = tick(world(request(cls=CHECK, pods=1), nodes=(static_node(),), pods=(busy,)), now=0)
    assert conds(d)["Provisioned"] == ("False", "CapacityIsNotFound")


# -- the booking ----------------------------------------------------------------------------------
def provisioned(at: float = 0.0, **kw: Any) -> Any:
    req = replace(request(), **kw)
    cond = model.Condition("Provisioned", "True", "CapacityIsFound", "", at)
    return replace(req, conditions=(cond,))


def test_the_booking_expires_after_the_reservation_time() -> None:
    w = world(provisioned(at=100), nodes=(static_node(), static_node("kwok-gpu-1")))
    assert tick(w, now=700).actions == ()  # not before 100 + 600 has passed
    d = tick(w, now=701)
    assert conds(d)["BookingExpired"] == ("True", "CapacityReservationTimeExpired")


def test_the_booking_ends_when_its_pods_are_bound() -> None:
    req = provisioned(at=100)
    w = world(req, nodes=(static_node(),), pods=consumers(req, "kwok-gpu-0", 1))
    assert tick(w, now=200).actions == ()  # one of two
    w = world(req, nodes=(static_node(),), pods=consumers(req, "kwok-gpu-0"))
    assert conds(tick(w, now=200))["BookingExpired"] == ("True", "CapacityBookingConsumed")
    pending = tuple(replace(p, node="") for p in consumers(req, ""))
    assert tick(world(req, pods=pending), now=200).actions == ()  # pending pods do not count
    by_time = replace(CONFIG, consumed_ends_booking=False)  # CA <= 1.36.1
    assert tick(w, now=200, config=by_time).actions == ()


def test_done_requests_are_left_alone() -> None:
    for ctype in ("Failed", "BookingExpired"):
        req = replace(request(), conditions=(model.Condition(ctype, "True", "x", "", 0.0),))
        assert tick(world(req), now=10**9).actions == ()


def test_a_missing_pod_template_fails() -> None:
    req = replace(request(), pods=None)
    assert conds(tick(world(req), now=0))["Failed"] == ("True", "FailedToCreatePods")


def test_never_provisioned_for_a_week_fails() -> None:
    w = world(request(pods=5))
    assert conds(tick(w, now=7 * 24 * 3600 + 1))["Failed"] == ("True", "Expired")


def test_other_classes_are_not_ours() -> None:
    assert tick(world(request(cls="queued-provisioning.gke.io")), now=0).actions == ()


def test_wait_for_nodes_provisions_once_they_are_ready() -> None:
    config = replace(CONFIG, wait_for_nodes=True)
    d = tick(world(request()), now=0, config=config)
    assert conds(d) == {"Accepted": ("True", "Accepted")} and of(d, model.RecordPlan)
    w = apply(world(request()), d)
    d = tick(w, now=30, config=config)
    assert len(of(d, model.CreateNode)) == 2 and "Provisioned" not in conds(d)
    d = tick(apply(w, d), now=31, config=config)
    assert conds(d)["Provisioned"] == ("True", "CapacityIsProvisioned")


# -- scale-down -----------------------------------------------------------------------------------
def test_empty_nodes_go_after_the_booking_and_the_unneeded_time() -> None:
    w = apply(world(request()), tick(world(request()), now=0))
    w = apply(w, tick(w, now=30))
    assert len(w.nodes) == 2
    d = tick(w, now=300)  # booked: kept, however empty
    assert of(d, model.DeleteNode) == [] and d.memory.empty_since == {}
    req = w.requests[0]
    busy = consumers(req, w.nodes[0].shape.name, 1)
    w = replace(w, pods=busy)
    d = tick(w, now=601)  # the booking expires; one node has a pod
    assert conds(d)["BookingExpired"][1] == "CapacityReservationTimeExpired"
    empty = w.nodes[1].shape.name
    assert d.memory.empty_since == {empty: 601}
    w = apply(w, d)
    assert of(tick(w, now=1200, memory=d.memory), model.DeleteNode) == []
    d = tick(w, now=1201, memory=d.memory)
    assert [a.name for a in of(d, model.DeleteNode)] == [empty]
    w = replace(apply(w, d), pods=())  # the last pod finishes
    d = tick(w, now=1202, memory=d.memory)
    assert d.memory.empty_since == {w.nodes[0].shape.name: 1202}


def test_nodes_not_made_here_are_never_scaled_down() -> None:
    d = tick(world(nodes=(static_node(),)), now=10**9, memory=model.Memory())
    assert d.actions == () and d.memory.empty_since == {}


# -- fault injection ------------------------------------------------------------------------------
def test_fail_next_fails_the_next_requests_only() -> None:
    a, b = request("a"), replace(request("b"), created=1.0)
    d = tick(world(a, b), now=2, memory=model.Memory(fail_next=1))
    assert conds(d, "a")["Failed"] == ("True", "InjectedFailure")
    assert conds(d, "b")["Provisioned"] == ("True", "CapacityIsProvisioned")
    assert d.memory.fail_next == 0


def test_revoke_marks_the_request_and_deletes_its_nodes() -> None:
    memory = model.Memory(revoke=frozenset({"wl-gpu-1"}))
    d = tick(world(request()), now=0, memory=memory)
    assert "CapacityRevoked" not in conds(d) and d.memory.revoke == {"wl-gpu-1"}
    w = apply(world(request()), d)
    w = apply(w, tick(w, now=30))
    req = w.requests[0]
    w = replace(w, pods=consumers(req, w.nodes[0].shape.name))
    d = tick(w, now=40, memory=d.memory)
    assert conds(d)["CapacityRevoked"] == ("True", "CapacityRevoked")
    assert {a.name for a in of(d, model.DeleteNode)} == {n.shape.name for n in w.nodes}
    assert d.memory.revoke == frozenset()
    w = apply(w, d)
    assert tick(w, now=41).actions == ()
    flagged = replace(provisioned(), revoke=True)  # the annotation a test may set
    assert conds(tick(world(flagged), now=1))["CapacityRevoked"][0] == "True"


# -- the objects ----------------------------------------------------------------------------------
PR: Json = {
    "apiVersion": "autoscaling.x-k8s.io/v1",
    "kind": "ProvisioningRequest",
    "metadata": {
        "name": "wl-gpu-1",
        "namespace": "ns",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "annotations": {wire.PLAN: "2@2026-01-01T00:00:05Z"},
    },
    "spec": {
        "provisioningClassName": ATOMIC,
        "parameters": {"noRetry": "false"},
        "podSets": [{"podTemplateRef": {"name": "ppt-wl-gpu-1-main"}, "count": 2}],
    },
    "status": {
        "conditions": [
            {
                "type": "Provisioned",
                "status": "True",
                "reason": "CapacityIsProvisioned",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:05Z",
            }
        ]
    },
}
PPT: Json = {
    "template": {
        "spec": {
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "nodeSelector": POOL,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        }
    }
}


def test_a_provisioning_request_and_its_pod_template() -> None:
    req = wire.request_of(PR, {"ppt-wl-gpu-1-main": PPT})
    assert (req.key, req.class_name, req.count) == ("ns/wl-gpu-1", ATOMIC, 2)
    assert req.plan == model.Plan(2, wire.parse_time("2026-01-01T00:00:05Z"))
    assert req.pods[0].requests == {"nvidia.com/gpu": Decimal(8)}  # the limit is the request
    assert req.pods[0].node_selector == POOL and len(req.pods) == 2
    assert req.true("Provisioned") and req.parameters == {"noRetry": "false"}
    assert wire.request_of(PR, {"ppt-wl-gpu-1-main": None}).pods is None


def test_written_conditions_and_plan_read_back() -> None:
    req = wire.request_of(PR, {"ppt-wl-gpu-1-main": PPT})
    action = model.SetConditions("ns", "wl-gpu-1", req.conditions)
    back = {**PR, "status": wire.conditions_body(action)["status"]}
    assert wire.request_of(back, {}).conditions == req.conditions
    patch = wire.plan_patch(model.RecordPlan("ns", "wl-gpu-1", req.plan))
    assert wire.plan_of(patch["metadata"]["annotations"][wire.PLAN]) == req.plan


def test_nodes_and_pods_as_read() -> None:
    body = wire.template_node(wire.pool_node("gpu"), {"x": "y"}, [fit.Taint("nvidia.com/gpu")])
    node = wire.node_body(body, model.CreateNode("provisioned-abc-0", "ns/wl-gpu-1"))
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "provisioned-abc-0"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    read = wire.node_of(node)
    assert read.owner == "ns/wl-gpu-1" and not read.shape.schedulable  # not Ready yet
    assert read.shape.allocatable["nvidia.com/gpu"] == 8 and read.shape.labels["x"] == "y"
    shape = wire.shape_of_template(body)
    assert shape.schedulable and shape.taints == (fit.Taint("nvidia.com/gpu"),)
    assert fit.admits(shape, wire.pod_shape(PPT["template"]["spec"]))
    assert not fit.admits(shape, gpu_pod())  # no toleration
    pod = {
        "metadata": {"namespace": "ns", "name": "p", "annotations": {wire.CONSUME: "wl-gpu-1"}},
        "spec": {"nodeName": "n", "containers": []},
        "status": {"phase": "Running"},
    }
    assert wire.pod_of(pod).consumes == "wl-gpu-1"
    assert wire.pod_of({**pod, "status": {"phase": "Succeeded"}}) is None


def test_tolerations() -> None:
    taint = fit.Taint("k", "v", "NoSchedule")
    assert fit.Toleration("k", "Equal", "v").tolerates(taint)
    assert not fit.Toleration("k", "Equal", "w").tolerates(taint)
    assert fit.Toleration("", "Exists").tolerates(taint)
    assert not fit.Toleration("k", "Exists", effect="NoExecute").tolerates(taint)


def test_the_command_line() -> None:
    args = cli.parse_args(["--scale", "0.5", "--taint", "nvidia.com/gpu=present:NoSchedule"])
    config = cli.config_of(args, cli.template_of(args))
    assert (config.booking_seconds, config.scale_down_unneeded_seconds) == (300, 300)
    assert config.template.taints == (fit.Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert config.consumed_ends_booking and not config.wait_for_nodes
    with pytest.raises(SystemExit):
        cli.taint_of("nvidia.com/gpu")
    r = subprocess.run(
        [sys.executable, str(HACK / "provisioner.py"), "-h"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.startswith("usage:")


def fake_cluster() -> FakeApi:
    """The fake API server with ProvisioningRequests (status subresource), PodTemplates and
    nodes (a node's status is kept on create, as the API server keeps it)."""
    pr = api.Kind(wire.GROUP, wire.VERSION, wire.PLURAL, "ProvisioningRequest")
    ppt = api.Kind("", "v1", "podtemplates", "PodTemplate")
    node = api.Kind("", "v1", "nodes", "Node", namespaced=False)
    extra = (Resource(pr, status=True, returns_deleted=True), Resource(ppt, builtin=True))
    return FakeApi((*DEFAULT, *extra, Resource(node, builtin=True)))


def kubeconfig(path: Path, server: str) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
        "current-context": "fake",
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def test_ticks_over_http(tmp_path: Path) -> None:
    """The loop's reads and writes on an API server: conditions through /status, the plan
    annotation, then kwok nodes from the e2e pool's template, owned by the request."""
    fake = fake_cluster()
    pr = copy.deepcopy(PR)
    del pr["status"], pr["metadata"]["annotations"], pr["metadata"]["creationTimestamp"]
    ppt = {"apiVersion": "v1", "kind": "PodTemplate", **PPT}
    ppt["metadata"] = {"name": "ppt-wl-gpu-1-main", "namespace": "ns"}
    fake.seed(pr, ppt)
    served = Served(fake)
    try:
        args = cli.parse_args(
            ["--kubeconfig", str(kubeconfig(tmp_path / "kc", served.url)), "--provision-delay", "0"]
        )
        template = cli.template_of(args)
        config, client = cli.config_of(args, template), cli.Api(args.kubeconfig)
        memory = cli.tick(client, model.Memory(), config, template)
        got = fake.find("ProvisioningRequest", "ns", "wl-gpu-1")
        assert got is not None
        assert [(c["type"], c["status"]) for c in got["status"]["conditions"]] == [
            ("Accepted", "True"),
            ("Provisioned", "True"),
        ]
        assert got["metadata"]["annotations"][wire.PLAN].startswith("2@")
        cli.tick(client, memory, config, template)
        nodes = fake.objects("Node")
        assert len(nodes) == 2
        assert {n["metadata"]["annotations"][wire.OWNER] for n in nodes} == {"ns/wl-gpu-1"}
        assert all(n["status"]["allocatable"]["nvidia.com/gpu"] == "8" for n in nodes)
    finally:
        served.close()


# -- properties over random runs ------------------------------------------------------------------
STEP = st.tuples(st.sampled_from([1, 31, 120, 601, 1300]), st.booleans(), st.booleans())
REQ = st.tuples(st.sampled_from([ATOMIC, CHECK]), st.integers(1, 3), st.sampled_from([1, 4, 8]))


def bind(w: Any, req: Any) -> Any:
    """The scheduler: a provisioned request's pods bound where they fit, all or none."""
    snap = fit.Snapshot(n.shape for n in w.nodes)
    for p in w.pods:
        snap.take(p.node, p.shape)
    placed = [snap.place(shape) for shape in req.pods]
    if None in placed or any(p.consumes == req.name for p in w.pods):
        return w
    new = tuple(
        model.Pod(req.namespace, f"{req.name}-{i}", node, req.pods[i], req.name)
        for i, node in enumerate(placed)
    )
    return replace(w, pods=w.pods + new)


@settings(max_examples=80, deadline=None)
@given(st.lists(REQ, min_size=1, max_size=3), st.lists(STEP, min_size=1, max_size=16))
def test_runs_keep_the_invariants(reqs: list[Any], steps: list[Any]) -> None:
    """Over any run: a booking ends once, for one reason, and never while it still holds; a
    request never gets more nodes than pods; the group never passes its maximum; a node with a
    pod is never scaled down; Provisioned=True is never taken back."""
    requests = [
        replace(request(f"r{i}", cls, n, g), created=float(i)) for i, (cls, n, g) in enumerate(reqs)
    ]
    w, memory, now = world(*requests, nodes=(static_node(),)), model.Memory(), 10.0
    for dt, schedule, finish in steps:
        now += dt
        d = tick(w, now, memory)
        busy = {p.node for p in w.pods}
        for a in d.actions:
            if isinstance(a, model.SetConditions):
                before = next(r for r in w.requests if r.name == a.name)
                after = {c.type: c for c in a.conditions}
                if before.true("Provisioned"):
                    assert after["Provisioned"].status == "True"
                if before.true("BookingExpired"):
                    assert after["BookingExpired"] == before.condition("BookingExpired")
                expired = after.get("BookingExpired")
                if expired and not before.true("BookingExpired"):
                    start = after["Provisioned"].at
                    by_time = expired.reason == "CapacityReservationTimeExpired"
                    assert by_time == (now > start + CONFIG.booking_seconds)
            if isinstance(a, model.DeleteNode):
                assert a.name not in busy
        w, memory = apply(w, d), d.memory
        for req in w.requests:
            made = [n for n in w.nodes if n.owner == req.key]
            assert len(made) <= req.count and len(made) <= (req.plan.nodes if req.plan else 0)
        assert len([n for n in w.nodes if n.owner]) <= CONFIG.max_nodes
        if schedule:
            for req in w.requests:
                if req.true("Provisioned"):
                    w = bind(w, req)
        if finish:
            w = replace(w, pods=w.pods[1:])
