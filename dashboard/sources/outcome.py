"""The end of a poll, written on its source: healthy or failing, and the alerts.

:func:`record_success` marks a source healthy (last success, last snapshot) with a
recovery note when its failure had been alerted; :func:`record_failure` records a
failed poll (failing since, last error, the token scrubbed) and raises one alert
once the source has been failing for longer than its ``alert_after``.  Both write
only while the poll still holds its lease.  :class:`PollOutcome` is what a poll
(or a stream cycle, :mod:`dashboard.sources.follow`) answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db import transaction

from dashboard import models as dm
from dashboard import services as platform
from dashboard.display import format_datetime
from dashboard.sources.faults import poll_finished
from dashboard.sources.models import ClusterSource
from dashboard.sources.partitions import source_partition

logger = logging.getLogger(__name__)

ALERT_SOURCE_FAILING = "source_failing"
ALERT_SOURCE_RECOVERED = "source_recovered"

PollStatus = Literal["not_due", "stored", "unchanged", "failed", "lost_lease"]


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What one poll did: ``stored`` a new snapshot, found it ``unchanged``, ``failed``..."""

    source_id: int
    status: PollStatus
    snapshot_id: int | None = None
    error: str = ""


def scrub_token(text: str, token: str) -> str:
    """*text* with the source's *token* replaced by ``***`` (errors never carry it)."""
    # len, not truth: an undecryptable token is true but has no text to hide
    return text.replace(token, "***") if len(token) else text


def record_success(source: ClusterSource, snapshot_id: int, *, stored: bool, now: datetime) -> None:
    """Mark a locked source healthy; a recovery note when its failure had been alerted."""
    was_alerted = source.alerted_at is not None
    failing_since = source.failing_since
    source.status = ClusterSource.Status.HEALTHY
    source.failing_since = None
    source.consecutive_failures = 0
    source.last_success_at = now
    source.last_snapshot_id = snapshot_id
    source.alerted_at = None
    source.lease_until = None
    source.last_error = ""
    source.last_error_at = None
    fields = [
        "status",
        "failing_since",
        "last_error",
        "last_error_at",
        "consecutive_failures",
        "last_success_at",
        "last_snapshot",
        "alerted_at",
        "lease_until",
        "updated_at",
    ]
    if stored:
        source.last_changed_at = now
        fields.append("last_changed_at")
    fields += poll_finished(source, now)
    source.save(update_fields=fields)
    if was_alerted:
        since = format_datetime(failing_since) if failing_since else "earlier"
        platform.raise_alert(
            ALERT_SOURCE_RECOVERED,
            f"cluster source {source.name} is healthy again (failing since {since})",
            level=dm.Alert.Level.INFO,
            partition=source_partition(source),
            now=now,
        )


def record_failure(source_id: int, lease: datetime, error: str, *, now: datetime) -> PollOutcome:
    """Record a failed poll (failing since, last error); alert once past ``alert_after``.

    The error text never carries the token: it is scrubbed here as well as in the
    client.  Earlier snapshots are not touched.
    """
    with transaction.atomic():
        source = ClusterSource.objects.select_for_update().filter(pk=source_id).first()
        if source is None or source.lease_until != lease:
            return PollOutcome(source_id, "lost_lease")
        message = scrub_token(error, source.token)[:4000]
        source.status = ClusterSource.Status.FAILING
        source.failing_since = source.failing_since or now
        source.last_error = message
        source.last_error_at = now
        source.consecutive_failures += 1
        source.lease_until = None
        failing_for = (now - source.failing_since).total_seconds()
        should_alert = source.alerted_at is None and failing_for >= source.alert_after
        if should_alert:
            source.alerted_at = now
        source.save(
            update_fields=[
                "status",
                "failing_since",
                "last_error",
                "last_error_at",
                "consecutive_failures",
                "lease_until",
                "alerted_at",
                "updated_at",
                *poll_finished(source, now),
            ]
        )
        if should_alert:
            platform.raise_alert(
                ALERT_SOURCE_FAILING,
                f"cluster source {source.name} (cluster {source.cluster.name}, partition "
                f"{source.partition}) has been failing "
                f"since {format_datetime(source.failing_since)} "
                f"({source.consecutive_failures} failed polls, "
                f"alert after {source.alert_after}s): {message}",
                level=dm.Alert.Level.ERROR,
                partition=source_partition(source),
                now=now,
            )
    logger.warning("cluster source %s: poll failed: %s", source.name, message)
    return PollOutcome(source_id, "failed", error=message)
