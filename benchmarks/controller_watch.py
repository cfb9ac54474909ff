"""The controller benchmark's watches (``benchmarks/controller.py``): Workflows, the TrainJobs'
pods and TrainJobs, with local receive times; the terminal latency and every status transition's
latency as that module's docstring defines them."""

from __future__ import annotations

import json
import sys
import threading
import time
from datetime import UTC, datetime
from typing import Any

from kubernetes import client, watch

from trainweave.integrations.views.decide import rollup as rollup_mod
from trainweave.integrations.views.read import argo_view, slim
from trainweave.integrations.views.read import observed as observed_mod

TRAINER = ("trainer.kubeflow.org", "v1alpha1")
Json = dict[str, Any]


STATUS_FIELDS = ("ready", "succeeded", "failed", "active", "suspended")


def status_fields(status: Json) -> dict[str, object]:
    """A TrainJob status as transition kinds -> value: ``condition.<type>`` -> its status,
    ``jobsStatus.<replicatedJob>.<count>`` -> the count."""
    out: dict[str, object] = {}
    for c in status.get("conditions") or []:
        out[f"condition.{c.get('type')}"] = c.get("status")
    for job in status.get("jobsStatus") or []:
        for k in STATUS_FIELDS:
            out[f"jobsStatus.{job.get('name')}.{k}"] = job.get(k)
    return out


