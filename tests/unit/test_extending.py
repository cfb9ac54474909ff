"""docs/extending.md's "Add an mlPolicy" checklist, followed by a test.

A toy ``flux`` policy (the one Trainer mlPolicy trainweave refuses: ``inputs.MLPolicy`` already
has the field, so step 1 of the checklist is done) written the way the page says: a
``base.Policy`` subclass with its frozen part, registered through ``Registry.with_policy`` in a
test-local registry copy, then rendered. The toy uses only modules the page lists (checked from
this file's own imports), and nothing in ``trainer.py``, ``render.py``, ``argo/objects.py`` or
``model.py`` learns its name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from tests.builders import make_runtime, make_trainjob
from tests.unit import extending
from trainweave.adapters import k8s_objects, names, render
from trainweave.adapters.trainjob import policies, trainer, validate, wirelists
from trainweave.adapters.trainjob.policies.base import Context, Policy, reserved_env_errors
from trainweave.adapters.trainjob.policies.shared import completion_index
from trainweave.errors import InputError, InputErrors
from trainweave.inputs import parse_runtime, parse_trainjob
from trainweave.labels import Ancestor
from trainweave.model import Pipeline
from trainweave.sshkeys import KeyPair

Json = dict[str, Any]
RESERVED = ("FLUX_NODES", "FLUX_RANK")


@dataclass(frozen=True)
class FluxPart:
    """What a toy-flux Pipeline keeps: the broker count, for its ConfigMap."""

    nodes: int

    def objects(self, pipeline: Pipeline) -> list[Json]:
        brokers = ",".join(
            names.pod_hostname(pipeline.name, "node", 0, i) for i in range(self.nodes)
        )
        name = f"{pipeline.name}-flux-config"
        return [k8s_objects.config_map(pipeline, name, "flux-config", {"brokers": brokers})]

    def secrets(self, pipeline: Pipeline, keys: KeyPair | None) -> list[Json]:
        return []


class ToyFlux(Policy):
    """Validate: FLUX_* env is reserved. Enforce: FLUX_* env and the config volume on the
    trainer's node container. Build: the ``<trainjob>-flux-config`` ConfigMap."""

    trainer_env_first: ClassVar[bool] = True

    def validate(self, ctx: Context) -> list[InputError]:
        return reserved_env_errors(ctx.trainjob, RESERVED)

    def enforce(
        self, ctx: Context, job: str, ancestor: Ancestor | None, pod_spec: Json
    ) -> int | None:
        node = validate.container(pod_spec, "node")
        if ancestor is not Ancestor.TRAINER or node is None:
            return None
        env: list[Json] = [
            {"name": "FLUX_NODES", "value": str(ctx.num_nodes)},
            {"name": "FLUX_RANK", "valueFrom": completion_index()},
        ]
        wirelists.upsert_env(node, env)
        config = {"name": "flux-config", "configMap": {"name": f"{ctx.name}-flux-config"}}
        wirelists.upsert_by_name(pod_spec.setdefault("volumes", []), [config])
        mount = {"name": "flux-config", "mountPath": "/etc/flux"}
        wirelists.upsert_by_name(node.setdefault("volumeMounts", []), [mount])
        return None

    def part(self, ctx: Context) -> FluxPart:
        return FluxPart(ctx.num_nodes)


REGISTRY = policies.REGISTRY.with_policy("flux", ToyFlux())


def _inputs(env: list[Json] | None = None) -> tuple[Any, Any]:
    rt = make_runtime(ml_policy={"numNodes": 1, "flux": {}}).build()
    trainer_spec: Json = {"numNodes": 3, **({"env": env} if env else {})}
    return parse_trainjob(make_trainjob(trainer=trainer_spec)), parse_runtime(rt)


def test_the_toy_policy_renders_its_env_volume_and_configmap() -> None:
    tj, rt = _inputs()
    pipeline = trainer.to_pipeline(tj, rt, registry=REGISTRY)
    assert pipeline.policy == FluxPart(3)
    (job,) = pipeline.step("node").jobs
    assert job.pods == 3
    env = {e["name"]: e for e in job.main_container["env"]}
    assert env["FLUX_NODES"]["value"] == "3"
    assert env["FLUX_RANK"]["valueFrom"] == completion_index()
    assert {"name": "flux-config", "mountPath": "/etc/flux"} in job.main_container["volumeMounts"]
    objs = render.objects_of(pipeline)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Service", "tj"),
        ("ConfigMap", "tj-runtime-snapshot"),
        ("ConfigMap", "tj-flux-config"),
        ("Workflow", "tj"),
    ]
    assert objs[-2]["data"] == {"brokers": "tj-node-0-0,tj-node-0-1,tj-node-0-2"}


def test_the_toy_policy_validates_and_the_shipped_registry_still_refuses_flux() -> None:
    tj, rt = _inputs(env=[{"name": "FLUX_RANK", "value": "0"}])
    with pytest.raises(InputErrors) as got:
        trainer.to_pipeline(tj, rt, registry=REGISTRY)
    assert [(e.path, e.message) for e in got.value.errors] == [
        ("spec.trainer.env[0].name", "FLUX_RANK is reserved: the runtime's mlPolicy sets it")
    ]
    tj, rt = _inputs()
    with pytest.raises(InputErrors) as refused:
        trainer.to_pipeline(tj, rt)
    assert [e.path for e in refused.value.errors] == ["spec.mlPolicy.flux"]


def test_the_toy_touches_only_the_places_the_page_lists() -> None:
    """Every trainweave module this file imports is one the page's checklist names (by path or
    dotted name), and the page says which files a policy does not touch."""
    section = extending.section("Add an mlPolicy")
    missing = extending.unlisted(__file__, "Add an mlPolicy")
    assert missing == [], "imported by the toy policy but not on docs/extending.md's checklist"
    untouched = re.search(r"^Not touched: (.*?)\n\n", section, re.S | re.M)
    assert untouched is not None
    for path in ("adapters/trainjob/trainer.py", "adapters/render.py", "trainweave/model.py"):
        assert path in untouched.group(1)
