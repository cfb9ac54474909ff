"""The ``trainweave controller`` process: leader election, probes, signals, then the
``controller.Controller``.

Until it leads, a replica only serves ``/healthz`` and ``/readyz`` (ready: a standby has nothing
to sync) and campaigns for the Lease (``leader.LeaderElector``). Leading, it starts the caches
and workers and keeps the Lease; it stops acting when the Lease is lost, when renewing it
lapses, or when the renewal thread dies (exit 1: kubelet restarts it as a standby), and on
SIGTERM/SIGINT it stops, then gives the Lease up so a standby takes over at once (exit 0).
"""

from __future__ import annotations

import logging
import signal
import threading

from trainweave.integrations.cluster.controller import Config, Controller
from trainweave.integrations.cluster.executor import Renderer
from trainweave.integrations.cluster.leader import LeaderElector
from trainweave.integrations.cluster.metrics import Metrics, serve_http

log = logging.getLogger("trainweave.controller")
WATCHDOG = 0.5  # seconds between the main thread's checks that this replica still leads


def run(config: Config, kubeconfig: str | None = None, renderer: Renderer | None = None) -> int:
    """Run until SIGTERM/SIGINT (0) or lost leadership (1)."""
    from trainweave.integrations.cluster.executor import adapters_renderer
    from trainweave.integrations.cluster.kube import KubeClient, load_configuration

    metrics = Metrics()
    client = KubeClient(load_configuration(kubeconfig), metrics)
    elector = LeaderElector(
        client.send,
        config.lease_namespace,
        config.lease_name,
        config.identity,
        config.lease_duration,
        config.retry_period,
    )
    ctl = Controller(
        client.send,
        client.stream,
        renderer or adapters_renderer(config.default_queue),
        config,
        metrics,
        async_events=True,
        may_write=elector.leading if config.leader_elect else lambda: True,
    )
    done = threading.Event()
    exit_code = [0]

    def on_signal(*_: object) -> None:
        done.set()

    def on_lost() -> None:
        exit_code[0] = 1
        done.set()

    def not_ready() -> list[str]:  # a standby is ready: its caches start when it leads
        leading = not config.leader_elect or elector.is_leader.is_set()
        return ctl.not_ready() if leading else []

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ctl.health.install()
    server = serve_http(config.bind, metrics, not_ready, ctl.health.problems)
    log.info("serving /healthz /readyz /metrics on %s", config.bind)
    if config.leader_elect:
        threading.Thread(target=elector.acquire, name="leader-acquire", daemon=True).start()
        while not elector.is_leader.wait(0.5):
            if done.is_set():
                elector.release()
                server.shutdown()
                return 0
        ctl.health.watch(elector.keep(on_lost))
    threading.Thread(target=ctl.start, name="start", daemon=True).start()
    while not done.wait(WATCHDOG):
        if config.leader_elect and not elector.leading() and not done.is_set():
            log.error("renew deadline passed (%s): stopping", config.identity)
            on_lost()  # the renewal is stuck or its thread is gone: stop all the same
    ctl.stop()
    if exit_code[0] == 0:
        elector.release()
    server.shutdown()
    return exit_code[0]
