"""The real ``Controller`` run on the fake API server, and the llm-finetune example it runs.
Tests only.

``Running`` builds the controller as ``trainweave controller`` does (informers, workers, Events
from their own thread, the real render) on a transport of its own, or through ``KubeClient`` over
HTTP (``http.Served``). Tests synchronise on the fake's state, never on time: ``wait_until``
polls a condition with a deadline, waking at each commit; ``Running.settled`` says the
controller has taken in every change and has nothing left to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from tests.unit.fakeapi.http import Served
from tests.unit.fakeapi.server import FakeApi
from tests.unit.fakeapi.transport import Transport
from trainweave.integrations.cluster.controller import Config, Controller, Watch
from trainweave.integrations.cluster.executor import adapters_renderer
from trainweave.integrations.cluster.leader import LeaderElector
from trainweave.integrations.cluster.metrics import Metrics
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[3]


def example(
    ns: str, name: str = "ft", nodes: int = 2, max_restarts: int = 0, runtime: str = "llm-finetune"
) -> tuple[Json, Json]:
    """examples/llm-finetune's TrainJob and TrainingRuntime in ``ns``, as tests/e2e's
    ``pipelines.example`` makes them (no Secret, no PVC; ``nodes`` trainer nodes)."""
    tj = yaml.safe_load((ROOT / "examples/llm-finetune/trainjob.yaml").read_text())
    rt = yaml.safe_load((ROOT / "examples/llm-finetune/runtime.yaml").read_text())
    tj["metadata"] = {"name": name, "namespace": ns}
    rt["metadata"].update(name=runtime, namespace=ns)
    tj["spec"]["runtimeRef"]["name"] = "llm-finetune"
    for init in ("dataset", "model"):
        tj["spec"]["initializer"][init].pop("secretRef", None)
    spec = rt["spec"]["template"]["spec"]
    spec.pop("volumeClaimPolicies", None)
    if max_restarts:
        spec["failurePolicy"] = {"maxRestarts": max_restarts}
    for rjob in spec["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]
        pod["spec"]["volumes"] = [{"name": "initializer", "emptyDir": {}}]
    tj["spec"]["trainer"]["numNodes"] = nodes
    tj["spec"].pop("activeDeadlineSeconds", None)
    return tj, rt


def wait_until(what: str, fake: FakeApi, check: Callable[[], T | None], timeout: float = 30) -> T:
    """``check()`` once it is truthy, looked at again at each commit (and every 5 ms)."""
    deadline = time.monotonic() + timeout
    while not (got := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        with fake.store.cond:
            fake.store.cond.wait(0.005)
    return got


def condition(obj: Json | None, ctype: str) -> Json | None:
    """The condition of type ``ctype`` that is True, if any."""
    conds = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conds if c.get("type") == ctype and c.get("status") == "True"), None)


def terminal(fake: FakeApi, ns: str, name: str = "ft") -> str | None:
    """``Complete`` or ``Failed`` once the TrainJob is, else None."""
    tj = fake.find("TrainJob", ns, name)
    return next((c for c in ("Complete", "Failed") if condition(tj, c)), None)


class Running:
    """One controller process on ``fake`` (``start`` / ``stop``)."""

    def __init__(
        self,
        fake: FakeApi,
        namespace: str = "",
        served: Served | None = None,
        crash_after_writes: int | None = None,
        identity: str = "a",
        watches: tuple[Watch, ...] | None = None,
        judge_first: bool = True,
    ) -> None:
        """``watches``: the controller's table of watched kinds (``controller.WATCHES``);
        ``judge_first``: ``Config.judge_first`` (``--no-judge-first`` is False)."""
        self.fake = fake
        self.transport = Transport(fake, crash_after_writes)
        send: api.Send = self.transport
        stream = self.transport.stream
        if served is not None:
            from kubernetes import client

            from trainweave.integrations.cluster.kube import KubeClient

            kube = KubeClient(client.Configuration(host=served.url))
            send, stream = kube.send, kube.stream
        self.config = Config(
            namespace=namespace, settle=0.0, identity=identity, judge_first=judge_first
        )
        self.metrics = Metrics()
        self.elector = LeaderElector(
            send, self.config.lease_namespace, self.config.lease_name, identity
        )
        self.ctl = Controller(
            send,
            stream,
            adapters_renderer(),
            self.config,
            self.metrics,
            async_events=True,
            watches=watches,
        )

    def start(self) -> Running:
        """Take the Lease (at once when free or already this identity's), then start."""
        assert self.elector.try_acquire(), "the Lease is another's"
        self.ctl.start()
        return self

    def stop(self) -> None:
        """Stop the controller; its connections go (watches end)."""
        self.ctl.stop()
        self.transport.cut()

    @property
    def crashed(self) -> bool:
        """Its transport was cut by ``crash_after_writes``."""
        return self.transport.crashed

    def _queue_idle(self) -> bool:
        q = self.ctl.queue
        with q.cond:
            return not (q.queued or q.active or q.dirty or q.delayed)

    def settled(self) -> bool:
        """Every change has reached the caches and every reconcile it caused is done, with
        nothing written meanwhile (in-process transports only)."""
        rv = self.fake.store.rv
        t = self.transport
        watches = len(self.ctl.informers)  # one watch each
        return (
            t.quiet(watches)
            and self._queue_idle()
            and t.quiet(watches)
            and self.fake.store.rv == rv
        )

    def crashed_or_settled(self) -> bool:
        """It crashed on a write, or it has nothing to write."""
        return self.crashed or self.settled()

    def reconciles(self) -> float:
        """``trainweave_reconciles_total`` (ok and error)."""
        reg = self.ctl.metrics.registry
        return sum(
            reg.get_sample_value("trainweave_reconciles_total", {"result": r}) or 0.0
            for r in ("ok", "error")
        )
