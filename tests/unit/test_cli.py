"""The CLI's plan command end to end on the llm-finetune example."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from trainweave.cli import main

EX = Path(__file__).parents[2] / "examples" / "llm-finetune"
ARGS = ["plan", str(EX / "trainjob.yaml"), "--runtime", str(EX / "runtime.yaml")]


def test_plan_fits_and_prints_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*ARGS, "--queues", str(EX / "queues.yaml"), "--duration", "node=6"])
    out = capsys.readouterr().out
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines()[2:6]]
    assert rows == ["dataset-initializer", "model-initializer", "node", "model-exporter"]


def test_plan_exit_1_when_a_step_never_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = list(yaml.safe_load_all((EX / "queues.yaml").read_text()))
    gpu_cq = next(
        d for d in docs if d["kind"] == "ClusterQueue" and d["metadata"]["name"] == "gpu-cq"
    )
    for res in gpu_cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]:
        if res["name"] == "nvidia.com/gpu":
            res["nominalQuota"] = "8"
    small = tmp_path / "queues.yaml"
    small.write_text(yaml.safe_dump_all(docs))
    code = main([*ARGS, "--queues", str(small)])
    out = capsys.readouterr().out
    assert code == 1
    assert "node" in out and "nvidia.com/gpu" in out and "never" in out


def test_plan_yaml_prints_one_workload_per_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*ARGS, "--queues", str(EX / "queues.yaml"), "-o", "yaml"]) == 0
    workloads = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [w["metadata"]["name"] for w in workloads] == [
        "llama-support-ft-dataset-initializer-a0",
        "llama-support-ft-model-initializer-a0",
        "llama-support-ft-node-a0",
        "llama-support-ft-model-exporter-a0",
    ]
    assert [sum(ps["count"] for ps in w["spec"]["podSets"]) for w in workloads] == [1, 1, 2, 1]
