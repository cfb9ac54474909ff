"""A core/v1 Event about a TrainJob, as a request (the controller's ``reportingComponent``
``trainweave-controller``). Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from trainweave.integrations.views.read.bodies import Meta
from trainweave.integrations.views.read.times import format_time
from trainweave.integrations.views.requests import api
from trainweave.labels import EventReason, EventType

Json = dict[str, Any]
COMPONENT = "trainweave-controller"


def event(
    obj: Json, kind: EventType, reason: EventReason | str, message: str, now: datetime
) -> api.Request:
    """A core/v1 Event about ``obj`` (``reason``: an EventReason or a condition's reason)."""
    meta = Meta.of(obj)
    stamp = format_time(now)
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.name}.", "namespace": meta.namespace},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"),
            "kind": obj.get("kind"),
            "name": meta.name,
            "namespace": meta.namespace,
            "uid": meta.uid or None,  # null when absent
        },
        "type": kind,
        "reason": reason,
        "message": message[:1000],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": COMPONENT,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
    return api.create(api.EVENT, meta.namespace, body)
