"""Kueue pod group names: one per step, attempt and resumed segment.

Kueue counts every pod that carries a group's name: a group is Finished once
``pod-group-total-count`` of them succeeded, and a new Workload built for the name deletes the
newest gated pods beyond the count (v0.19.2 ``pod_controller.go`` ``Finished``,
``ConstructComposableWorkload``). A step re-run by a resumed segment or a new attempt therefore
carries names no earlier segment used; these tests read every place a render writes one.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.builders import make_runtime, make_trainjob
from trainweave import labels as L
from trainweave.adapters import names, render
from trainweave.inputs import parse_runtime, parse_trainjob

Json = dict[str, Any]
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
OWNER = render.Owner("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", "u1")


def _group_names(objs: list[Json]) -> dict[str, set[str]]:
    """Every group name a render writes, by where: pod template labels and annotations, the
    exit handler's ``workload`` parameters, the kept Workloads' names."""
    found: dict[str, set[str]] = {"pods": set(), "exit": set(), "kept": set()}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if L.KUEUE_POD_GROUP_NAME in node:
                found["pods"].add(node[L.KUEUE_POD_GROUP_NAME])
            if node.get("name") == "workload" and "value" in node:
                found["exit"].add(node["value"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for obj in objs:
        if obj["kind"] == "Workflow":
            walk(obj)
        elif obj["kind"] == "Workload":
            found["kept"].add(obj["metadata"]["name"])
    return found


def _render(attempt: int, segment: int) -> list[Json]:
    tj = parse_trainjob(make_trainjob())
    rt = parse_runtime(make_runtime().with_initializers().build())
    options = render.Options(
        attempt=attempt, segment=segment, kept_position=True, owner=OWNER, exit_cleanup=True
    )
    return render.render(tj, rt, options)


def test_every_group_name_of_a_render_is_its_segments() -> None:
    """Each render names each step's group ``group_name(tj, step, attempt, segment)`` in all
    three places, and no two (attempt, segment) renders share one."""
    steps = ("dataset-initializer", "model-initializer", "node")
    seen: dict[str, tuple[int, int]] = {}
    for attempt, segment in itertools.product((0, 1, 2), (0, 1, 2)):
        found = _group_names(_render(attempt, segment))
        want = {names.group_name("tj", s, attempt, segment) for s in steps}
        assert found["pods"] == want == found["exit"]
        assert found["kept"] == {names.group_name("tj", "node", attempt, segment)}
        for name in want:
            assert seen.setdefault(name, (attempt, segment)) == (attempt, segment), name
    assert names.group_name("tj", "node", 0, 0) == "tj-node-a0"  # segment 0: the names before
    assert names.group_name("tj", "node", 1, 2) == "tj-node-a1s2"


_NAME = st.from_regex(r"[a-z]([-a-z0-9]{0,70}[a-z0-9])?", fullmatch=True)
_KEY = st.tuples(_NAME, st.integers(0, 200), st.integers(0, 200))


@given(_NAME, st.lists(_KEY, min_size=2, max_size=6, unique=True))
def test_group_names_are_distinct_dns_labels_within_a_trainjob(
    trainjob: str, keys: list[tuple[str, int, int]]
) -> None:
    """Distinct (step, attempt, segment) of one TrainJob: distinct names, each a DNS label of
    at most 63 characters (the Workload's name and a label value)."""
    got = [names.group_name(trainjob, step, a, s) for step, a, s in keys]
    assert len(set(got)) == len(got)
    for name in got:
        assert len(name) <= names.MAX_LABEL and DNS_LABEL.match(name), name
