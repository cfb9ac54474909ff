"""TrainJobs the TrainJob CRD itself refuses (OpenAPI schema and CEL rules of Trainer v2.3.0's
``trainer.kubeflow.org_trainjobs.yaml``), each with the field the API server names.

Built from examples/llm-finetune/trainjob.yaml, which both accept. ``tests/unit/test_crd_cases.py``
checks that trainweave rejects each naming that field (or a field under it);
``tests/e2e/test_crd_validation.py`` checks on the real kube-apiserver that the CRD rejects each
and names that field.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Json = dict[str, Any]
BASE = Path(__file__).parents[1] / "examples" / "llm-finetune" / "trainjob.yaml"


@dataclass(frozen=True)
class CrdCase:
    """A TrainJob the CRD refuses: ``edit`` applied to the example; ``field`` the API names."""

    name: str
    edit: Callable[[Json], None]
    field: str
    rule: str  # what in the CRD refuses it
    # set when the API's refusal names no field, only says this: a CEL rule on the whole object
    # (field "<nil>"), or Kueue's mutating TrainJob webhook, which decodes the object before the
    # schema runs
    unnamed: str = ""


def base() -> Json:
    """The example TrainJob, which the CRD and trainweave accept."""
    doc: Json = yaml.safe_load(BASE.read_text())
    return doc


def trainjob(case: CrdCase) -> Json:
    """The example with ``case``'s edit."""
    doc = copy.deepcopy(base())
    case.edit(doc)
    return doc


def _parent(doc: Json, path: str) -> tuple[Json, str]:
    """The mapping holding the last key of the dotted ``path``, and that key."""
    *parents, last = path.split(".")
    for key in parents:
        doc = doc[key]
    return doc, last


def _set(path: str, value: Any) -> Callable[[Json], None]:
    def edit(doc: Json) -> None:
        node, key = _parent(doc, path)
        node[key] = value

    return edit


def _drop(path: str) -> Callable[[Json], None]:
    def edit(doc: Json) -> None:
        node, key = _parent(doc, path)
        del node[key]

    return edit


CASES = [
    CrdCase("name-leading-digit", _set("metadata.name", "9lives"), "metadata.name",
            "CEL self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
            unnamed="metadata.name must match RFC 1035 DNS label format"),
    CrdCase("name-64-characters", _set("metadata.name", "a" * 64), "metadata.name",
            "CEL size(self.metadata.name) <= 63",
            unnamed="metadata.name must be no more than 63 characters"),
    CrdCase("deadline-zero", _set("spec.activeDeadlineSeconds", 0),
            "spec.activeDeadlineSeconds", "minimum: 1"),
    CrdCase("deadline-a-string", _set("spec.activeDeadlineSeconds", "1d"),
            "spec.activeDeadlineSeconds", "type: integer"),
    CrdCase("storage-uri-without-scheme",
            _set("spec.initializer.dataset.storageUri", "support-tickets"),
            "spec.initializer.dataset.storageUri", "CEL self.matches('^[A-Za-z]...://.+$')"),
    CrdCase("storage-uri-too-long",
            _set("spec.initializer.dataset.storageUri", "hf://" + "a" * 2044),
            "spec.initializer.dataset.storageUri", "maxLength: 2048"),
    CrdCase("managed-by-unknown", _set("spec.managedBy", "example.com/other"), "spec.managedBy",
            "CEL self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']"),
    CrdCase("env-129-items",
            _set("spec.initializer.model.env", [{"name": f"V{i}", "value": "x"} for i in range(129)]),
            "spec.initializer.model.env", "maxItems: 128"),
    CrdCase("env-repeated-name",
            _set("spec.trainer.env", [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]),
            "spec.trainer.env[1]", "x-kubernetes-list-type: map, key name"),
    CrdCase("patch-manager-empty", _set("spec.runtimePatches", [{"manager": ""}]),
            "spec.runtimePatches[0].manager", "minLength: 1"),
    CrdCase("unknown-field", _set("spec.trainer.epochs", 3), "spec.trainer.epochs",
            "no such field (fieldValidation=Strict)"),
    CrdCase("suspend-a-string", _set("spec.suspend", "yes"), "spec.suspend", "type: boolean"),
    CrdCase("cpu-not-a-quantity", _set("spec.trainer.resourcesPerNode.requests.cpu", "abc"),
            "spec.trainer.resourcesPerNode.requests.cpu", "int-or-string quantity pattern",
            unnamed="quantities must match the regular expression"),
    CrdCase("no-runtime-ref", _drop("spec.runtimeRef"), "spec.runtimeRef", "required"),
]  # fmt: skip
