"""API errors in the Kubernetes ``Status`` shape (``metav1.Status``), as the API server writes
them (``k8s.io/apimachinery/pkg/api/errors``). Tests only."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from tests.unit.fakeapi.resources import Resource

Json = dict[str, Any]


class Failure(Exception):
    """A non-2xx answer: HTTP ``code`` and its ``Status`` body."""

    def __init__(self, code: int, reason: str, message: str, details: Json | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.body: Json = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        }
        if details is not None:
            self.body["details"] = details

    @property
    def phrase(self) -> str:
        """The HTTP reason phrase (``Not Found``), as a client's error carries it."""
        return HTTPStatus(self.code).phrase


def _details(res: Resource, name: str) -> Json:
    return {"name": name, "group": res.kind.group, "kind": res.kind.plural}


def not_found(res: Resource, name: str) -> Failure:
    """404 ``NotFound``: ``trainjobs.trainer.kubeflow.org "ft" not found``."""
    return Failure(404, "NotFound", f'{res.group_resource} "{name}" not found', _details(res, name))


def already_exists(res: Resource, name: str) -> Failure:
    """409 ``AlreadyExists``."""
    message = f'{res.group_resource} "{name}" already exists'
    return Failure(409, "AlreadyExists", message, _details(res, name))


def conflict(res: Resource, name: str, why: str) -> Failure:
    """409 ``Conflict``: a stale resourceVersion, a failed precondition, an apply conflict."""
    message = f'Operation cannot be fulfilled on {res.group_resource} "{name}": {why}'
    return Failure(409, "Conflict", message, _details(res, name))


def gone(message: str) -> Failure:
    """410 ``Expired``: a watch or continue token older than the history kept."""
    return Failure(410, "Expired", message)


def invalid(res: Resource, name: str, causes: list[tuple[str, str]]) -> Failure:
    """422 ``Invalid``, one cause per ``(field, message)``."""
    kind = res.kind.kind
    text = "; ".join(f"{f}: {m}" for f, m in causes)
    details = _details(res, name) | {
        "kind": kind,
        "causes": [{"reason": "FieldValueInvalid", "message": m, "field": f} for f, m in causes],
    }
    return Failure(422, "Invalid", f'{kind}.{res.kind.group} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> Failure:
    """400 ``BadRequest``."""
    return Failure(400, "BadRequest", message)


def unsupported_media(content_type: str) -> Failure:
    """415 ``UnsupportedMediaType``."""
    return Failure(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {content_type}",
    )


def no_route(path: str) -> Failure:
    """404 for a path no resource serves."""
    return Failure(404, "NotFound", f"the server could not find the requested resource ({path})")


def method_not_allowed(method: str, path: str) -> Failure:
    """405 ``MethodNotAllowed``."""
    return Failure(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method} {path})",
    )
