"""Rendered manifests -> the exact children the controller creates. Pure.

``adapters.argo.render`` gives the apply-able manifests of one attempt (the same
as ``trainweave render`` prints). The controller adds only what a running
TrainJob needs: the controller ownerReference to the TrainJob (so garbage
collection removes the children with it), the run's ``maxRestarts`` as a
Workflow annotation, Argo ``spec.suspend`` for a TrainJob created suspended and,
for a resumed segment, the name ``<wf>-s<j>`` with the steps that already
succeeded taken out of the entrypoint DAG (their dependants' ``depends`` terms
dropped).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from trainweave import labels

Json = dict[str, Any]
_TERM = re.compile(r"^\s*([A-Za-z0-9_-]+)(\.[A-Za-z]+)?\s*$")


class UnsupportedDepends(ValueError):
    """A ``depends`` expression other than ``a && b.Succeeded`` cannot be resumed."""


def segment_name(workflow_name: str, segment: int) -> str:
    """``<wf>`` for segment 0, then ``<wf>-s1``, ``<wf>-s2``..."""
    return workflow_name if segment == 0 else f"{workflow_name}-s{segment}"


def finish(
    manifests: list[Json],
    owner: Json,
    *,
    segment: int = 0,
    skip_steps: frozenset[str] = frozenset(),
    suspend: bool = False,
    max_restarts: int = 0,
) -> list[Json]:
    """The manifests to create, Workflow last (pods need the others first)."""
    out = [copy.deepcopy(m) for m in manifests]
    ref = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for m in out:
        meta = m.setdefault("metadata", {})
        meta.setdefault("namespace", owner["metadata"]["namespace"])
        refs = [r for r in meta.get("ownerReferences") or [] if not r.get("controller")]
        meta["ownerReferences"] = [*refs, ref]
    workflows = [m for m in out if m.get("kind") == "Workflow"]
    others = [m for m in out if m.get("kind") != "Workflow"]
    for wf in workflows:
        meta = wf["metadata"]
        meta.setdefault("annotations", {})[labels.MAX_RESTARTS_ANNOTATION] = str(max_restarts)
        meta.setdefault("labels", {})[labels.SEGMENT] = str(segment)
        meta["name"] = segment_name(meta["name"], segment)
        if suspend:
            wf.setdefault("spec", {})["suspend"] = True
        if skip_steps:
            _skip(wf, skip_steps)
    return others + workflows


def _skip(workflow: Json, done: frozenset[str]) -> None:
    spec = workflow["spec"]
    for tpl in spec.get("templates") or []:
        if tpl.get("name") != spec.get("entrypoint") or not tpl.get("dag"):
            continue
        tasks = [t for t in tpl["dag"].get("tasks") or [] if t["name"] not in done]
        for task in tasks:
            if "dependencies" in task:
                task["dependencies"] = [d for d in task["dependencies"] if d not in done]
                if not task["dependencies"]:
                    del task["dependencies"]
            if "depends" in task:
                kept = [t for t in _terms(task["depends"]) if _task_of(t) not in done]
                if kept:
                    task["depends"] = " && ".join(kept)
                else:
                    del task["depends"]
        tpl["dag"]["tasks"] = tasks


def _terms(expr: str) -> list[str]:
    if "||" in expr or "(" in expr or "!" in expr:
        raise UnsupportedDepends(expr)
    terms = [t.strip() for t in expr.split("&&")]
    for t in terms:
        if not _TERM.match(t):
            raise UnsupportedDepends(expr)
    return terms


def _task_of(term: str) -> str:
    match = _TERM.match(term)
    return match.group(1) if match else term
