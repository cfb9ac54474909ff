"""ObjectMeta as the API server judges it, offline: namespace, labels and annotations.

k8s.io/apimachinery@v0.36.4 ``pkg/api/validation/objectmeta.go`` ``ValidateObjectMeta`` (the
namespace a DNS-1123 label, ``ValidateAnnotations``: keys qualified names, case aside, and
256 KiB in all) and ``pkg/apis/meta/v1/validation/validation.go`` ``ValidateLabels`` (keys
qualified names, values label values). Names are judged where each kind's name rule lives
(``adapters.trainjob.validate``). Pure.

Fields: the API server names the map (``metadata.labels``); trainweave names the key
(``metadata.labels.KEY``), which points at the line to change.
"""

from __future__ import annotations

from typing import Any

from trainweave import k8s_names
from trainweave.errors import InputError
from trainweave.labels import Reason

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024  # TotalAnnotationSizeLimitB


def labels_errors(labels: Any, path: str, reason: Reason) -> list[InputError]:
    """``ValidateLabels``: each key a qualified name, each value a label value."""
    if not isinstance(labels, dict):
        return []  # a shape error, reported by the schema
    errors = []
    for key, value in labels.items():
        if problem := k8s_names.qualified_name_problem(str(key)):
            errors.append(
                InputError(f"{path}.{key}", f"Invalid value: {key!r}: {problem}", reason=reason)
            )
        if isinstance(value, str) and (problem := k8s_names.label_value_problem(value)):
            errors.append(
                InputError(f"{path}.{key}", f"Invalid value: {value!r}: {problem}", reason=reason)
            )
    return errors


def annotations_errors(annotations: Any, path: str, reason: Reason) -> list[InputError]:
    """``ValidateAnnotations``: keys qualified names (lowercased first), 256 KiB in all."""
    if not isinstance(annotations, dict):
        return []
    errors = []
    for key in annotations:
        if problem := k8s_names.qualified_name_problem(str(key).lower()):
            errors.append(
                InputError(f"{path}.{key}", f"Invalid value: {key!r}: {problem}", reason=reason)
            )
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errors.append(
            InputError(
                path,
                f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes (keys and"
                f" values together are {size})",
                reason=reason,
            )
        )
    return errors


def errors(meta: Any, path: str, reason: Reason, namespaced: bool = True) -> list[InputError]:
    """``ValidateObjectMeta`` less the name: namespace (when set), labels, annotations."""
    if not isinstance(meta, dict):
        return []
    out = []
    namespace = meta.get("namespace")
    bad = isinstance(namespace, str) and not k8s_names.is_dns1123_label(namespace)
    if namespaced and namespace and bad:
        out.append(
            InputError(
                f"{path}.namespace",
                f"Invalid value: {namespace!r}: a lowercase RFC 1123 label must consist of"
                " lower case alphanumeric characters or '-', start and end with an"
                " alphanumeric character, and be at most 63 characters",
                reason=reason,
            )
        )
    out += labels_errors(meta.get("labels"), f"{path}.labels", reason)
    out += annotations_errors(meta.get("annotations"), f"{path}.annotations", reason)
    return out
