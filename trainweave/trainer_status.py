"""The TrainJob status endpoint's contract, as kubeflow/trainer v2.3.0 serves it. Pure.

Upstream (``pkg/statusserver``): a training pod POSTs an ``UpdateTrainJobStatusRequest``
(``pkg/apis/trainer/v1alpha1/trainjob_types.go``) to ``StatusUrl(ns, name)`` with a projected
ServiceAccount token whose audience is ``TokenAudience(ns, name)`` (``utils.go``); the body is
limited to 64 KiB (``middleware.go`` bodySizeLimitMiddleware: 413); it is decoded with Go's
``encoding/json`` (any error: 422 "Invalid payload"); a request without ``trainerStatus`` is
echoed with 200 and writes nothing; otherwise ``toApplyConfig`` (``server.go``) is applied
to the TrainJob's status subresource by server-side apply (field manager ``trainer-status``,
forced), and the API server validates it against the TrainJob CRD (its messages come back as
422). Refusals are ``metav1.Status`` bodies (``badRequest``).

Here: ``decode`` (Go's decoding of the request), ``apply_body`` (the apply patch upstream
sends), ``failure`` (the Status body) and the names, so the server in
``integrations.cluster.status_server`` only does I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

Json = dict[str, Any]

GROUP_VERSION = "trainer.kubeflow.org/v1alpha1"
TOKEN_AUDIENCE_PREFIX = "trainer.kubeflow.org"  # utils.go TokenAudiencePrefix
MAX_BODY_SIZE = 1 << 16  # server.go maxBodySize (64 KiB)
DEFAULT_PORT = 10443  # apis/config/v1alpha1/defaults.go StatusServer.Port
FIELD_MANAGER = "trainer-status"  # server.go client.FieldOwner("trainer-status")
FEATURE_GATE = "TrainJobStatus"  # pkg/features: alpha, off by default

# plugins/trainjobstatus/trainjobstatus.go
ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
CONFIG_MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
CA_CERT_FILE = "ca.crt"
TOKEN_FILE = "token"
TOKEN_VOLUME = "kubeflow-trainer-token"
TOKEN_EXPIRY_SECONDS = 3600
CA_CERT_KEY = "ca.crt"

_INT32 = (-(1 << 31), (1 << 31) - 1)
_PATH = re.compile(
    r"/apis/trainer\.kubeflow\.org/v1alpha1/namespaces/(?P<ns>[^/]+)/trainjobs/(?P<name>[^/]+)/status"
)
# time.RFC3339 as time.Parse reads it: fractional seconds after '.' or ',' are accepted.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|([+-])(\d{2}):(\d{2}))"
)


@dataclass(frozen=True)
class ServerRef:
    """Where the training pods reach the status server: its base URL (``https://host:port``)
    and the PEM of the CA that signed its certificate."""

    url: str
    ca_pem: str


def token_audience(namespace: str, name: str) -> str:
    """utils.go TokenAudience: the audience a TrainJob's status token must carry."""
    return f"{TOKEN_AUDIENCE_PREFIX}/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def status_url(namespace: str, name: str) -> str:
    """utils.go StatusUrl: the endpoint path of a TrainJob's status updates."""
    return f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status"


def ca_config_map_name(trainjob: str) -> str:
    """The ConfigMap with the server's ``ca.crt`` the plugin mounts (``<name>-tls-config``)."""
    return f"{trainjob}-tls-config"


def route(method: str, path: str) -> tuple[str, str] | None:
    """(namespace, name) of ``POST StatusUrl({namespace}, {name})``, else None (404 "Not found",
    server.go handleDefault). Go's ServeMux matches the cleaned, unescaped path one segment
    per wildcard."""
    if method != "POST":
        return None
    m = _PATH.fullmatch(path.split("?", 1)[0])
    return (m["ns"], m["name"]) if m else None


def extract_raw_token(header: str) -> str:
    """auth.go extractRawToken: the credentials of exactly one ``Bearer`` (any case) value."""
    parts = header.split()
    if len(parts) != 2 or parts[0].lower() != "bearer":
        return ""
    return parts[1]


@dataclass(frozen=True)
class Refusal(Exception):
    """A refused request: its HTTP code, metav1.Status message and reason."""

    code: int
    message: str
    reason: str


FORBIDDEN = Refusal(403, "Forbidden", "Forbidden")
NOT_FOUND = Refusal(404, "Not found", "NotFound")
INVALID_PAYLOAD = Refusal(422, "Invalid payload", "Invalid")
TOO_LARGE = Refusal(413, "Payload too large", "RequestEntityTooLarge")
INTERNAL = Refusal(500, "Internal error", "InternalError")
TRAINJOB_NOT_FOUND = Refusal(404, "Train job not found", "NotFound")


def failure(refusal: Refusal) -> Json:
    """server.go badRequest: the metav1.Status body of a refusal."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": refusal.message,
        "reason": refusal.reason,
        "code": refusal.code,
    }


def api_refusal(code: int, body: Json) -> Refusal:
    """What upstream answers when the status apply fails with ``code`` and Status ``body``:
    Invalid/BadRequest -> 422 with the API server's message, NotFound -> 404, else 500."""
    reason = str(body.get("reason") or "")
    if reason == "Invalid" or code == 422 or reason == "BadRequest" or code == 400:
        message = str(body.get("message") or "")
        return Refusal(422, message or f"Validation failed: {reason}", "Invalid")
    if reason == "NotFound" or code == 404:
        return TRAINJOB_NOT_FOUND
    return INTERNAL


class _Invalid(Exception):
    """Go's json.Decoder returned an error (422 Invalid payload)."""


def _no_constant(name: str) -> Any:
    raise _Invalid(name)  # NaN, Infinity: not JSON to Go


class _Obj(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs in order: a repeated key is decoded twice."""


def _items(obj: _Obj) -> list[tuple[str, Any]]:
    """Pairs with keys folded: encoding/json matches field names case-insensitively."""
    return [(k.lower(), v) for k, v in obj]


def _int32(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid("not an int32")
    if not _INT32[0] <= value <= _INT32[1]:
        raise _Invalid("int32 overflow")
    return value


def _string(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Invalid("not a string")
    return value


def parse_time(value: Any) -> str | None:
    """metav1.Time UnmarshalJSON then MarshalJSON: null -> None (the zero time), an RFC 3339
    string -> the same instant in UTC to the second (``Z``); anything else is invalid."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Invalid("time is not a string")
    m = _RFC3339.fullmatch(value)
    if not m:
        raise _Invalid("not RFC 3339")
    year, month, day, hour, minute, second = (int(m[i]) for i in range(1, 7))
    if hour > 23 or minute > 59 or second > 59:
        raise _Invalid("time out of range")
    offset = 0
    if m[8] != "Z":
        oh, om = int(m[10]), int(m[11])
        if oh > 24 or om > 60:  # time.Parse's general path (the RFC 3339 fast path is stricter)
            raise _Invalid("time zone offset out of range")
        offset = (oh * 60 + om) * (1 if m[9] == "+" else -1)
    try:  # years are shifted by 400 (one Gregorian cycle) so year 0000 is representable
        local = datetime(year + 400, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError as err:
        raise _Invalid(str(err)) from err
    utc = local - timedelta(minutes=offset)
    if (utc.year - 400, utc.month, utc.day, utc.hour, utc.minute, utc.second) == (1, 1, 1, 0, 0, 0):
        return None  # the zero time marshals as null
    return f"{utc.year - 400:04d}" + utc.strftime("-%m-%dT%H:%M:%SZ")


def _object(value: Any, into: Json | None) -> Json | None:
    """A JSON object decoded into a pointer-to-struct: null -> nil, an object merges into the
    struct already there (Go reuses a non-nil pointer), anything else is invalid."""
    if value is None:
        return None
    if not isinstance(value, _Obj):
        raise _Invalid("not an object")
    return into if into is not None else {}


def _trainer_status(value: _Obj, ts: Json) -> None:
    for name, raw in _items(value):
        if name == "progresspercentage":
            ts["progressPercentage"] = _int32(raw)
        elif name == "estimatedremainingseconds":
            ts["estimatedRemainingSeconds"] = _int32(raw)
        elif name == "metrics":
            if raw is not None and (isinstance(raw, _Obj) or not isinstance(raw, list)):
                raise _Invalid("metrics is not an array")
            ts["metrics"] = [_metric(m) for m in raw] if raw is not None else None
        elif name == "lastupdatedtime":
            ts["lastUpdatedTime"] = parse_time(raw)


def _metric(raw: Any) -> Json:
    out = {"name": "", "value": ""}
    if raw is None:
        return out
    if not isinstance(raw, _Obj):
        raise _Invalid("metric is not an object")
    for key, value in _items(raw):
        if key in ("name", "value"):
            out[key] = _string(value)
    return out


def decode(body: bytes) -> Json | None:
    """The request's ``trainerStatus`` as ``json.NewDecoder(body).Decode`` fills
    ``UpdateTrainJobStatusRequest`` (None: no trainerStatus); raises ``Refusal`` 422.

    One JSON value is read (what follows it is not); unknown keys are ignored; keys match
    case-insensitively, a repeated key decodes again into the same struct; wrong types,
    int32 overflow and a time that is not RFC 3339 are errors."""
    text = body.decode("utf-8", errors="replace")
    decoder = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_Obj)
    try:
        value, _ = decoder.raw_decode(text.lstrip(" \t\r\n"))
    except (ValueError, RecursionError, _Invalid) as err:
        raise INVALID_PAYLOAD from err
    try:
        if value is not None and not isinstance(value, _Obj):
            raise _Invalid("not an object")
        ts: Json | None = None
        for key, raw in _items(value or _Obj()):
            if key != "trainerstatus":
                continue
            ts = _object(raw, ts)
            if ts is not None:
                _trainer_status(raw, ts)
    except _Invalid as err:
        raise INVALID_PAYLOAD from err
    return ts


def apply_status(ts: Json) -> Json:
    """server.go toApplyConfig: the ``status`` of the apply patch. Progress and remaining
    seconds when set, every metric (name and value, "" included), lastUpdatedTime always
    (null when unset: the CRD's rule then refuses it)."""
    out: Json = {}
    for key in ("progressPercentage", "estimatedRemainingSeconds"):
        if ts.get(key) is not None:
            out[key] = ts[key]
    if ts.get("metrics"):
        out["metrics"] = [{"name": m["name"], "value": m["value"]} for m in ts["metrics"]]
    out["lastUpdatedTime"] = ts.get("lastUpdatedTime")
    return {"trainerStatus": out}


def apply_body(namespace: str, name: str, ts: Json) -> Json:
    """The server-side apply patch upstream sends to ``trainjobs/<name>/status``."""
    return {
        "kind": "TrainJob",
        "apiVersion": GROUP_VERSION,
        "metadata": {"name": name, "namespace": namespace},
        "status": apply_status(ts),
    }


def echo(ts: Json | None) -> Json:
    """The 200 answer: the parsed request encoded back (``json.NewEncoder(w).Encode``)."""
    if ts is None:
        return {}
    out: Json = {}
    for key in ("progressPercentage", "estimatedRemainingSeconds"):
        if ts.get(key) is not None:
            out[key] = ts[key]
    if ts.get("metrics"):
        out["metrics"] = [
            {k: v for k, v in (("name", m["name"]), ("value", m["value"])) if v}
            for m in ts["metrics"]
        ]
    out["lastUpdatedTime"] = ts.get("lastUpdatedTime")
    return {"trainerStatus": out}
