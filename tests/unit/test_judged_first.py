"""Judged before anything runs (issue 38, item 1) and the one writer of conditions (issue 41,
item 4): the real ``Controller`` on the fake API server (``tests/unit/fakeapi``), whose hooks
refuse what an admission plugin or webhook would. Synchronised on the fake's state, never on
time."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.unit.cluster_objects import trainjob
from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.errors import Failure
from tests.unit.fakeapi.resources import Target
from tests.unit.fakeapi.running import Running, condition, example, terminal, wait_until
from tests.unit.test_controller_on_fake import apply, children
from trainweave.adapters.argo import pods
from trainweave.integrations.cluster import judge
from trainweave.integrations.views.decide.rollup import MAX_MESSAGE, rollup
from trainweave.integrations.views.read.observed import Observed, StartRefusal
from trainweave.integrations.views.requests import api
from trainweave.labels import Reason

Json = dict[str, Any]
NS = "team-a"
NOW = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)
PSA = (
    'pods "{name}" is forbidden: violates PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (container "{step}" must set '
    "securityContext.allowPrivilegeEscalation=false)"
)
QUOTA = (
    'pods "{name}" is forbidden: exceeded quota: compute, requested: requests.cpu=32, '
    "used: requests.cpu=0, limited: requests.cpu=16"
)


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi()


@pytest.fixture
def user(fake: FakeApi) -> Transport:
    return Transport(fake)


@pytest.fixture
def controller(fake: FakeApi) -> Iterator[Running]:
    ctl = Running(fake, NS).start()
    yield ctl
    ctl.stop()


def refuse_pods(
    fake: FakeApi, steps: set[str], message: str, times: int | None = None
) -> list[Json]:
    """Refuse (403, as Pod Security or the ResourceQuota plugin do) every pod create of
    ``steps``, the first ``times`` only when given; returns the pods the hook saw."""
    seen: list[Json] = []

    def hook(method: str, target: Target, body: Json | None) -> None:
        if method != "POST" or target.resource.kind.kind != "Pod" or body is None:
            return
        seen.append(body)
        step = body["metadata"]["labels"].get("trainweave.io/step")
        refused = sum(1 for p in seen if p["metadata"]["labels"].get("trainweave.io/step") in steps)
        if step in steps and (times is None or refused <= times):
            name = body["metadata"]["name"]
            raise Failure(403, "Forbidden", message.format(name=name, step=step))

    fake.hooks.append(hook)
    return seen


def events(fake: FakeApi, reason: str) -> list[str]:
    return [str(e.get("message")) for e in fake.objects("Event", NS) if e.get("reason") == reason]


def test_a_refused_trainer_pod_fails_the_trainjob_and_creates_nothing(
    fake: FakeApi, user: Transport, controller: Running
) -> None:
    seen = refuse_pods(fake, {"node"}, PSA)
    apply(user, *example(NS))
    assert wait_until("Failed", fake, lambda: terminal(fake, NS)) == "Failed"
    cond = condition(fake.find("TrainJob", NS, "ft"), "Failed")
    assert cond is not None and cond["reason"] == "RefusedByAPIServer"
    node = next(p for p in seen if p["metadata"]["labels"]["trainweave.io/step"] == "node")
    name = node["metadata"]["name"]
    assert cond["message"] == (
        f"step 'node' (replicatedJob 'node') Pod {NS}/{name}: 403 Forbidden: "
        + PSA.format(name=name, step="node")
    )
    assert children(fake, NS) == []  # no Workflow, Service, ConfigMap, Secret, PVC
    wait_until("the Warning Event", fake, lambda: events(fake, "RefusedByAPIServer"))
    # the pod judged is the one Argo will create: its executor, its Kueue group, its name
    assert [c["name"] for c in node["spec"]["containers"]] == ["wait", "node"]
    assert node["spec"]["initContainers"][0]["name"] == "init"
    assert node["spec"]["containers"][1]["command"][:2] == ["/var/run/argo/argoexec", "emissary"]
    labels = node["metadata"]["labels"]
    assert labels["workflows.argoproj.io/workflow"] == "ft"
    assert labels["kueue.x-k8s.io/pod-group-name"] == "ft-node-a0"
    assert name == f"ft-node-{pods.fnv32a('ft.node.node-0-0(0)')}"
    assert node["spec"]["hostname"] == "ft-node-0-0" and node["spec"]["subdomain"] == "ft"


def test_every_refusal_is_in_the_one_failed_condition(
    fake: FakeApi, user: Transport, controller: Running
) -> None:
    refuse_pods(fake, {"dataset-initializer", "node"}, PSA)
    apply(user, *example(NS))
    wait_until("Failed", fake, lambda: terminal(fake, NS))
    tj = fake.find("TrainJob", NS, "ft")
    failed = [c for c in (tj or {})["status"]["conditions"] if c["type"] == "Failed"]
    assert len(failed) == 1
    lines = failed[0]["message"].split("; ")
    assert [line.split(" (replicatedJob")[0] for line in lines] == [
        "step 'dataset-initializer'",
        "step 'node'",
    ]
    assert children(fake, NS) == []


def test_a_transient_refusal_is_retried_and_then_the_start_succeeds(
    fake: FakeApi, user: Transport, controller: Running
) -> None:
    refuse_pods(fake, {"node"}, QUOTA, times=2)
    apply(user, *example(NS))
    wait_until("the Workflow", fake, lambda: fake.find("Workflow", NS, "ft"))
    assert terminal(fake, NS) is None
    said = wait_until(
        "the Warning Event", fake, lambda: events(fake, "TrainJobResourcesCreationFailed")
    )
    assert "exceeded quota" in said[0] and "step 'node'" in said[0]
    assert {c.split("/")[0] for c in children(fake, NS)} == {"Workflow", "Service", "ConfigMap"}


def test_input_errors_are_all_in_the_failed_condition() -> None:
    """The one writer: every error of a refused start, in order, clipped as any message."""
    refusal = StartRefusal(Reason.INVALID_RUNTIME, ("a.b: is wrong", "c.d: is wrong too"))
    status = rollup(Observed(trainjob(), refused=refusal), NOW)
    (cond,) = status.conditions
    assert (cond["type"], cond["status"], cond["reason"]) == ("Failed", "True", "InvalidRuntime")
    assert cond["message"] == "a.b: is wrong; c.d: is wrong too"
    long = StartRefusal(Reason.INVALID_RUNTIME, tuple(f"e{i}: " + "x" * 100 for i in range(100)))
    (cond,) = rollup(Observed(trainjob(), refused=long), NOW).conditions
    assert len(cond["message"]) <= MAX_MESSAGE and cond["message"].endswith("more characters)")


def _err(status: int, reason: str, message: str) -> api.ApiError:
    return api.ApiError(status, reason, {"reason": reason, "message": message, "code": status})


@pytest.mark.parametrize(
    ("status", "reason", "message", "verdict"),
    [
        (403, "Forbidden", 'pods "p" is forbidden: violates PodSecurity "baseline"', "refused"),
        (422, "Invalid", 'Pod "p" is invalid: spec.containers[0].image: Required value', "refused"),
        (400, "BadRequest", 'admission webhook "v.kyverno.svc" denied the request', "refused"),
        (403, "Forbidden", 'admission webhook "vpod.kb.io" denied the request: bad', "refused"),
        (403, "Forbidden", "ValidatingAdmissionPolicy 'no-x' denied request", "refused"),
        (413, "RequestEntityTooLarge", "too large", "refused"),
        (403, "Forbidden", 'pods "p" is forbidden: exceeded quota: q, requested: ...', "transient"),
        (403, "Forbidden", 'pods "p" is forbidden: status unknown for quota: q', "transient"),
        (
            403,
            "Forbidden",
            'pods "p" is forbidden: error looking up service account ns/sa: not found',
            "refused",
        ),
        (
            403,
            "Forbidden",
            'pods is forbidden: User "u" cannot create resource "pods" in API group ""',
            "transient",
        ),
        (
            500,
            "InternalError",
            'Internal error occurred: failed calling webhook "mpod.kb.io": context deadline',
            "transient",
        ),
        (503, "ServiceUnavailable", "error calling webhook", "transient"),
        (504, "Timeout", "request did not complete", "transient"),
        (429, "TooManyRequests", "storage is (re)initializing", "transient"),
        (401, "Unauthorized", "Unauthorized", "transient"),
        (404, "NotFound", 'namespaces "ns" not found', "transient"),
        (409, "Conflict", "Operation cannot be fulfilled", "transient"),
        (409, "AlreadyExists", 'configmaps "c" already exists', "accepted"),
        (400, "BadRequest", 'admission webhook "w" does not support dry run', "accepted"),
    ],
    ids=lambda v: str(v)[:40] if isinstance(v, str) else str(v),
)
def test_which_refusals_are_final(status: int, reason: str, message: str, verdict: str) -> None:
    assert judge.verdict(_err(status, reason, message)) == verdict


def test_a_transport_failure_is_raised_not_judged() -> None:
    def send(req: api.Request) -> Json:
        raise api.ApiError(0, "ConnectionRefusedError", {"message": "refused"})

    with pytest.raises(api.ApiError, match="ConnectionRefusedError"):
        judge.judge(send, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])


def test_dry_runs_are_no_writes() -> None:
    """A dry run stores nothing: not counted as a write, never put into a cache, sent by a
    replica that no longer leads (``Controller.send``)."""
    req = judge.request({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert req is not None and req.dry_run and not req.is_write
    assert api.create(api.POD, "ns", {}).is_write
