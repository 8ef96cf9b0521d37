"""The sources app's entry points for its API, admin, tasks, commands and pages.

A source's state for people (:func:`source_state`), what an edit of its
connection resets (:func:`source_saved`), and, re-exported under their usual
names, the poll (:mod:`dashboard.sources.poll`: claim, fetch, fingerprint,
store on change), its outcome on the source and its alerts
(:mod:`dashboard.sources.outcome`), its limits from the settings
(:mod:`dashboard.sources.policy`) and a source's partition
(:mod:`dashboard.sources.partitions`).  The modules of the poll never import
this one: imports point one way (a ``layers`` contract in ``pyproject.toml``).
"""

from __future__ import annotations

from datetime import datetime

from dashboard import services as platform
from dashboard.sources.eventsread import (
    EventsFetcher,
    EventsRead,
    default_events_fetcher,
    read_events,
)
from dashboard.sources.faults import COMPLETED_READ, is_stale, read_failure
from dashboard.sources.models import ClusterSource
from dashboard.sources.outcome import (
    ALERT_SOURCE_FAILING,
    ALERT_SOURCE_RECOVERED,
    PollOutcome,
    PollStatus,
    record_failure,
    record_success,
)
from dashboard.sources.partitions import source_partition, sources_for_partition
from dashboard.sources.policy import answer_limit, fetch_policy, lease_seconds
from dashboard.sources.poll import (
    Fetcher,
    claim_poll,
    default_fetcher,
    due_source_ids,
    mark_sent,
    poll_due_sources,
    poll_source,
    state_fingerprint,
)

__all__ = [
    "ALERT_SOURCE_FAILING",
    "ALERT_SOURCE_RECOVERED",
    "RESET_POLL_FIELDS",
    "EventsFetcher",
    "EventsRead",
    "Fetcher",
    "PollOutcome",
    "PollStatus",
    "answer_limit",
    "claim_poll",
    "default_events_fetcher",
    "default_fetcher",
    "due_source_ids",
    "fetch_policy",
    "lease_seconds",
    "mark_sent",
    "poll_due_sources",
    "poll_source",
    "read_events",
    "record_failure",
    "record_success",
    "source_partition",
    "source_saved",
    "source_state",
    "sources_for_partition",
    "state_fingerprint",
]

RESET_POLL_FIELDS = frozenset(
    {"base_url", "partition", "token", "use_state_dump", "verify_tls", "poll_interval", "enabled"}
)


def source_saved(source: ClusterSource, changed: set[str]) -> None:
    """After an edit of the connection or interval: poll again at the next beat tick."""
    if changed & RESET_POLL_FIELDS:
        ClusterSource.objects.filter(pk=source.pk).update(next_poll_at=None)


def source_state(source: ClusterSource, now: datetime | None = None) -> dict[str, object]:
    """A source's state for the pages (never the token)."""
    now = now or platform.utcnow()
    failing_for = (
        (now - source.failing_since).total_seconds() if source.failing_since is not None else None
    )
    completed_error, completed_failing_since = read_failure(source, COMPLETED_READ)
    return {
        "id": source.pk,
        "name": source.name,
        "cluster": source.cluster.name,
        "partition": source.partition,
        "enabled": source.enabled,
        # stale: no poll finished for two intervals (a dead worker, a held lease)
        "status": "stale" if is_stale(source, now) else source.status,
        "stale": is_stale(source, now),
        "healthy": source.status == ClusterSource.Status.HEALTHY and not is_stale(source, now),
        "failing_since": source.failing_since,
        "failing_for_seconds": failing_for,
        "alerted": source.alerted_at is not None,
        "last_error": source.last_error,
        "last_error_at": source.last_error_at,
        "last_success_at": source.last_success_at,
        "last_poll_at": source.last_poll_at,
        "last_changed_at": source.last_changed_at,
        "last_snapshot_id": source.last_snapshot_id,
        "next_poll_at": source.next_poll_at,
        "poll_interval": source.poll_interval,
        "token": source.token_state,
        "events_next": source.events_next,
        "last_events_error": source.last_events_error,
        "follow_stream": source.follow_stream,
        "reconcile_interval": source.reconcile_interval,
        "last_full_poll_at": source.last_full_poll_at,
        "last_cycle": source.last_cycle,
        "config_checksum": source.config_checksum,
        "config_seen_at": source.config_seen_at,
        "last_config_error": source.last_config_error,
        "scheduler_health": source.scheduler_health or {},
        "scheduler_unhealthy_since": source.scheduler_unhealthy_since,
        # the completed applications (work lost) failing to be read, while they fail
        "completed_error": completed_error,
        "completed_failing_since": completed_failing_since,
    }
