"""Counting cluster-source polls in the database (for ``/metrics``): every poll that
claimed its source adds one poll, its seconds, and one failure when it failed."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from dashboard.metrics.models import SourcePollStats


def record_poll(source_id: int, seconds: float, *, failed: bool) -> None:
    """Add one poll of *seconds* (a failure when *failed*) to the source's totals."""
    changes = {
        "polls": F("polls") + 1,
        "failures": F("failures") + (1 if failed else 0),
        "seconds_total": F("seconds_total") + seconds,
        "last_seconds": seconds,
    }
    if SourcePollStats.objects.filter(source_id=source_id).update(**changes):
        return
    try:
        with transaction.atomic():
            SourcePollStats.objects.create(
                source_id=source_id,
                polls=1,
                failures=1 if failed else 0,
                seconds_total=seconds,
                last_seconds=seconds,
            )
    except IntegrityError:  # another process made the row first: add to it
        SourcePollStats.objects.filter(source_id=source_id).update(**changes)
