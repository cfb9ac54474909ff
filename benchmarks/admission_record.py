"""What the admission benchmark records from the cluster: watches of a namespace's Workloads,
pods and Argo Workflows (each object as last seen, and when each state of it was FIRST seen, by
the watcher's clock: sub-second), and the quota holds, GPU pod spans, GPU steps and step starts
read from them for benchmarks/admission_metrics.py."""

from __future__ import annotations

import calendar
import threading
import time
from typing import Any

import urllib3
from admission_metrics import GpuStep, Hold, QuotaHold, Span, StepStart
from admission_trace import GPU, Json
from kubernetes import client, watch

KUEUE = ("kueue.x-k8s.io", "v1beta2")
ARGO = ("argoproj.io", "v1alpha1")


class Recorder:
    """Every Workload, pod and Workflow of a namespace as last seen (watches), by uid, and
    ``first[(key, state)]``: when the watch first saw that state (``time.time()``). Keys: a pod's
    or Workload's uid; ``TRAINJOB/STEP`` for a Workflow node (its DAG task, displayName STEP)."""

    KINDS: tuple[str, ...] = ("pods", "workloads", "workflows")

    def __init__(self, api: client.ApiClient, ns: str) -> None:
        self.core, self.custom, self.ns = client.CoreV1Api(api), client.CustomObjectsApi(api), ns
        self.workloads: dict[str, Json] = {}
        self.pods: dict[str, Json] = {}
        self.workflows: dict[str, Json] = {}
        self.deleted: dict[str, float] = {}
        self.first: dict[tuple[str, str], float] = {}
        self.stop = threading.Event()
        self.api = api
        self.stores = {"pods": self.pods, "workloads": self.workloads, "workflows": self.workflows}

    def _stream(self, w: Any, kind: str, **kwargs: Any) -> Any:
        if kind == "pods":
            return w.stream(self.core.list_namespaced_pod, self.ns, **kwargs)
        group = KUEUE if kind == "workloads" else ARGO
        return w.stream(self.custom.list_namespaced_custom_object, *group, self.ns, kind,
                        **kwargs)  # fmt: skip

    def _loop(self, kind: str) -> None:
        """Watch ``kind`` until stopped: each watch ends after 30 s and the next resumes from
        the last resourceVersion seen (a watch started without one replays every object of the
        namespace, which at 200 pipelines is the API server's and this process's largest load);
        after an error, from a fresh list. Events are plain JSON (no client model objects)."""
        store = self.stores[kind]
        rv: str | None = None
        while not self.stop.is_set():
            w = watch.Watch()  # type: ignore[no-untyped-call]
            since = {"resource_version": rv} if rv else {}
            try:
                for ev in self._stream(w, kind, timeout_seconds=30, deserialize=False,
                                       allow_watch_bookmarks=True, **since):  # fmt: skip
                    now = time.time()
                    obj = ev["object"]
                    rv = obj["metadata"].get("resourceVersion") or rv
                    if ev["type"] == "BOOKMARK":
                        continue
                    uid = obj["metadata"]["uid"]
                    store[uid] = obj
                    for key, state in self._states(kind, obj):
                        self.first.setdefault((key, state), now)
                    if ev["type"] == "DELETED":
                        self.deleted.setdefault(uid, now)
                    if self.stop.is_set():
                        w.stop()  # type: ignore[no-untyped-call]
                        break
            except (client.ApiException, urllib3.exceptions.HTTPError, KeyError):
                # a busy API server answers a watch with 504 "Too large resource version" (its
                # watch cache behind), 410 Gone (an ERROR event, which the client's
                # deserialize=False path raises as KeyError 'raw_object'), or drops it: watch
                # again from a fresh list (first-seen times are kept, so a state seen late is
                # stamped late, never lost)
                rv = None
                self.stop.wait(1.0)

    def _states(self, kind: str, obj: Json) -> list[tuple[str, str]]:
        """The (key, state) pairs ``obj`` shows now (``seen_states``)."""
        return seen_states(kind, obj)

    def start(self) -> None:
        for kind in self.KINDS:
            threading.Thread(target=self._loop, args=(kind,), daemon=True).start()


