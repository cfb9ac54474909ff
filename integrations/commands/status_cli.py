"""``trainweave status TRAINJOB`` and ``trainweave queues``: the cluster-reading commands.

``status`` reads the live TrainJob, its Workflows and pods (label ``trainweave.io/trainjob``)
and the step Workloads, folds them with the same pure functions the controller
uses (``rollup``, ``quota``) and prints a table. Workloads that are gone are
shown from the ``trainweave.io/quota`` annotation. A step an admission check holds or evicted
(``capacity``) gets a line, with its ProvisioningRequest's conditions when the namespace's
requests can be listed. ``status --timeline`` also reads the
namespace's Events about Workloads (Kueue's wait reasons) and prints ``timeline``'s Gantt chart
(or its JSON, or a PNG). ``queues`` lists ClusterQueues,
LocalQueues, Workloads, TrainJobs and Workflows once (read only) and prints
``queues_view``'s per-ClusterQueue view.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from trainweave import labels, yamlout
from trainweave.integrations.commands import queues_format, timeline_format
from trainweave.integrations.views.decide import verdict
from trainweave.integrations.views.read import capacity, queues_view, quota, timeline
from trainweave.integrations.views.read.argo_view import WorkflowView
from trainweave.integrations.views.read.bodies import Meta, TrainJobBody, list_at
from trainweave.integrations.views.read.observed import Observed, observed, quota_records
from trainweave.integrations.views.requests import api
from trainweave.states import ArgoPhase

Json = dict[str, Any]


def observe(send: api.Send, namespace: str, name: str) -> Observed:
    """Read one TrainJob and its children from the API."""
    sel = f"{labels.TRAINJOB}={name}"

    def workload(group: str) -> Json | None:
        try:
            return send(api.get(api.WORKLOAD, namespace, group))
        except api.ApiError as err:
            if err.not_found:
                return None
            raise

    return observed(
        send(api.get(api.TRAINJOB, namespace, name)),
        list_at(send(api.list_(api.WORKFLOW, namespace, sel)), "items"),
        list_at(send(api.list_(api.POD, namespace, sel)), "items"),
        workload,
    )


def step_records(obs: Observed, now: datetime) -> list[quota.StepQuota]:
    """The quota records of ``obs``'s steps: the live Workloads', and the ``trainweave.io/quota``
    annotation's for those that are gone (``quota.merge``)."""
    ann = Meta.of(obs.trainjob).annotation(labels.QUOTA_ANNOTATION)
    return quota.merge(quota.decode(ann), quota_records(obs, now))


def provisioning_requests(send: api.Send, namespace: str) -> dict[str, Json]:
    """The namespace's ProvisioningRequests by name; {} when they cannot be read (no CRD, or no
    ``list`` on them: the report then says what the step's Workload says)."""
    try:
        found = list_all(send, api.PROVISIONING_REQUEST, namespace)
    except api.ApiError:
        return {}
    return {Meta.of(r).name: r for r in found}


