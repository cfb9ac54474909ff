"""Ready for Kueue 0.20, which stops serving ``kueue.x-k8s.io/v1beta1`` (0.21 removes it): in the
cluster every read and write of a Kueue object is ``v1beta2``.

Two checks: the source of every product module that talks to a cluster names no v1beta1 Kueue
path (only the offline ``trainweave/queues.py`` reads v1beta1 files, for ``plan --queues``), and
the controller, run end to end on the fake API server, sends no request to one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.fakeapi import FakeApi, Transport
from tests.unit.fakeapi.engines import Engines
from tests.unit.fakeapi.http import Served
from tests.unit.fakeapi.resources import Target
from tests.unit.fakeapi.running import Running, example, terminal, wait_until
from trainweave.integrations.views.requests import api

ROOT = Path(__file__).parents[2]
CLUSTER_CODE = ("integrations", "adapters", "workflows", "trainweave")
OFFLINE_READERS = {Path("trainweave/queues.py")}  # plan --queues: v1beta1 files, read offline
# a Kueue API path or group-version: "kueue.x-k8s.io/v1beta1", ("kueue.x-k8s.io", "v1beta1"), ...
V1BETA1 = re.compile(r"kueue\.x-k8s\.io['\"]?\s*[/,]\s*['\"]?v1beta1")
NS = "team-a"


def test_every_kueue_kind_the_cluster_code_uses_is_v1beta2() -> None:
    kueue = [
        k for k in vars(api).values() if isinstance(k, api.Kind) and k.group == "kueue.x-k8s.io"
    ]
    assert {k.kind for k in kueue} >= {"Workload", "ClusterQueue", "LocalQueue"}
    assert {k.version for k in kueue} == {"v1beta2"}


def test_the_pattern_finds_each_spelling_of_a_v1beta1_kueue_path() -> None:
    for text in (
        '"/apis/kueue.x-k8s.io/v1beta1/workloads"',
        'Kind("kueue.x-k8s.io", "v1beta1", "workloads", "Workload")',
        "('kueue.x-k8s.io','v1beta1')",
    ):
        assert V1BETA1.search(text), text
    assert not V1BETA1.search('Kind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")')


def test_no_product_module_names_a_v1beta1_kueue_path_but_the_offline_queue_reader() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for top in CLUSTER_CODE
        for path in sorted((ROOT / top).rglob("*.py"))
        if path.relative_to(ROOT) not in OFFLINE_READERS
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if V1BETA1.search(line)
    ]
    assert found == []


@pytest.fixture
def fake() -> FakeApi:
    return FakeApi()


def test_the_controller_sends_no_request_to_a_v1beta1_kueue_path(
    fake: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths: list[str] = []
    target = fake.target

    def recording(path: str) -> Target:
        paths.append(path)
        return target(path)

    monkeypatch.setattr(fake, "target", recording)
    served = Served(fake)
    ctl = Running(fake, NS, served=served).start()
    try:
        user = Transport(fake)
        tj, rt = example(NS)
        user(api.create(api.BY_KIND[rt["kind"]], NS, rt))
        user(api.create(api.TRAINJOB, NS, tj))
        wait_until("the Workflow", fake, lambda: fake.find("Workflow", NS, "ft"))
        Engines(user).settle()
        wait_until("Complete", fake, lambda: terminal(fake, NS))
    finally:
        ctl.stop()
        served.close()
    kueue = [p for p in paths if "/kueue.x-k8s.io/" in p]
    assert kueue, "the controller read no Kueue object: the check would prove nothing"
    assert [p for p in kueue if "/v1beta2/" not in p] == []
