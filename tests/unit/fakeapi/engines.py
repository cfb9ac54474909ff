"""Argo Workflows v4 and Kueue v0.19 played on the fake API server, one transition at a time, as
the controller meets them on the engines (docs/engines.md). Tests only.

``Engines.advance`` makes the next transition and says whether there was one; the objects it
writes have the shapes the engines write (``tests/unit/cluster_objects.py`` describes them):

- Argo: a Workflow starts (``Running``); a step whose ``depends`` all succeeded gets its DAG
  node and one pod per pod task (``<wf>.<step>.<slot>(0)`` Pod nodes, pods labelled from their
  template with the task's parameters, Kueue's scheduling gate, Argo's node-name annotation);
  a pod's node follows its pod (exit code, ``<container>: Error (exit code N)``); a step is
  ``Succeeded`` when all its pods are, ``Failed`` when one failed; the Workflow ends
  ``Succeeded`` when every step did, ``Failed`` (failFast) once a failed step leaves nothing
  running. Retries are not played: a pod made to fail must fail for good (its template's
  ``retryStrategy`` refuses that exit code, as ``FailJob`` rules render).
- Kueue: once a pod group's pods all exist (``pod-group-total-count``) its Workload is created
  (named after the group), then admitted (``QuotaReserved``, ``Admitted``, ``admission``), then
  its pods ungated; it is ``Finished`` when all its pods succeeded, or once one carries
  ``retriable-in-group: "false"`` and all are done (a pod-group Workload is never Failed, D14).
- The kubelet: an ungated pod runs, then ends with the exit code ``codes`` gives its
  replicatedJob for that Workflow (0 when none).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tests.unit.fakeapi.transport import Transport
from trainweave import labels as L
from trainweave.integrations.views.read.argo_view import TERMINAL
from trainweave.integrations.views.read.times import format_time
from trainweave.integrations.views.requests import api

Json = dict[str, Any]
GATE = "kueue.x-k8s.io/admission"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
RETRIABLE = "kueue.x-k8s.io/retriable-in-group"
_NO_RETRY = re.compile(r"exit code \(([0-9|]+)\)\[\)\]'\) \? false")


def _params(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"{{{{inputs.parameters.{key}}}}}", value)
    return text


def _attempt(node_name: str) -> int:
    """``n`` of a pod node ``<wf>.<step>.<slot>(<n>)``."""
    return int(node_name.rsplit("(", 1)[1].rstrip(")"))


def _cond(ctype: str, reason: str, now: str) -> Json:
    return {"type": ctype, "status": "True", "reason": reason, "message": reason,
            "lastTransitionTime": now}  # fmt: skip


class Engines:
    """Argo, Kueue and the kubelet on ``fake`` (their own client, apart from the controller's)."""

    def __init__(
        self,
        fake: Transport,
        codes: dict[str, list[int]] | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.fake, self.codes, self.now = fake, codes or {}, now

    def _stamp(self) -> str:
        return format_time(self.now())

    def advance(self) -> bool:
        """One transition, the first there is (Argo, then Kueue, then the kubelet)."""
        server = self.fake.server
        for wf in server.objects("Workflow"):
            if self._argo(wf):
                return True
        pods = server.objects("Pod")
        return self._kueue(pods) or self._kubelet(pods)

    def settle(self, limit: int = 1000) -> int:
        """Every transition there is; how many."""
        n = 0
        while self.advance():
            n += 1
            assert n < limit, "the engines never settle"
        return n

    # --- Argo -------------------------------------------------------------------------------
    def _patch_wf(self, wf: Json, status: Json) -> None:
        meta = wf["metadata"]
        body = {"metadata": {"resourceVersion": meta["resourceVersion"]}, "status": status}
        self.fake(api.merge_patch(api.WORKFLOW, meta["namespace"], meta["name"], body))

    def _argo(self, wf: Json) -> bool:
        spec, status = wf["spec"], wf.get("status") or {}
        name = wf["metadata"]["name"]
        if status.get("phase") in TERMINAL or spec.get("suspend"):
            return False
        nodes: dict[str, Json] = dict(status.get("nodes") or {})
        if spec.get("shutdown"):
            self._stop(wf, nodes)
            return True
        if not status.get("phase"):
            nodes[name] = {"id": name, "name": name, "displayName": name, "type": "DAG",
                           "phase": "Running", "startedAt": self._stamp()}  # fmt: skip
            self._patch_wf(wf, {"phase": "Running", "startedAt": self._stamp(), "nodes": nodes})
            return True
        by_name = {n["name"]: n for n in nodes.values()}
        tpls = {t["name"]: t for t in spec["templates"]}
        entry = tpls[spec["entrypoint"]]["dag"]["tasks"]
        pods = {p["metadata"]["annotations"].get(L.ARGO_NODE_NAME): p
                for p in self.fake.server.objects("Pod", wf["metadata"]["namespace"])}  # fmt: skip
        phases: dict[str, str] = {}
        for task in entry:
            step = by_name.get(f"{name}.{task['name']}")
            phases[task["name"]] = step["phase"] if step else ""
        for task in entry:  # a pod node follows its pod; a step node its pod nodes
            step = by_name.get(f"{name}.{task['name']}")
            running = step is not None and step["phase"] not in TERMINAL
            if running and self._follow(wf, tpls, task, step or {}, by_name, pods):
                return True
        failed = "Failed" in phases.values()
        running = any(p and p not in TERMINAL for p in phases.values())
        if failed and not running:
            self._end(wf, by_name, "Failed")
            return True
        if all(p == "Succeeded" for p in phases.values()):
            self._end(wf, by_name, "Succeeded")
            return True
        for task in entry:
            deps = re.findall(r"[\w-]+", task.get("depends") or "")
            if phases[task["name"]] or failed or any(phases.get(d) != "Succeeded" for d in deps):
                continue
            self._start_step(wf, tpls, task, by_name)
            return True
        return False

    def _follow(
        self,
        wf: Json,
        tpls: dict[str, Json],
        task: Json,
        step: Json,
        by_name: dict[str, Json],
        pods: dict[str, Json],
    ) -> bool:
        """One transition of a running step: its pod nodes follow their pods, a failed attempt
        is retried (``retryStrategy``), the step ends. False when nothing changed."""
        name, sname = wf["metadata"]["name"], task["name"]
        pod_tasks = tpls[task["template"]]["dag"]["tasks"]
        changed, latest = False, []
        for i, pod_task in enumerate(pod_tasks):
            prefix = f"{name}.{sname}.{pod_task['name']}("
            tries = sorted((n for n in by_name if n.startswith(prefix)), key=_attempt)
            node = by_name[tries[-1]]
            phase = (pods.get(node["name"]) or {}).get("status", {}).get("phase", "Pending")
            if phase != node["phase"]:
                node["phase"], changed = phase, True
                if phase in TERMINAL:
                    code = self._code(wf, sname, _attempt(node["name"]))
                    node["outputs"] = {"exitCode": str(code)}
                    node["finishedAt"] = self._stamp()
                    if code:
                        node["message"] = f"{self._rjob(tpls, task)}: Error (exit code {code})"
            elif phase == "Failed" and self._retries(tpls, pod_task, wf, sname, len(tries)):
                self._create_pod(wf, tpls, sname, i, pod_task, len(tries), by_name)
                self._patch_wf(wf, {"nodes": {n["id"]: n for n in by_name.values()}})
                return True
            latest.append(node["phase"])
        retrying = any(
            p == "Failed"
            and self._retries(tpls, t, wf, sname, self._tries(by_name, name, sname, t))
            for p, t in zip(latest, pod_tasks, strict=True)
        )
        if "Failed" in latest and all(p in TERMINAL for p in latest) and not retrying:
            step["phase"], changed = "Failed", True
        elif all(p == "Succeeded" for p in latest):
            step["phase"], changed = "Succeeded", True
        if changed:
            if step["phase"] in TERMINAL:
                step.setdefault("finishedAt", self._stamp())
            self._patch_wf(wf, {"nodes": {n["id"]: n for n in by_name.values()}})
        return changed

    @staticmethod
    def _tries(by_name: dict[str, Json], name: str, step: str, pod_task: Json) -> int:
        prefix = f"{name}.{step}.{pod_task['name']}("
        return sum(1 for n in by_name if n.startswith(prefix))

    def _retries(
        self, tpls: dict[str, Json], pod_task: Json, wf: Json, step: str, tries: int
    ) -> bool:
        """Argo retries a failed attempt: the template's retryStrategy has a try left and its
        expression, when it has one of the ``FailJob`` shape, does not refuse the exit code."""
        strategy = tpls[pod_task["template"]].get("retryStrategy") or {}
        if not strategy or tries > int(strategy.get("limit") or 0):
            return False
        refused = _NO_RETRY.search(str(strategy.get("expression") or ""))
        code = self._code(wf, step, tries - 1)
        if strategy.get("expression") and refused is None:
            raise NotImplementedError(f"Argo's retry expression: {strategy['expression']!r}")
        return not (refused and str(code) in refused[1].split("|"))

    def _stop(self, wf: Json, nodes: dict[str, Json]) -> None:
        """``shutdown: Stop``: the pods still running are killed (exit 143), every unfinished node
        fails, and so does the Workflow."""
        ns = wf["metadata"]["namespace"]
        for node in nodes.values():
            if node.get("phase") in TERMINAL:
                continue
            node["phase"] = "Failed"
            if node.get("type") == "Pod":
                node["outputs"] = {"exitCode": "143"}
                node["message"] = "main: Error (exit code 143)"
        for pod in self.fake.server.objects("Pod", ns):
            meta = pod["metadata"]
            if meta["labels"].get(L.ARGO_WORKFLOW) != wf["metadata"]["name"]:
                continue
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                status = {"phase": "Failed", "conditions": [{"type": "Ready", "status": "False"}]}
                self.fake(api.merge_patch(api.POD, ns, meta["name"], {"status": status}, "status"))
        message = f"Stopped with strategy '{wf['spec']['shutdown']}'"
        ended: Json = {
            "phase": "Failed",
            "message": message,
            "finishedAt": self._stamp(),
            "nodes": nodes,
        }
        self._patch_wf(wf, ended)

    def _rjob(self, tpls: dict[str, Json], task: Json) -> str:
        first = tpls[task["template"]]["dag"]["tasks"][0]
        return str(tpls[first["template"]]["metadata"]["labels"][L.REPLICATED_JOB])

    def _code(self, wf: Json, step: str, attempt: int) -> int:
        """The exit code ``codes`` gives attempt ``attempt`` of a pod of ``step`` (0 past the
        list: a retry that succeeds)."""
        tpls = {t["name"]: t for t in wf["spec"]["templates"]}
        task = next(t for t in tpls[wf["spec"]["entrypoint"]]["dag"]["tasks"] if t["name"] == step)
        codes = self.codes.get(self._rjob(tpls, task), [])
        return codes[attempt] if attempt < len(codes) else 0

    def _end(self, wf: Json, by_name: dict[str, Json], phase: str) -> None:
        root = by_name[wf["metadata"]["name"]]
        root["phase"] = phase
        nodes = {n["id"]: n for n in by_name.values()}
        self._patch_wf(wf, {"phase": phase, "finishedAt": self._stamp(), "nodes": nodes})

    def _start_step(
        self, wf: Json, tpls: dict[str, Json], task: Json, by_name: dict[str, Json]
    ) -> None:
        meta = wf["metadata"]
        name, step = meta["name"], task["name"]
        sid = f"{name}-{step}"
        by_name[f"{name}.{step}"] = {"id": sid, "name": f"{name}.{step}", "displayName": step,
            "type": "DAG", "phase": "Running", "boundaryID": name, "startedAt": self._stamp()}  # fmt: skip
        for i, pod_task in enumerate(tpls[task["template"]]["dag"]["tasks"]):
            self._create_pod(wf, tpls, step, i, pod_task, 0, by_name)
        self._patch_wf(wf, {"nodes": {n["id"]: n for n in by_name.values()}})

    def _create_pod(
        self,
        wf: Json,
        tpls: dict[str, Json],
        step: str,
        i: int,
        pod_task: Json,
        attempt: int,
        by_name: dict[str, Json],
    ) -> None:
        """Attempt ``attempt`` of one pod task: its Pod node and its pod, gated by Kueue."""
        meta = wf["metadata"]
        name, ns, slot = meta["name"], meta["namespace"], pod_task["name"]
        node_name = f"{name}.{step}.{slot}({attempt})"
        by_name[node_name] = {"id": f"{name}-{step}-{i}-{attempt}", "name": node_name,
            "displayName": f"{slot}({attempt})", "type": "Pod", "phase": "Pending",
            "startedAt": self._stamp()}  # fmt: skip
        tpl = tpls[pod_task["template"]]
        values = {p["name"]: str(p["value"]) for p in pod_task["arguments"]["parameters"]}
        tmeta = tpl.get("metadata") or {}
        pod_labels = {k: _params(str(v), values) for k, v in (tmeta.get("labels") or {}).items()}
        pod_labels[L.ARGO_WORKFLOW] = name
        ann = {k: _params(str(v), values) for k, v in (tmeta.get("annotations") or {}).items()}
        ann[L.ARGO_NODE_NAME] = node_name
        containers = [{"name": c["name"], "image": c.get("image", "x")}
                      for c in (tpl.get("containerSet") or {}).get("containers") or []]  # fmt: skip
        owner = [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "name": name,
                  "uid": meta["uid"], "controller": True}]  # fmt: skip
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{name}-{slot}-{attempt}", "namespace": ns,
                            "labels": pod_labels, "annotations": ann, "ownerReferences": owner},
               "spec": {"containers": containers or [{"name": "main", "image": "x"}],
                        "schedulingGates": [{"name": GATE}]}}  # fmt: skip
        self.fake(api.create(api.POD, ns, pod))

    # --- Kueue ------------------------------------------------------------------------------
    def _kueue(self, pods: list[Json]) -> bool:
        groups: dict[tuple[str, str], list[Json]] = {}
        for pod in pods:
            group = pod["metadata"]["labels"].get(L.KUEUE_POD_GROUP_NAME)
            if group:
                groups.setdefault((pod["metadata"]["namespace"], group), []).append(pod)
        for (ns, group), members in sorted(groups.items()):
            wl = self.fake.server.find("Workload", ns, group)
            total = int(members[0]["metadata"]["annotations"].get(TOTAL) or len(members))
            if wl is None:
                if len(members) < total:
                    continue
                self._create_workload(ns, group, members)
                return True
            conds = {c["type"]: c for c in (wl.get("status") or {}).get("conditions") or []}
            if "Finished" in conds:
                continue
            if "QuotaReserved" not in conds:
                now = self._stamp()
                queue = str(members[0]["metadata"]["labels"].get(L.KUEUE_QUEUE_NAME) or "")
                status = {
                    "conditions": [_cond("QuotaReserved", "QuotaReserved", now),
                                   _cond("Admitted", "Admitted", now)],
                    "admission": {"clusterQueue": f"{queue}-cq", "podSetAssignments": [
                        {"name": "main", "flavors": {"cpu": "default"},
                         "resourceUsage": {"cpu": str(len(members))}, "count": len(members)}]},
                }  # fmt: skip
                self.fake(api.merge_patch(api.WORKLOAD, ns, group, {"status": status}, "status"))
                return True
            gated = [p for p in members if p["spec"].get("schedulingGates")]
            if gated:
                for pod in gated:
                    patch = {"spec": {"schedulingGates": None}}
                    self.fake(api.merge_patch(api.POD, ns, pod["metadata"]["name"], patch))
                return True
            phases = [p.get("status", {}).get("phase") for p in members]
            given_up = any(p["metadata"]["annotations"].get(RETRIABLE) == "false" for p in members)
            succeeded = phases.count("Succeeded") >= total
            if succeeded or (given_up and all(ph in ("Succeeded", "Failed") for ph in phases)):
                reason = "Succeeded" if succeeded else "Failed"
                finished = [*conds.values(), _cond("Finished", reason, self._stamp())]
                body = {"status": {"conditions": finished}}
                self.fake(api.merge_patch(api.WORKLOAD, ns, group, body, "status"))
                return True
        return False

    def _create_workload(self, ns: str, group: str, members: list[Json]) -> None:
        owners = [{"apiVersion": "v1", "kind": "Pod", "name": p["metadata"]["name"],
                   "uid": p["metadata"]["uid"]} for p in members]  # fmt: skip
        queue = str(members[0]["metadata"]["labels"].get(L.KUEUE_QUEUE_NAME) or "")
        wl = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
              "metadata": {"name": group, "namespace": ns, "ownerReferences": owners},
              "spec": {"queueName": queue, "podSets": [{"name": "main", "count": len(members)}]}}  # fmt: skip
        self.fake(api.create(api.WORKLOAD, ns, wl))

    # --- the kubelet ------------------------------------------------------------------------
    def _kubelet(self, pods: list[Json]) -> bool:
        for pod in pods:
            meta, phase = pod["metadata"], (pod.get("status") or {}).get("phase")
            if pod["spec"].get("schedulingGates") or phase in ("Succeeded", "Failed"):
                continue
            if phase != "Running":
                status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
            else:
                wf = self.fake.server.find(
                    "Workflow", meta["namespace"], meta["labels"][L.ARGO_WORKFLOW]
                )
                step, attempt = (
                    meta["labels"][L.STEP],
                    _attempt(meta["annotations"][L.ARGO_NODE_NAME]),
                )
                code = self._code(wf, step, attempt) if wf is not None else 0
                status = {"phase": "Failed" if code else "Succeeded",
                          "conditions": [{"type": "Ready", "status": "False"}]}  # fmt: skip
            self.fake(
                api.merge_patch(
                    api.POD, meta["namespace"], meta["name"], {"status": status}, "status"
                )
            )
            return True
        return False
