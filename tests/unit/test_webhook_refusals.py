"""trainweave refuses what Kubeflow Trainer v2.3.0 refuses at admission, naming the same field.

trainweave's side alone (no Go): every case of ``tests.oracle.webhook_cases`` is refused by
``to_pipeline`` (so by the CLI and, as a ``Failed`` condition, by the controller) naming the
field upstream names, or a field under it. ``test_webhook_cases.py`` (schema tier) checks the
same cases against upstream's own code through ``hack/oracle``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.oracle import webhook_cases
from tests.oracle.webhook_cases import WebhookCase
from tests.unit.cluster_objects import trainjob as cluster_trainjob
from tests.unit.fakeapi import Transport
from tests.unit.test_reconcile import NOW
from trainweave.adapters import render
from trainweave.adapters.trainjob.trainer import to_pipeline
from trainweave.cli import main
from trainweave.errors import InputError, InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.integrations.cluster.executor import Executor, run_once
from trainweave.integrations.views.read.observed import Observed
from trainweave.labels import Reason

Json = dict[str, Any]


def refusals(trainjob: Json, runtime: Json) -> list[InputError]:
    """trainweave's errors for the pair (parsing, then translation); [] if it accepts."""
    try:
        to_pipeline(parse_trainjob(trainjob), parse_runtime(runtime), default_queue="q")
    except InputErrors as e:
        return list(e.errors)
    return []


@pytest.mark.parametrize("base", sorted(webhook_cases.BASES))
def test_the_bases_are_accepted(base: str) -> None:
    assert refusals(*webhook_cases.BASES[base]()) == []


@pytest.mark.parametrize("case", webhook_cases.CASES, ids=lambda c: c.name)
def test_refused_naming_upstreams_field(case: WebhookCase) -> None:
    paths = [e.path for e in refusals(*case.inputs())]
    assert any(webhook_cases.names_field(p, case.field) for p in paths), paths


def test_every_upstream_judge_has_cases() -> None:
    judges = {c.judge for c in webhook_cases.CASES}
    assert judges == {
        "runtime-webhook", "trainjob-webhook", "crd", "torch", "torchtune", "mpi", "xgboost",
        "jobset",
    }  # fmt: skip
    assert len(webhook_cases.CASES) >= 30


@pytest.mark.parametrize(
    ("name", "line"),
    [
        (
            "runtime/trainer-replicas-2",
            "RT: spec.template.spec.replicatedJobs[2].replicas: always must be 1 in a job labelled"
            " trainer.kubeflow.org/trainjob-ancestor-step: trainer, got 2",
        ),
        (
            "runtime/trainer-without-node",
            "RT: spec.template.spec.replicatedJobs[2].template.spec.template.spec.containers:"
            " must contain the required container for the ancestor: trainer (a container named"
            " 'node')",
        ),
        (
            "crd/torch-and-mpi",
            "RT: spec.mlPolicy: Only one of the policy can be configured, got torch, mpi",
        ),
        (
            "jobset/patch-manager-not-domain-prefixed",
            "TJ: spec.runtimePatches[0].manager: 'trainweave' must be a domain-prefixed path (such"
            ' as "acme.io/foo"): the domain of the tool that wrote the patch',
        ),
    ],
)
def test_the_cli_refuses_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, line: str
) -> None:
    trainjob, runtime = webhook_cases.case(name).inputs()
    tj_file, rt_file = tmp_path / "tj.yaml", tmp_path / "rt.yaml"
    tj_file.write_text(yaml.safe_dump(trainjob))
    rt_file.write_text(yaml.safe_dump(runtime))
    code = main(["render", str(tj_file), "--runtime", str(rt_file), "--default-queue", "q"])
    out, err = capsys.readouterr()
    want = line.replace("TJ", str(tj_file), 1).replace("RT", str(rt_file), 1)
    assert (code, out, err.splitlines()) == (2, "", [f"error: {want}"])


def test_the_controller_fails_the_trainjob_naming_the_field() -> None:
    """In the cluster the same refusal is the TrainJob's ``Failed`` condition."""
    _, runtime = webhook_cases.case("runtime/trainer-replicas-2").inputs()
    runtime.update(kind="ClusterTrainingRuntime", metadata={"name": "rt"})
    obs = Observed(cluster_trainjob(annotations={"trainweave.io/attempts": "1"}))
    fake = Transport.of(obs.trainjob, runtime)

    def renderer(trainjob: Json, runtime: Json, options: render.Options) -> list[Json]:
        return render.render(parse_trainjob(trainjob), parse_runtime(runtime), options)

    run_once(Executor(fake, renderer, lambda: NOW), obs, NOW)
    status = next(r.body for r in fake.write_requests if r.path.endswith("/status"))
    assert status is not None
    (cond,) = [c for c in status["status"]["conditions"] if c["type"] == "Failed"]
    assert (cond["status"], cond["reason"]) == ("True", Reason.INVALID_RUNTIME)
    assert cond["message"].startswith("spec.template.spec.replicatedJobs[2].replicas: always")
    stored = fake.server.find("TrainJob", "ns", "ft")
    assert stored is not None and stored["status"]["conditions"] == status["status"]["conditions"]
    assert fake.server.objects("Workflow") == []
