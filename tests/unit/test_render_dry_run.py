"""``trainweave render --dry-run=server`` against the fake API server (``tests.unit.fakeapi``):
each rendered object is a dry-run create (nothing stored), each refusal one ``error:`` line with
exit 2, an unreachable server exit 1; without the flag nothing is sent."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.fakeapi import Transport
from tests.unit.test_no_traceback import run_cli
from trainweave.integrations.commands import dry_run
from trainweave.integrations.views.requests import api

EX = Path(__file__).resolve().parents[2] / "examples" / "llm-finetune"
ARGV = ["render", str(EX / "trainjob.yaml"), "--runtime", str(EX / "runtime.yaml")]
Json = dict[str, Any]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Transport:
    """The fake API server the CLI's dry run reaches instead of a kubeconfig's."""
    transport = Transport.of()
    monkeypatch.setattr(dry_run, "sender", lambda kubeconfig: transport)
    return transport


def _rendered() -> list[Json]:
    code, out, err = run_cli(ARGV)
    assert code == 0, err
    return [d for d in yaml.safe_load_all(out) if d]


def test_every_object_is_a_dry_run_create_and_nothing_is_stored(fake: Transport) -> None:
    code, out, err = run_cli([*ARGV, "--dry-run=server"])
    assert (code, err) == (0, "")
    objects = [d for d in yaml.safe_load_all(out) if d]
    assert [(r.method, dict(r.query)) for r in fake.sent] == [
        ("POST", {"dryRun": "All", "fieldValidation": "Strict"})
    ] * len(objects)
    assert [r.body for r in fake.sent] == objects
    assert {k: fake.server.objects(k) for k in ("Workflow", "ConfigMap", "Service")} == {
        "Workflow": [],
        "ConfigMap": [],
        "Service": [],
    }


def test_each_refusal_is_one_line_and_nothing_is_printed(fake: Transport) -> None:
    """A webhook-like refusal of the Workflow (the fake's per-kind validator)."""
    fake.server.validators["Workflow"] = lambda obj: [
        ("spec.templates[0].name", "Forbidden: refused by policy")
    ]
    code, out, err = run_cli([*ARGV, "--dry-run=server"])
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("error: (dry-run=server): Workflow ml-team/llama-support-ft: 422 ")
    assert "spec.templates[0].name" in line and "refused by policy" in line


def test_refusals_name_each_object() -> None:
    """Two objects the API server refuses (invalid names), the rest accepted."""
    manifests = _rendered()
    bad = copy.deepcopy(manifests)
    configmaps = [o for o in bad if o["kind"] == "ConfigMap"]
    assert configmaps
    for obj in configmaps:
        obj["metadata"]["name"] = obj["metadata"]["name"].upper()
    errors = dry_run.refusals(Transport.of(), bad)
    assert [e.path for e in errors] == [
        f"ConfigMap ml-team/{o['metadata']['name']}" for o in configmaps
    ]
    assert all(e.source == "(dry-run=server)" and " 422 " in f" {e.message}" for e in errors)


def test_an_unreachable_server_is_exit_1(fake: Transport) -> None:
    fake.cut()
    code, out, err = run_cli([*ARGV, "--dry-run=server"])
    assert (code, out) == (1, "")
    assert err == "error: ConnectionRefusedError: the client is gone\n"


@pytest.mark.parametrize("flag", [[], ["--dry-run=none"], ["--dry-run=client"]])
def test_without_server_nothing_is_sent(fake: Transport, flag: list[str]) -> None:
    code, _, err = run_cli([*ARGV, *flag])
    assert (code, err) == (0, "")
    assert fake.sent == []


def test_a_kind_without_a_resource_is_named() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}
    assert dry_run.request(obj) is None
    (error,) = dry_run.refusals(Transport.of(), [obj])
    assert (
        str(error) == "(dry-run=server): Thing t: no resource known for apiVersion example.com/v1"
    )


def test_a_cluster_scoped_kind_is_posted_without_a_namespace() -> None:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "q", "namespace": "ignored"},
    }
    req = dry_run.request(obj)
    assert req is not None and req.path == api.CLUSTER_QUEUE.path()
