"""ObjectMeta as the API server judges it (``trainweave.object_meta``): the TrainJob's
namespace, labels and annotations, and the labels and annotations of the runtime's pod
templates, refused by ``trainweave render`` naming the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_no_traceback import run_cli
from trainweave import object_meta
from trainweave.labels import Reason

EX = Path(__file__).resolve().parents[2] / "examples" / "llm-finetune"
Json = dict[str, Any]


def _render(tmp_path: Path, tj_edit: Json | None = None, pod_meta: Json | None = None) -> str:
    tj = yaml.safe_load((EX / "trainjob.yaml").read_text())
    tj["metadata"].update(tj_edit or {})
    rt = yaml.safe_load((EX / "runtime.yaml").read_text())
    if pod_meta:
        job = rt["spec"]["template"]["spec"]["replicatedJobs"][3]["template"]["spec"]
        job["template"]["metadata"] = pod_meta
    (tmp_path / "tj.yaml").write_text(yaml.safe_dump(tj))
    (tmp_path / "rt.yaml").write_text(yaml.safe_dump(rt))
    code, out, err = run_cli(
        ["render", str(tmp_path / "tj.yaml"), "--runtime", str(tmp_path / "rt.yaml")]
    )
    assert (code, out) == (2, ""), err
    return err


POD = "spec.template.spec.replicatedJobs[3].template.spec.template.metadata"


@pytest.mark.parametrize(
    ("tj_edit", "pod_meta", "line"),
    [
        pytest.param(
            {"namespace": "ML-Team"},
            None,
            "tj.yaml: metadata.namespace: Invalid value: 'ML-Team': a lowercase RFC 1123 label",
            id="uppercase-namespace",
        ),
        pytest.param(
            {"labels": {"team": "ml team"}},
            None,
            "tj.yaml: metadata.labels.team: Invalid value: 'ml team': a label value must be empty",
            id="label-value-with-a-space",
        ),
        pytest.param(
            {"labels": {"Acme.io/team": "ml"}},
            None,
            "tj.yaml: metadata.labels.Acme.io/team: Invalid value: 'Acme.io/team': the prefix",
            id="label-key-prefix-uppercase",
        ),
        pytest.param(
            {"labels": {"team": "x" * 64}},
            None,
            "tj.yaml: metadata.labels.team: Invalid value: '" + "x" * 64 + "': must be no more",
            id="label-value-too-long",
        ),
        pytest.param(
            {"annotations": {"a b": "c"}},
            None,
            "tj.yaml: metadata.annotations.a b: Invalid value: 'a b': the name part must",
            id="annotation-key",
        ),
        pytest.param(
            {"annotations": {"note": "x" * (256 * 1024)}},
            None,
            "tj.yaml: metadata.annotations: Too long: may not be more than 262144 bytes (keys and"
            " values together are 262148)",
            id="annotations-past-256-kib",
        ),
        pytest.param(
            None,
            {"labels": {"gpu": "A100 80GB"}},
            f"rt.yaml: {POD}.labels.gpu: Invalid value: 'A100 80GB'",
            id="pod-template-label",
        ),
    ],
)
def test_refused_naming_the_key(
    tmp_path: Path, tj_edit: Json | None, pod_meta: Json | None, line: str
) -> None:
    err = _render(tmp_path, tj_edit, pod_meta)
    assert err.startswith(f"error: {tmp_path}/{line}"), err
    assert len(err.splitlines()) == 1, err


def test_annotations_of_exactly_256_kib_are_accepted() -> None:
    meta = {"annotations": {"note": "x" * (256 * 1024 - 4)}}
    assert object_meta.errors(meta, "metadata", Reason.INVALID_TRAINJOB) == []


def test_annotation_keys_are_judged_lowercased() -> None:
    """ValidateAnnotations lowercases a key first: ``Acme.io/Note`` is a valid annotation key,
    not a valid label key."""
    meta = {"annotations": {"Acme.io/Note": "x"}, "labels": {"Acme.io/Note": "x"}}
    assert [e.path for e in object_meta.errors(meta, "metadata", Reason.INVALID_TRAINJOB)] == [
        "metadata.labels.Acme.io/Note"
    ]
