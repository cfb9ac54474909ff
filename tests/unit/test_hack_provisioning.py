"""The local control plane's ProvisioningRequest wiring (hack/control_plane.py, hack/provisioning.py):
which CRD file `up` installs before Kueue, and the provisioner's command line. Nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.unit.hack_scripts import load

control_plane = load("control_plane")
engine_config = load("engine_config")
provisioning = load("provisioning")
CRD_FILE = "config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
VERSION = "v0.0.0-20240830133931-adfbe7e45277"  # what Kueue v0.19.2's go.mod:34 requires


def test_the_crd_comes_from_the_apis_module_build_sh_resolved(tmp_path: Path) -> None:
    sources = {"KUEUE_DIR": "/nowhere", "AUTOSCALER_APIS_DIR": str(tmp_path)}
    assert control_plane.provisioning_crd(sources) == tmp_path / CRD_FILE


def test_an_older_sources_env_resolves_the_version_kueue_requires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sources.env written before AUTOSCALER_APIS_DIR existed: the version is read from
    Kueue's go.mod and the module downloaded (``go mod download``, faked here)."""
    (tmp_path / "go.mod").write_text(
        "module sigs.k8s.io/kueue\n\nrequire (\n"
        f"\tgithub.com/x/y v1.0.0\n\t{engine_config.AUTOSCALER_APIS} {VERSION}\n)\n"
    )
    asked: list[str] = []

    def go_module(module_at_version: str) -> dict[str, Any]:
        asked.append(module_at_version)
        return {"Dir": "/mod/apis"}

    monkeypatch.setattr(control_plane, "go_module", go_module)
    got = control_plane.provisioning_crd({"KUEUE_DIR": str(tmp_path)})
    assert got == Path("/mod/apis") / CRD_FILE
    assert asked == [f"{engine_config.AUTOSCALER_APIS}@{VERSION}"]


@pytest.mark.parametrize(
    "flags", [["--", "--scale", "0.1"], ["--scale", "0.1"]], ids=["after-dashes", "bare"]
)
def test_the_provisioner_runs_on_this_cluster_with_its_own_flags(flags: list[str]) -> None:
    argv = provisioning.argv_of(flags)
    assert argv[1].endswith("hack/provisioner.py")
    assert argv[2:] == ["--kubeconfig", str(provisioning.common.KUBECONFIG), "--scale", "0.1"]
