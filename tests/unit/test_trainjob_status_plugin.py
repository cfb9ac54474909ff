"""adapters.trainjob_status: Trainer v2.3.0's TrainJobStatus plugin on the examples' renders.

Expected values are upstream's (``plugins/trainjobstatus/trainjobstatus.go`` and its test):
env, the read-only mount and the projected token + CA volume on every trainer container, the
``<name>-tls-config`` ConfigMap; off (no ``Options.trainer_status``): the render is unchanged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.examples import NAMES, TEST_KEYS, example_files, render_example
from trainweave.adapters import render
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import TRAINJOB_ANCESTOR
from trainweave.trainer_status import ServerRef

Json = dict[str, Any]
SERVER = ServerRef("https://status.example:10443/", "-----BEGIN CERTIFICATE-----\nca\n")
OWNER = render.Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "x", "uid-1")


def rendered(name: str, server: ServerRef | None, env: list[Json] | None = None) -> list[Json]:
    trainjob, runtime_file, _ = example_files(name)
    doc = yaml.safe_load(trainjob.read_text())
    if env is not None:
        doc["spec"].setdefault("trainer", {})["env"] = env
    job = parse_trainjob(doc)
    runtime = parse_runtime(yaml.safe_load(runtime_file.read_text()))
    options = render.Options(ssh_keys=TEST_KEYS, owner=OWNER, trainer_status=server)
    return render.render(job, runtime, options)


def trainer_pods(objs: list[Json]) -> list[Json]:
    """Pod specs (container + volumes) of the Workflow templates of trainer-ancestor jobs."""
    wf = next(o for o in objs if o["kind"] == "Workflow")
    out = []
    for t in wf["spec"]["templates"]:
        labels = (t.get("metadata") or {}).get("labels") or {}
        if labels.get(TRAINJOB_ANCESTOR) == "trainer":
            out.append(t)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_off_is_the_plain_render(name: str) -> None:
    trainjob, runtime_file, _ = example_files(name)
    job = parse_trainjob(yaml.safe_load(trainjob.read_text()))
    runtime = parse_runtime(yaml.safe_load(runtime_file.read_text()))
    options = render.Options(ssh_keys=TEST_KEYS)
    assert render.render(job, runtime, options) == render_example(name)


@pytest.mark.parametrize("name", NAMES)
def test_on_adds_upstreams_env_volume_and_config_map(name: str) -> None:
    objs = rendered(name, SERVER)
    tj = yaml.safe_load(example_files(name)[0].read_text())["metadata"]
    ns, tj_name = tj.get("namespace", "default"), tj["name"]
    (cm,) = [o for o in objs if o["metadata"]["name"].endswith("-tls-config")]
    assert cm == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{tj_name}-tls-config",
            "namespace": ns,
            "ownerReferences": [OWNER.reference()],
        },
        "data": {"ca.crt": SERVER.ca_pem},
    }
    templates = trainer_pods(objs)
    assert templates, "every example has a trainer job"
    url = f"https://status.example:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{tj_name}/status"
    for t in templates:
        containers = [t["container"]] if "container" in t else t["containerSet"]["containers"]
        for c in containers:
            env = {e["name"]: e.get("value") for e in c.get("env") or []}
            assert env["KUBEFLOW_TRAINER_SERVER_URL"] == url
            assert (
                env["KUBEFLOW_TRAINER_SERVER_CA_CERT"] == "/var/run/secrets/kubeflow/trainer/ca.crt"
            )
            assert env["KUBEFLOW_TRAINER_SERVER_TOKEN"] == "/var/run/secrets/kubeflow/trainer/token"
            assert {
                "name": "kubeflow-trainer-token",
                "mountPath": "/var/run/secrets/kubeflow/trainer",
                "readOnly": True,
            } in c["volumeMounts"]
        volume = next(v for v in t["volumes"] if v["name"] == "kubeflow-trainer-token")
        assert volume["projected"]["sources"] == [
            {
                "serviceAccountToken": {
                    "audience": f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/{tj_name}/status",
                    "expirationSeconds": 3600,
                    "path": "token",
                }
            },
            {
                "configMap": {
                    "name": f"{tj_name}-tls-config",
                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                }
            },
        ]
    plain = [o for o in objs if o["kind"] != "Workflow" and o is not cm]
    assert plain == [o for o in rendered(name, None) if o["kind"] != "Workflow"]


def test_trainjob_env_wins_on_node() -> None:
    """builder.go Trainer(): the TrainJob's env is applied after every plugin."""
    mine = {"name": "KUBEFLOW_TRAINER_SERVER_URL", "value": "https://mine"}
    objs = rendered("llm-finetune", SERVER, env=[mine])
    for t in trainer_pods(objs):
        c = t["container"] if "container" in t else t["containerSet"]["containers"][0]
        env = [e for e in c["env"] if e["name"] == "KUBEFLOW_TRAINER_SERVER_URL"]
        assert env == [mine]


def test_server_ref_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SERVER.url = "x"  # type: ignore[misc]


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from trainweave import cli

    trainjob, runtime_file, _ = example_files("llm-finetune")
    code = cli.main(["render", str(trainjob), "--runtime", str(runtime_file), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_render_shows_what_the_controller_adds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text(SERVER.ca_pem)
    url = "https://trainweave-controller.trainweave-system.svc:10443"
    code, out, _ = _cli(
        ["--controller", "--trainjob-status-url", url, "--trainjob-status-ca", str(ca)], capsys
    )
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    (cm,) = [d for d in docs if d["metadata"]["name"].endswith("-tls-config")]
    assert cm["data"] == {"ca.crt": SERVER.ca_pem}
    assert "KUBEFLOW_TRAINER_SERVER_URL" in out and f"{url}/apis/trainer.kubeflow.org" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--trainjob-status-url", "https://x"],
            "error: (command line): --trainjob-status-ca: must be given with --trainjob-status-url",
            id="url alone",
        ),
        pytest.param(
            ["--trainjob-status-ca", "CA"],
            "error: (command line): --trainjob-status-url: must be given with --trainjob-status-ca",
            id="ca alone",
        ),
        pytest.param(
            ["--trainjob-status-url", "http://x", "--trainjob-status-ca", "CA"],
            "error: (command line): --trainjob-status-url: must be an https:// URL (the pods"
            " verify the server with the CA), got 'http://x'",
            id="not https",
        ),
        pytest.param(
            ["--trainjob-status-url", "https://x", "--trainjob-status-ca", "NOPE"],
            "error: NOPE: (file): No such file or directory",
            id="no such file",
        ),
        pytest.param(
            ["--trainjob-status-url", "https://x", "--trainjob-status-ca", "TEXT"],
            "error: TEXT: (file): is not a PEM certificate",
            id="not a certificate",
        ),
    ],
)
def test_cli_refusals(
    args: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "CA").write_text(SERVER.ca_pem)
    (tmp_path / "TEXT").write_text("hello\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = _cli(args, capsys)
    assert (code, out, err.strip()) == (2, "", message)