def seen_states(kind: str, obj: Json) -> list[tuple[str, str]]:
    """The (key, state) pairs ``obj`` shows now. Pods: created, ungated (no scheduling gates),
    scheduled (nodeName), running (every container running or already terminated), succeeded.
    Workloads: created, quota (QuotaReserved True), admitted (Admitted True), finished (Finished
    True). Workflows: per DAG
    task node (``TRAINJOB/displayName``), started (startedAt set), succeeded."""
    uid = obj["metadata"]["uid"]
    status = obj.get("status") or {}
    out = [(uid, "created")]
    if kind == "pods":
        spec = obj.get("spec") or {}
        out += [(uid, "ungated")] if not spec.get("schedulingGates") else []
        out += [(uid, "scheduled")] if spec.get("nodeName") else []
        states = [cs.get("state") or {} for cs in status.get("containerStatuses") or []]
        if states and all("running" in s or "terminated" in s for s in states):
            out.append((uid, "running"))
        out += [(uid, "succeeded")] if status.get("phase") == "Succeeded" else []
    elif kind == "workloads":
        for ctype, state in (
            ("QuotaReserved", "quota"),
            ("Admitted", "admitted"),
            ("Finished", "finished"),
        ):
            if condition_time(obj, ctype) is not None:
                out.append((uid, state))
    else:
        tj = (obj["metadata"].get("labels") or {}).get("trainweave.io/trainjob", "")
        for node in (status.get("nodes") or {}).values():
            key = f"{tj}/{node.get('displayName', '')}"
            out += [(key, "started")] if node.get("startedAt") else []
            out += [(key, "succeeded")] if node.get("phase") == "Succeeded" else []
    return out


