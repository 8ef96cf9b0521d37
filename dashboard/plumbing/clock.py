"""The services' clock: the wall clock as a default, and epoch seconds <-> datetimes.

Time always comes in as an argument (``now``); callers that have none use
:func:`utcnow`, which tests replace by passing ``now`` explicitly."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone


def utcnow() -> datetime:
    """The wall clock, timezone-aware (the default clock of every service)."""
    return timezone.now()


def epoch(dt: datetime) -> float:
    return dt.timestamp()


def from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def as_datetime(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return from_epoch(float(value))
    return None
