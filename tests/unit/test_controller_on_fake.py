"""The real ``Controller`` end to end on the fake API server (``tests/unit/fakeapi``): informers,
workers, Events and the real render, the test playing Argo and Kueue (``fakeapi.engines``).
Synchronised on the fake's state (``wait_until``, ``Running.settled``), never on time.

The cases that need only the API server's semantics live here instead of tests/e2e: a missing
runtime, a runtime of another namespace, and a crash after every write.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.engines import Engines
from tests.unit.fakeapi.http import Served
from tests.unit.fakeapi.running import Running, condition, example, terminal, wait_until
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
NS, OTHER = "team-a", "team-b"
RJOBS = {"dataset-initializer", "model-initializer", "node", "model-exporter"}


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi()


@pytest.fixture
def user(fake: FakeApi) -> Transport:
    """A user's client (kubectl): creates the runtimes and TrainJobs."""
    return Transport(fake)


@pytest.fixture
def controller(fake: FakeApi) -> Iterator[Running]:
    """The controller, watching ``NS`` (as tests/e2e runs it), over HTTP through KubeClient."""
    served = Served(fake)
    ctl = Running(fake, NS, served=served).start()
    yield ctl
    ctl.stop()
    served.close()


def apply(user: Transport, tj: Json, rt: Json | None) -> None:
    if rt is not None:
        kind = api.BY_KIND[rt["kind"]]
        user(api.create(kind, rt["metadata"].get("namespace", ""), rt))
    user(api.create(api.TRAINJOB, tj["metadata"]["namespace"], tj))


def names(fake: FakeApi, kind: str, ns: str) -> list[str]:
    return [o["metadata"]["name"] for o in fake.objects(kind, ns)]


def test_a_trainjob_runs_to_complete(fake: FakeApi, user: Transport, controller: Running) -> None:
    """TrainingRuntime + TrainJob in; the Service, ConfigMaps and Workflow out; Argo and Kueue
    run it (played); the status rolls up to Complete."""
    apply(user, *example(NS))
    wait_until("the Workflow", fake, lambda: fake.find("Workflow", NS, "ft"))
    assert names(fake, "Service", NS) == ["ft"]
    assert names(fake, "ConfigMap", NS) == ["ft-runtime-snapshot"]
    tj = fake.find("TrainJob", NS, "ft")
    assert tj is not None
    for kind in ("Service", "ConfigMap", "Workflow"):
        (obj,) = fake.objects(kind, NS)
        assert obj["metadata"]["ownerReferences"][0]["uid"] == tj["metadata"]["uid"]
    started = wait_until(
        "the first jobsStatus",
        fake,
        lambda: (fake.find("TrainJob", NS, "ft") or {}).get("status", {}).get("jobsStatus"),
    )
    assert {j["name"] for j in started} == RJOBS
    engines = Engines(user)
    assert engines.settle() > 20
    wait_until("Complete", fake, lambda: terminal(fake, NS))
    done = fake.find("TrainJob", NS, "ft")
    cond = condition(done, "Complete")
    assert cond is not None and cond["reason"] == "AllJobsCompleted", done
    assert done is not None
    jobs = {j["name"]: j for j in done["status"]["jobsStatus"]}
    assert set(jobs) == RJOBS
    assert jobs["node"]["succeeded"] == 1 and all(j["failed"] == 0 for j in jobs.values())
    quota = json.loads(done["metadata"]["annotations"]["trainweave.io/quota"])
    assert {s["step"] for s in quota["steps"]} == RJOBS
    assert names(fake, "Workflow", NS) == ["ft"]


def test_missing_runtime_fails_with_reason(
    fake: FakeApi, user: Transport, controller: Running
) -> None:
    """Moved from tests/e2e/test_controller.py."""
    tj, _ = example(NS)
    apply(user, tj, None)
    wait_until("Failed", fake, lambda: terminal(fake, NS))
    cond = condition(fake.find("TrainJob", NS, "ft"), "Failed")
    assert cond is not None and cond["reason"] == "TrainingRuntimeNotFound"
    assert "spec.runtimeRef.name" in cond["message"]
    assert fake.objects("Workflow", NS) == []


