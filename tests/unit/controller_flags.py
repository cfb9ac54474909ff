"""``trainweave controller FLAGS`` as far as the ``controller.Config`` it builds: the process is
not started (``process.run`` replaced), a minimal kubeconfig is written to ``tmp_path``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trainweave.cli import main
from trainweave.integrations.cluster import controller, process


def config_of(
    flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> controller.Config:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    seen: list[controller.Config] = []

    def run(config: controller.Config, **_: Any) -> int:
        seen.append(config)
        return 0

    monkeypatch.setattr(process, "run", run)
    assert main(["controller", "--kubeconfig", str(kubeconfig), *flags]) == 0
    (config,) = seen
    return config
