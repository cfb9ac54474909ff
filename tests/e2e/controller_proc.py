"""One ``trainweave controller`` process per test, scoped to the test's namespace.

It runs as deploy/rbac.yaml's ServiceAccount (a TokenRequest token, tests/e2e/service_account.py),
never with the admin kubeconfig: every controller e2e test proves the RBAC is enough. Its Lease
is where the deployment's is, in trainweave-system (the Role there), named after the test's
namespace.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kubernetes import client

from .kube import Kube, wait_until
from .service_account import SA_NAMESPACE


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ControllerProc:
    """One `trainweave controller` process."""

    def __init__(
        self,
        namespace: str,
        identity: str,
        kubeconfig: Path,
        crash_after_writes: int = 0,
        build: Path | None = None,
        args: Sequence[str] = (),
    ) -> None:
        """``crash_after_writes`` > 0: the process dies right after that many writes
        (tests/e2e/crash_after_writes.py). ``build``: run the trainweave package tree there
        (an earlier build, tests/e2e/old_build.py) instead of this checkout's. ``args``: more
        controller flags."""
        self.port = free_port()
        self.identity = identity
        self.lease_namespace, self.lease_name = SA_NAMESPACE, namespace
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"tw-ctl-{namespace}-{identity}.log"
        entry = ["-m", "trainweave.cli"]
        if crash_after_writes:
            entry = [
                str(Path(__file__).with_name("crash_after_writes.py")),
                str(crash_after_writes),
            ]
        cmd = [
            sys.executable, *entry, "controller",
            "--kubeconfig", str(kubeconfig), "--namespace", namespace,
            "--lease-namespace", self.lease_namespace, "--lease-name", self.lease_name,
            "--identity", identity,
            "--bind", f"127.0.0.1:{self.port}", "--log-level", "DEBUG", *args,
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(build)} if build else None
        self.proc = subprocess.Popen(
            cmd, stdout=self.log.open("a"), stderr=subprocess.STDOUT, env=env, cwd=build
        )

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as r:
                return r.status, r.read().decode()
        except OSError:
            return 0, ""

    def metric(self, name: str) -> float:
        _, text = self.get("/metrics")
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith(name) and not line.startswith("#")
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(20)


@contextmanager
def status_server_controller(
    kube: Kube, namespace: str, kubeconfig: Path, bind_host: str, url_host: str
) -> Iterator[tuple[ControllerProc, int]]:
    """A controller with Trainer's status server on (``--trainjob-status``) at ``bind_host``,
    announced to pods as ``https://url_host:PORT``; its Lease removed after."""
    port = free_port()
    ctl = ControllerProc(
        namespace,
        "a",
        kubeconfig,
        args=(
            "--trainjob-status",
            "--trainjob-status-bind", f"{bind_host}:{port}",
            "--trainjob-status-url", f"https://{url_host}:{port}",
        ),
    )  # fmt: skip
    try:
        wait_until("controller ready", lambda: ctl.get("/readyz")[0] == 200, timeout=60)
        yield ctl, port
    finally:
        ctl.stop()
        try:
            client.CoordinationV1Api(kube.api).delete_namespaced_lease(
                ctl.lease_name, ctl.lease_namespace
            )
        except client.ApiException as e:
            if e.status != 404:
                raise