class Watcher:
    """Local receive times of Workflows, pods and TrainJob status changes (see ``transitions``)."""

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)
        self.ns = ns
        self.wf_done: dict[str, float] = {}
        self.wf_first: dict[str, float] = {}  # trainjob -> its first Workflow seen (a start)
        self.tj_done: dict[str, float] = {}
        self.outcome: dict[str, str] = {}
        self.status_seen: dict[str, str] = {}
        self.status_changes: dict[str, int] = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.trainjobs: dict[str, Json] = {}
        self.workflows: dict[str, dict[str, Json]] = {}  # trainjob -> name -> slim Workflow
        self.pods: dict[str, dict[str, Json]] = {}  # trainjob -> name -> slim pod
        self.views: dict[tuple[str, str], Any] = {}  # (uid, resourceVersion) -> WorkflowView
        # trainjob -> kind -> [(time, value)]: when the engines' objects began to imply each value
        self.implied: dict[str, dict[str, list[tuple[float, object]]]] = {}
        self.shown: dict[str, dict[str, object]] = {}  # trainjob -> kind -> value on the TrainJob
        self.latency: dict[str, list[float]] = {}  # kind -> latencies of its transitions
        self.unmatched: dict[str, int] = {}  # kind -> transitions no engine state implied

    def _loop(self, list_fn: Any, args: tuple[Any, ...], fn: Any, **kw: Any) -> None:
        rv: str | None = None
        while not self.stop.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            more = {"resource_version": rv} if rv else {}
            try:
                for ev in w.stream(list_fn, *args, timeout_seconds=60, deserialize=False,  # type: ignore[no-untyped-call]
                                   **kw, **more):  # fmt: skip
                    obj = ev["object"]
                    rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                    if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        fn(obj, time.monotonic(), ev["type"] == "DELETED")
                    if self.stop.is_set():
                        w.stop()  # type: ignore[no-untyped-call]
                        break
            except Exception as err:  # a watch that ends in error lists again
                # an ERROR event (410 Gone, a version too old) reaches the client's deserialize=False
                # path as a KeyError ('raw_object'), a dropped connection as urllib3's errors
                print(
                    f"watch {args[-1]}: {type(err).__name__}: {err}; listing again", file=sys.stderr
                )
                rv = None
                self.stop.wait(1.0)

    def on_wf(self, obj: Json, t: float, deleted: bool = False) -> None:
        tj = obj["metadata"].get("labels", {}).get("trainweave.io/trainjob")
        if not tj:
            return
        self.wf_first.setdefault(tj, t)
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Error"):
            self.wf_done.setdefault(tj, t)
        self._engine(self.workflows, tj, slim.workflow(obj), t, deleted)

    def on_pod(self, obj: Json, t: float, deleted: bool = False) -> None:
        tj = obj["metadata"].get("labels", {}).get("trainweave.io/trainjob")
        if tj:
            self._engine(self.pods, tj, slim.pod(obj), t, deleted)

    def _engine(
        self, store: dict[str, dict[str, Json]], tj: str, obj: Json, t: float, deleted: bool
    ) -> None:
        """An engine object of ``tj`` changed at ``t``: record what status its objects imply."""
        with self.lock:
            objs = store.setdefault(tj, {})
            name = obj["metadata"]["name"]
            if deleted:
                objs.pop(name, None)
            else:
                objs[name] = obj
            trainjob = self.trainjobs.get(tj)
            if trainjob is None:
                return
            wfs = tuple(self.workflows.get(tj, {}).values())
            obs = observed_mod.Observed(
                trainjob, wfs, tuple(self.pods.get(tj, {}).values()), (),
                tuple(self._view(w) for w in wfs),
            )  # fmt: skip
            implied = status_fields(rollup_mod.rollup(obs, datetime.now(UTC)).wire())
            runs = self.implied.setdefault(tj, {})
            for kind, value in implied.items():
                seq = runs.setdefault(kind, [])
                if not seq or seq[-1][1] != value:
                    seq.append((t, value))

    def _view(self, wf: Json) -> Any:
        meta = wf["metadata"]
        key = (meta.get("uid", ""), meta.get("resourceVersion", ""))
        found = self.views.get(key)
        if found is None:
            found = self.views[key] = argo_view.view(wf)
        return found

    def on_tj(self, obj: Json, t: float, deleted: bool = False) -> None:
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        with self.lock:
            self.trainjobs[name] = slim.trainjob(obj)
            text = json.dumps(status, sort_keys=True)
            if text != self.status_seen.get(name, "{}"):
                self.status_changes[name] = self.status_changes.get(name, 0) + 1
                self.status_seen[name] = text
            self._transitions(name, status_fields(status), t)
        for c in status.get("conditions") or []:
            if c["type"] in ("Complete", "Failed") and c["status"] == "True":
                self.tj_done.setdefault(obj["metadata"]["name"], t)
                self.outcome.setdefault(obj["metadata"]["name"], f"{c['type']}/{c['reason']}")

    def _transitions(self, tj: str, now: dict[str, object], t: float) -> None:
        """Each kind whose value changed on the TrainJob: its latency from the start of the
        latest run of the engines implying that value (``transitions`` in the module doc)."""
        before = self.shown.setdefault(tj, {})
        runs = self.implied.get(tj, {})
        for kind, value in now.items():
            if before.get(kind) == value:
                continue
            before[kind] = value
            label = f"{kind}={value}" if kind.startswith("condition.") else kind
            since = next((at for at, v in reversed(runs.get(kind, [])) if v == value), None)
            if since is None:
                self.unmatched[label] = self.unmatched.get(label, 0) + 1
            else:
                self.latency.setdefault(label, []).append(t - since)

    def start(self) -> None:
        group_args: tuple[tuple[Any, tuple[Any, ...], Any, Json], ...] = (
            (self.custom.list_namespaced_custom_object,
             ("argoproj.io", "v1alpha1", self.ns, "workflows"), self.on_wf, {}),
            (self.custom.list_namespaced_custom_object,
             (*TRAINER, self.ns, "trainjobs"), self.on_tj, {}),
            (self.core.list_namespaced_pod, (self.ns,), self.on_pod,
             {"label_selector": "trainweave.io/trainjob"}),
        )  # fmt: skip
        for list_fn, args, fn, kw in group_args:
            threading.Thread(
                target=self._loop, args=(list_fn, args, fn), kwargs=kw, daemon=True
            ).start()
