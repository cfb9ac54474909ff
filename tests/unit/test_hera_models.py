"""Loading Hera's models without hera.workflows' __init__ keeps Hera whole for later users."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_render_path_skips_heras_rest_clients() -> None:
    assert (
        _run(
            """
        import sys
        from trainweave.adapters.argo import workflow
        print("requests" in sys.modules, "hera.workflows.service" in sys.modules)
        """
        )
        == "False False"
    )


def test_hera_workflows_still_works_after_and_shares_the_models() -> None:
    assert (
        _run(
            """
        from trainweave.adapters.argo import workflow
        from hera.workflows import Container, Workflow, models
        with Workflow(name="w", entrypoint="c") as w:
            Container(name="c", image="busybox")
        print(models is workflow.m, w.to_dict()["spec"]["templates"][0]["container"]["image"])
        """
        )
        == "True busybox"
    )
