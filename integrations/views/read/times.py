"""Kubernetes timestamps: RFC 3339 in UTC, as the API server reads and writes them. Pure.

``metav1.Time`` is second-resolution (``2026-01-02T03:04:05Z``); ``metav1.MicroTime`` (Lease
``renewTime``, events) keeps microseconds.
"""

from __future__ import annotations

from datetime import datetime


def parse_time(value: str) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it, or None for an empty value."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(now: datetime) -> str:
    """``metav1.Time``: whole seconds, ``Z``."""
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(now: datetime) -> str:
    """``metav1.MicroTime``: microseconds, ``Z``."""
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