def stamp(text: str | None) -> float | None:
    """RFC 3339 (second precision, as the API server writes conditions) -> epoch seconds."""
    if not text:
        return None
    return float(calendar.timegm(time.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")))


def condition_time(obj: Json, ctype: str, status: str = "True") -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype and c["status"] == status:
            return stamp(c.get("lastTransitionTime"))
    return None


def gpus_of(wl: Json) -> float:
    """GPUs a Workload reserves (its admission's resourceUsage, else its pod sets' requests)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    total = 0.0
    for psa in admission.get("podSetAssignments") or []:
        total += float(str((psa.get("resourceUsage") or {}).get(GPU, "0")))
    if total:
        return total
    for ps in (wl.get("spec") or {}).get("podSets") or []:
        for c in ps["template"]["spec"].get("containers") or []:
            res = c.get("resources") or {}
            value = (res.get("requests") or {}).get(GPU) or (res.get("limits") or {}).get(GPU)
            total += float(str(value or 0)) * int(ps.get("count", 1))
    return total


def trainjob_of(obj: Json) -> str:
    """The TrainJob a Workload or pod belongs to: its owner (upstream) or its labels."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "TrainJob":
            return str(ref["name"])
    labels = dict(meta.get("labels") or {})
    for ps in (obj.get("spec") or {}).get("podSets") or []:
        labels.update((ps.get("template") or {}).get("metadata", {}).get("labels") or {})
    return str(
        labels.get("trainweave.io/trainjob") or labels.get("jobset.sigs.k8s.io/jobset-name") or ""
    )


def holds(rec: Recorder, t0: float, end: float) -> list[Hold]:
    # a pod group's Workload (trainweave) is owned by its pods: their labels name the TrainJob
    groups = {
        (p["metadata"].get("labels") or {}).get("kueue.x-k8s.io/pod-group-name"): trainjob_of(p)
        for p in rec.pods.values()
    }
    out = []
    for uid, wl in rec.workloads.items():
        start = condition_time(wl, "QuotaReserved")
        if start is None:
            continue
        stop = (
            condition_time(wl, "Finished")
            or condition_time(wl, "QuotaReserved", "False")
            or rec.deleted.get(uid)
            or end
        )
        created = stamp(wl["metadata"].get("creationTimestamp")) or start
        out.append(
            Hold(
                trainjob_of(wl) or groups.get(wl["metadata"]["name"], ""),
                wl["metadata"]["name"],
                gpus_of(wl),
                created - t0,
                start - t0,
                max(start, stop) - t0,
            )
        )
    return out


def spans(rec: Recorder, t0: float, end: float) -> list[Span]:
    """GPU pods (trainer, evaluator) from their container start to its finish."""
    out = []
    for pod in rec.pods.values():
        gpus = sum(
            float(str(((c.get("resources") or {}).get("limits") or {}).get(GPU, 0)))
            for c in pod["spec"]["containers"]
        )
        if not gpus:
            continue
        status = pod.get("status") or {}
        start = stamp(status.get("startTime"))
        if start is None:
            continue
        finish = None
        for cs in status.get("containerStatuses") or []:
            if cs["name"] in ("wait", "main") and len(status["containerStatuses"]) > 1:
                continue
            term = (cs.get("state") or {}).get("terminated")
            if term:
                start = stamp(term.get("startedAt")) or start
                finish = stamp(term.get("finishedAt"))
        out.append(Span(trainjob_of(pod), start - t0, (finish or end) - t0, gpus))
    return out


def step_of(pod: Json) -> tuple[str, str]:
    """(TrainJob, step) of a pod: trainweave's labels, else JobSet's replicatedJob (upstream)."""
    labels = pod["metadata"].get("labels") or {}
    step = labels.get("trainweave.io/step") or labels.get("jobset.sigs.k8s.io/replicatedjob-name")
    return trainjob_of(pod), str(step or "")


def last(times: list[float | None]) -> float | None:
    """The latest of ``times``; None if there are none or one is unknown."""
    known = [t for t in times if t is not None]
    return max(known) if times and len(known) == len(times) else None


def latest(rec: Recorder, uids: list[str], state: str) -> float | None:
    """When the last of ``uids`` was first seen in ``state`` (None: one never was)."""
    return last([rec.first.get((uid, state)) for uid in uids])


class Steps:
    """A run's recording by (TrainJob, step): its pods, its pod group's Workload, and when its
    predecessors (``deps``: step -> the steps it waits for, from the runtime) were done."""

    def __init__(self, rec: Recorder, deps: dict[str, list[str]], t0: float) -> None:
        self.rec, self.deps, self.t0 = rec, deps, t0
        self.pods: dict[tuple[str, str], list[str]] = {}
        self.group: dict[str, tuple[str, str]] = {}  # pod group (Workload) name -> (tj, step)
        for uid, pod in rec.pods.items():
            key = step_of(pod)
            self.pods.setdefault(key, []).append(uid)
            name = (pod["metadata"].get("labels") or {}).get("kueue.x-k8s.io/pod-group-name")
            if name:
                self.group[name] = key

    def rel(self, t: float | None) -> float | None:
        return None if t is None else t - self.t0

    def done(self, tj: str, step: str) -> float | None:
        """The latest of the predecessors' pods first seen Succeeded (None: not all were)."""
        times = [latest(self.rec, self.pods.get((tj, d), []), "succeeded") for d in self.deps[step]]
        return self.rel(last(times))

    def gpu_steps(self, upstream: bool, submitted: dict[str, float]) -> list[GpuStep]:
        """Every Workload holding GPUs, ready when its predecessors were done (trainweave) or at
        its creation (upstream: one Workload per TrainJob), both as the watch first saw them;
        admitted at its QuotaReserved condition's time; steps never ready are left out."""
        out = []
        for uid, wl in self.rec.workloads.items():
            if not gpus_of(wl):
                continue
            if upstream:
                tj, ready = trainjob_of(wl), self.rel(self.rec.first.get((uid, "created")))
            else:
                tj, step = self.group.get(wl["metadata"]["name"], ("", ""))
                ready = self.done(tj, step) if step in self.deps else None
            if tj not in submitted or ready is None:
                continue
            priority = int((wl.get("spec") or {}).get("priority") or 0)
            # Kueue's own QuotaReserved time (whole seconds), not when the watch saw it: Kueue
            # writes each admission from a goroutine (v0.19.2 pkg/scheduler/scheduler.go, admit:
            # admissionRoutineWrapper.Run), so admissions decided in consecutive scheduling
            # cycles can land in either order within milliseconds
            admitted = self.rel(condition_time(wl, "QuotaReserved"))
            out.append(
                GpuStep(tj, submitted[tj], priority, ready, admitted, wl["metadata"]["name"])
            )
        return out

    def starts(self) -> list[StepStart]:
        """Every start of a step that waits for others (trainweave), its stages first seen."""
        wl_uid = {wl["metadata"]["name"]: uid for uid, wl in self.rec.workloads.items()}
        out = []
        for (tj, step), uids in sorted(self.pods.items()):
            if not self.deps.get(step):
                continue
            names = {
                (self.rec.pods[u]["metadata"].get("labels") or {}).get(
                    "kueue.x-k8s.io/pod-group-name"
                )
                for u in uids
            }
            admitted = [
                self.rec.first.get((wl_uid[n], "admitted"))
                or self.rec.first.get((wl_uid[n], "quota"))
                for n in names
                if n in wl_uid
            ]
            out.append(
                StepStart(
                    tj,
                    step,
                    self.done(tj, step),
                    self.rel(self.rec.first.get((f"{tj}/{step}", "started"))),
                    self.rel(latest(self.rec, uids, "created")),
                    self.rel(last(admitted)),
                    self.rel(latest(self.rec, uids, "ungated")),
                    self.rel(latest(self.rec, uids, "running")),
                )
            )
        return out

    def quota_holds(self) -> list[QuotaHold]:
        """Every step Workload holding GPUs (trainweave): reserved, its pods all created, all
        running, all Succeeded, and the Workload Finished (or deleted), as the watches first saw
        them."""
        out = []
        for uid, wl in self.rec.workloads.items():
            gpus = gpus_of(wl)
            key = self.group.get(wl["metadata"]["name"])
            if not gpus or key is None:
                continue
            uids = self.pods.get(key, [])
            released = self.rec.first.get((uid, "finished")) or self.rec.deleted.get(uid)
            out.append(
                QuotaHold(
                    key[0],
                    gpus,
                    self.rel(self.rec.first.get((uid, "quota"))),
                    self.rel(latest(self.rec, uids, "created")),
                    self.rel(latest(self.rec, uids, "running")),
                    self.rel(latest(self.rec, uids, "succeeded")),
                    self.rel(released),
                )
            )
        return out