def print_status(
    obs: Observed, now: datetime, out: TextIO, requests: Mapping[str, Json] | None = None
) -> None:
    """Print the status report of ``obs``; ``requests``: the ProvisioningRequests by name
    (``provisioning_requests``), whose conditions a step waiting for capacity shows."""
    tj = obs.trainjob
    body = TrainJobBody.of(tj)
    meta = body.meta
    conds = body.conditions
    state = conds[-1]["type"] if conds else "Created"
    prog = obs.progress
    out.write(f"TrainJob {meta.namespace}/{meta.name}  state: {state}  ")
    out.write(f"attempt: {prog.attempt + 1} (maxRestarts {prog.max_restarts})\n")
    for c in conds:
        out.write(f"  {c['type']}={c['status']} {c.get('reason', '')}: {c.get('message', '')}\n")
    records = step_records(obs, now)
    by_group = {q.workload: q for q in records}
    rows = [
        ("STEP", "ROLE", "PHASE", "QUEUE", "CLUSTERQUEUE", "ADMISSION", "WAIT", "HOLD", "GPU-h")
    ]
    for v in obs.owned_views:
        for group, info in v.groups.items():
            step = v.steps.get(info.step)
            q = by_group.get(group)
            admission = "-"
            if q is not None:
                admission = q.state + (f" ({q.reason})" if q.reason else "")
                admission += " (waiting for capacity)" if q.waiting_for_capacity else ""
            rows.append(
                (
                    info.step + (f" [{v.name}]" if len(obs.workflows) > 1 else ""),
                    info.role,
                    (step.phase if step else "") or ArgoPhase.PENDING,
                    info.queue,
                    q.cluster_queue if q and q.cluster_queue else "-",
                    admission,
                    quota.format_duration(q.wait_seconds) if q else "-",
                    quota.format_duration(q.hold_seconds) if q else "-",
                    f"{q.gpu_hours:.3f}" if q else "-",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n")
    tot = quota.totals(records)
    out.write(
        f"total admission wait: {quota.format_duration(tot['waitSeconds'])}  GPU-hours: {tot['gpuHours']:.3f}\n"
    )
    for js in body.jobs_status:
        out.write(
            f"  job {js['name']}: active={js['active']} ready={js['ready']} "
            f"succeeded={js['succeeded']} failed={js['failed']} suspended={js['suspended']}\n"
        )
    for q in records:
        if q.evictions:
            told = ", ".join(f"{reason} x{n}" for reason, n in q.evictions.items())
            out.write(f"  evicted {q.step} ({q.workload}): {told}\n")
    for q in records:
        if note := capacity.note(q):
            out.write(f"  capacity {q.step} ({q.workload}): {note}\n")
            if q.request in (requests or {}):
                said = capacity.request_conditions((requests or {})[q.request])
                out.write(f"    ProvisioningRequest {q.request}: {said}\n")
    for v in obs.owned_views:
        for line in disruption_lines(v):
            out.write(f"  {line}\n")


def disruption_lines(v: WorkflowView) -> list[str]:
    """The disruptions ``v`` recorded (``trainweave.io/disruptions``) and, for each step that
    had one, the failures counted against its retry budget (``verdict.spent``)."""
    lines = []
    for step, marks in sorted(v.disruptions.items()):
        for m in marks:
            lines.append(
                f"disrupted {step}: {', '.join(m.pods)} {m.type} ({m.reason}) at {m.at}: not counted"
            )
        for job, policy in sorted(v.backoff_limits.get(step, {}).items()):
            counted, _ = verdict.spent(job, policy, v.steps.get(step), v.disruptions)
            spent = ", ".join(f"{slot}={n}" for slot, n in sorted(counted.items())) or "none"
            per = "shared by its pods" if policy.shared else "per pod"
            lines.append(f"retries counted {step}/{job}: {spent} (budget {policy.budget} {per})")
    return lines


MULTIKUEUE = (
    "kueue.x-k8s.io/multikueue"  # Kueue v0.19.2 apis/kueue/v1beta2 MultiKueueControllerName
)


def dispatch_lines(trainjob: Json, workloads: list[Json]) -> list[str]:
    """Where MultiKueue runs a TrainJob it manages (``spec.managedBy``): the manager's Workload
    owned by it, its ``status.clusterName`` (set once a worker reserved quota) or its
    ``nominatedClusterNames``, and each admission check's state (Kueue v0.19.2
    apis/kueue/v1beta2/workload_types.go)."""
    uid = trainjob.get("metadata", {}).get("uid")
    lines = []
    for wl in workloads:
        owners = wl.get("metadata", {}).get("ownerReferences") or []
        if not any(o.get("uid") == uid for o in owners):
            continue
        st = wl.get("status") or {}
        where = st.get("clusterName") or (
            "nominated " + ",".join(st["nominatedClusterNames"])
            if st.get("nominatedClusterNames")
            else "none yet"
        )
        lines.append(
            f"dispatched by MultiKueue: worker {where} (Workload {wl['metadata']['name']})"
        )
        for ac in st.get("admissionChecks") or []:
            msg = ac.get("message", "")
            lines.append(
                f"  admission check {ac['name']}: {ac['state']}" + (f": {msg}" if msg else "")
            )
    return lines or ["dispatched by MultiKueue: no Workload yet"]


@dataclass(frozen=True)
class Timeline:
    """``--timeline`` (``on``), ``-o`` (table|json) and ``--timeline-png`` FILE ("" for none)."""

    on: bool = False
    output: str = "table"
    png: str = ""


def workload_events(send: api.Send, namespace: str) -> list[Json]:
    """The namespace's Events about Workloads (Kueue's wait reasons); [] if not readable."""
    try:
        return list_all(send, api.EVENT, namespace, field="involvedObject.kind=Workload")
    except api.ApiError:
        return []  # no RBAC for Events, say: the timeline without Kueue's old reasons


def print_timeline(
    obs: Observed, events: list[Json], now: datetime, out: TextIO, opts: Timeline
) -> None:
    """The step timeline of ``obs`` on ``out`` (text or JSON), and its PNG into ``opts.png``."""
    tl = timeline.timeline(obs, now, events)
    if opts.output == "json":
        json.dump(timeline_format.to_json(tl), out, indent=2)
        out.write("\n")
    else:
        out.write(timeline_format.format_text(tl))
    if opts.png:
        from trainweave.integrations.commands import timeline_png

        Path(opts.png).write_bytes(timeline_png.png(tl))


def main(
    name: str,
    namespace: str,
    configuration: Any,
    out: TextIO,
    err: TextIO,
    opts: Timeline = Timeline(),
) -> int:
    """The ``status`` command against the cluster of a kubernetes client ``configuration``:
    the report (or with ``opts.on`` the timeline) on ``out``, or an error on ``err`` (exit 1)."""
    from trainweave.integrations.cluster.kube import KubeClient

    client = KubeClient(configuration)
    try:
        obs = observe(client.send, namespace, name)
        events = workload_events(client.send, namespace) if opts.on else []
    except api.ApiError as exc:
        err.write(f"error: {exc}\n")
        return 1
    if not opts.on:
        now = datetime.now(UTC)
        asked = [q for q in step_records(obs, now) if q.request and capacity.note(q)]
        requests = provisioning_requests(client.send, namespace) if asked else {}
        print_status(obs, now, out, requests)
        if TrainJobBody.of(obs.trainjob).managed_by == MULTIKUEUE:
            try:
                wls = list_all(client.send, api.WORKLOAD, namespace)
            except api.ApiError as exc:
                err.write(f"error: {exc}\n")
                return 1
            for line in dispatch_lines(obs.trainjob, wls):
                out.write(line + "\n")
        return 0
    try:
        print_timeline(obs, events, datetime.now(UTC), out, opts)
    except OSError as exc:
        err.write(f"error: {opts.png}: {exc.strerror or exc}\n")
        return 1
    return 0


def list_all(
    send: api.Send, kind: api.Kind, namespace: str = "", selector: str = "", field: str = ""
) -> list[Json]:
    """Every item of a collection (``field``: a fieldSelector), paged 500 at a time."""
    items: list[Json] = []
    cont = ""
    while True:
        params = {"limit": "500"} | ({"continue": cont} if cont else {})
        params |= {"fieldSelector": field} if field else {}
        page = send(api.list_(kind, namespace, selector, **params))
        items += list_at(page, "items")
        cont = Meta.of(page).continue_token
        if not cont:
            return items


def read_queues(send: api.Send, namespace: str = "") -> queues_view.Cluster:
    """One read of what ``trainweave queues`` shows (``namespace`` empty: all)."""
    return queues_view.Cluster(
        cluster_queues=tuple(list_all(send, api.CLUSTER_QUEUE)),
        local_queues=tuple(list_all(send, api.LOCAL_QUEUE, namespace)),
        workloads=tuple(list_all(send, api.WORKLOAD, namespace)),
        trainjobs=tuple(list_all(send, api.TRAINJOB, namespace)),
        workflows=tuple(list_all(send, api.WORKFLOW, namespace, labels.TRAINJOB)),
    )


def queues(
    send: api.Send, now: datetime, out: TextIO, namespace: str, cluster_queue: str, output: str
) -> int:
    """The ``queues`` command on ``send``: 0, or 1 on an API error."""
    try:
        cluster = read_queues(send, namespace)
    except api.ApiError as err:
        out.write(f"error: {err}\n")
        return 1
    view = queues_view.queues_view(cluster, now, namespace, cluster_queue)
    if output == "json":
        json.dump(queues_view.to_json(view, now), out, indent=2)
        out.write("\n")
    elif output == "yaml":
        out.write(yamlout.dump(queues_view.to_json(view, now)))
    else:
        out.write(queues_format.format_table(view))
    return 0


def queues_main(
    namespace: str, cluster_queue: str, output: str, configuration: Any, out: TextIO, err: TextIO
) -> int:
    """The ``queues`` command against the cluster of a kubernetes client ``configuration``:
    the view on ``out``, or an API error on ``err`` (exit 1)."""
    from trainweave.integrations.cluster.kube import KubeClient

    client = KubeClient(configuration)
    text = io.StringIO()
    code = queues(client.send, datetime.now(UTC), text, namespace, cluster_queue, output)
    (out if code == 0 else err).write(text.getvalue())
    return code