def children(fake: FakeApi, ns: str) -> list[str]:
    """The objects trainweave creates (Workflows; ConfigMaps, Services, Secrets, PVCs labelled
    ``trainweave.io/trainjob`` or owned by a TrainJob) that exist in ``ns``."""
    found = [f"Workflow/{n}" for n in names(fake, "Workflow", ns)]
    for kind in ("ConfigMap", "Service", "Secret", "PersistentVolumeClaim"):
        found += [
            f"{kind}/{o['metadata']['name']}"
            for o in fake.objects(kind, ns)
            if (o["metadata"].get("labels") or {}).get("trainweave.io/trainjob")
            or any(r.get("kind") == "TrainJob" for r in o["metadata"].get("ownerReferences") or [])
        ]
    return found


@pytest.mark.parametrize(
    ("kind", "ref"),
    [
        ("TrainingRuntime", "{name}"),  # same name, other namespace
        ("TrainingRuntime", "../../{other}/trainingruntimes/{name}"),
        ("ClusterTrainingRuntime", "../namespaces/{other}/trainingruntimes/{name}"),
    ],
    ids=["same-name", "namespaced-path", "cluster-path"],
)
def test_runtime_of_another_namespace_is_not_found(
    fake: FakeApi, user: Transport, controller: Running, kind: str, ref: str
) -> None:
    """Moved from tests/e2e/test_rbac.py: the controller's reads are API semantics (a GET in the
    TrainJob's namespace, a name that is no object name never sent), not RBAC refusals."""
    tj, rt = example(OTHER)
    user(api.create(api.TRAINING_RUNTIME, OTHER, rt))
    tj["metadata"]["namespace"] = NS
    tj["spec"]["runtimeRef"] = {
        "kind": kind,
        "name": ref.format(name=rt["metadata"]["name"], other=OTHER),
    }
    apply(user, tj, None)
    wait_until("Failed", fake, lambda: terminal(fake, NS))
    cond = condition(fake.find("TrainJob", NS, "ft"), "Failed")
    assert cond is not None and cond["reason"] == "TrainingRuntimeNotFound", cond
    assert "spec.runtimeRef.name" in cond["message"]
    assert fake.objects("Workflow", NS) == []
    assert children(fake, OTHER) == []


@pytest.mark.parametrize("judge_first", [True, False])
def test_judged_first_unless_switched_off(
    fake: FakeApi, user: Transport, monkeypatch: pytest.MonkeyPatch, judge_first: bool
) -> None:
    """``Config.judge_first`` (``trainweave controller --no-judge-first`` sets it False): on,
    the one start sends its dry-run creates before the first real create and its time is
    observed in ``trainweave_judge_seconds``; off, no dry run is sent and nothing observed."""
    sent: list[tuple[str, str]] = []
    handle = fake.handle

    def recording(method: str, url: str, body: Json | None, content_type: str) -> Json:
        sent.append((method, url))
        return handle(method, url, body, content_type)

    monkeypatch.setattr(fake, "handle", recording)
    ctl = Running(fake, NS, judge_first=judge_first).start()
    try:
        apply(user, *example(NS))
        wait_until("the Workflow", fake, lambda: fake.find("Workflow", NS, "ft"))
    finally:
        ctl.stop()
    theirs = ("/events", "/leases", "/trainjobs", "/trainingruntimes")  # not the start's creates
    posts = [url for method, url in sent if method == "POST" and not any(t in url for t in theirs)]
    dry = [i for i, url in enumerate(posts) if "dryRun=All" in url]
    real = [i for i, url in enumerate(posts) if "dryRun" not in url]
    observed = ctl.metrics.registry.get_sample_value("trainweave_judge_seconds_count")
    if judge_first:
        assert dry and real and max(dry) < min(real), posts
        assert any("/pods?" in posts[i] for i in dry), "the step pods are judged too"
        assert observed == 1.0
    else:
        assert dry == [] and real, posts
        assert observed == 0.0
