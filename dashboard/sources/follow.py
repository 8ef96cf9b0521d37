"""Following the scheduler's event stream between full polls.

A source with ``follow_stream`` on does not fetch the whole state every cycle. A
cycle (one claimed poll, see :mod:`dashboard.sources.poll`):

1. makes a full poll when one is owed: the source's first poll, no events position
   yet, or ``reconcile_interval`` seconds since the last full poll (the reconcile
   poll catches whatever the stream could not say);
2. otherwise reads ``/ws/v1/events/stream`` (:mod:`dashboard.sources.stream`) for up
   to the poll interval, and stops early at the first event that changes the
   cluster (an event with a change type: an allocation, ask, application, node or
   queue added, removed or set);
3. then reads ``/ws/v1/events/batch`` from the source's events position: the stream
   only shows what happened while it was open, and its records carry no ids, so the
   batch closes the gap between two streams and is the one reader that stores the
   scheduler's preemptions (by instance and event id, once each);
4. polls in full when the stream or the batch saw a change, a preemption, another
   scheduler instance, or events lost from the ring buffer; otherwise the cycle
   ends with the snapshot unchanged, having read two small answers.

A scheduler without a stream (404), with event tracking off, or refusing another
stream (503) is polled in full, and the cycle says so. What each cycle did is kept
in ``last_cycle`` ("stream: 0 events, no poll needed", "stream: 3 events -> polled",
"reconcile poll", ...).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.events import EventsImport, parse_events
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError
from dashboard.sources.eventsread import EventsFetcher, keep_position, read_events
from dashboard.sources.models import ClusterSource
from dashboard.sources.outcome import PollOutcome, record_success, scrub_token
from dashboard.sources.partitions import source_partition
from dashboard.sources.policy import fetch_policy, lease_seconds
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken
from dashboard.sources.stream import StreamRead, StreamUnavailable, read_stream

logger = logging.getLogger(__name__)

StreamReader = Callable[[ClusterSource, float, Callable[[dict[str, Any]], bool]], StreamRead]
"""Reads a source's event stream for a window (seconds), stopping when asked."""


def changes_state(record: dict[str, Any]) -> bool:
    """Whether a stream record says the cluster changed (it has a change type).

    Records without one (``eventChangeType`` omitted or 0) only inform, such as the
    scheduler's repeated "request does not fit in queue" for a pending ask.
    """
    value = record.get("eventChangeType", 0)
    return value not in (0, None)


def stream_window(source: ClusterSource) -> float:
    """Seconds a cycle reads the stream: the poll interval, capped by
    ``SOURCES_STREAM_WINDOW_SECONDS`` and by a third of the poll's lease."""
    cap = getattr(settings, "SOURCES_STREAM_WINDOW_SECONDS", None)
    window = float(source.poll_interval)
    if cap is not None:
        window = min(window, float(cap))
    return max(min(window, lease_seconds() / 3), 0.05)


def default_stream_reader() -> StreamReader:
    """Read the stream over HTTP with the source's token and the address policy."""

    def read(
        source: ClusterSource, window: float, stop: Callable[[dict[str, Any]], bool]
    ) -> StreamRead:
        if isinstance(source.token, UndecryptableToken):
            raise FetchError("token", UNDECRYPTABLE_MESSAGE)
        return read_stream(
            source.base_url,
            window=window,
            token=source.token,
            verify_tls=source.verify_tls,
            policy=fetch_policy(),
            stop=stop,
            addresses=policy_from_settings(),
        )

    return read


def full_poll_reason(source: ClusterSource, now: datetime) -> str:
    """Why this cycle must poll in full without reading the stream ("" when it need not)."""
    if source.last_snapshot_id is None or source.last_full_poll_at is None:
        return "first poll"
    if source.events_next is None or not source.events_instance:
        return "no events position yet: polled"
    if now - source.last_full_poll_at >= timedelta(seconds=source.reconcile_interval):
        return "reconcile poll"
    partition = source_partition(source)
    newest = platform.latest_snapshot(partition) if partition is not None else None
    if newest is None or newest.pk != source.last_snapshot_id:
        return "another snapshot is the partition's newest: polled"
    return ""


def follow_stream(
    source: ClusterSource,
    lease: datetime,
    events: EventsFetcher,
    now: datetime,
    reader: StreamReader | None = None,
) -> PollOutcome | None:
    """One cycle of a source following the stream; ``None`` when it must poll in full.

    Before answering ``None`` it records why (``last_cycle``) and when
    (``last_full_poll_at``), so the full poll that follows is counted as one.
    """
    reason = full_poll_reason(source, now)
    if reason:
        return _poll(source, lease, reason, now)
    read = reader or default_stream_reader()
    started = time.monotonic()
    try:
        seen = read(source, stream_window(source), changes_state)
    except StreamUnavailable as exc:
        return _poll(source, lease, f"no stream ({exc.message}): polled", now)
    except FetchError as exc:
        text = scrub_token(str(exc), source.token)
        return _poll(source, lease, f"stream failed ({text}): polled", now)
    took = time.monotonic() - started
    try:
        parsed = parse_events(
            {"InstanceUUID": seen.instance_uuid, "EventRecords": seen.records},
            start=0,
            filename="events_stream",
        )
    except ImportFailure as exc:
        logger.warning("cluster source %s: stream refused by the importer: %s", source.name, exc)
        return _poll(source, lease, "stream not understood (see the worker log): polled", now)
    counted = f"stream: {_events(len(parsed.records))}"
    if seen.closed_by_scheduler:
        counted += " (the scheduler closed the stream)"
    elif seen.ended == "cut":
        counted += " (the stream was cut)"
    if seen.instance_uuid and seen.instance_uuid != source.events_instance:
        return _poll(source, lease, f"{counted}, another scheduler instance -> polled", now)
    changes = sum(1 for r in parsed.records if r.change_type)
    if changes:
        return _poll(source, lease, f"{counted} ({changes} changes) -> polled", now)
    # the batch is read as a full poll reads it (one code path): from the source's
    # position, with the quota victims a previous read left waiting for their summary
    events_read = read_events(source, events)
    batch = events_read.batch
    if batch is None:
        note = events_read.note
        logger.info("cluster source %s: events batch after the stream: %s", source.name, note)
        return _poll(source, lease, f"{counted}, events batch not read -> polled", now)
    gap = _batch_change(source, batch)
    if gap:
        return _poll(source, lease, f"{counted}, {gap} -> polled", now)
    note = f"{counted} in {took:.1f} s, no poll needed"
    return _unchanged(source, lease, batch, note, now)


def _events(n: int) -> str:
    return f"{n} event" if n == 1 else f"{n} events"


def _batch_change(source: ClusterSource, batch: EventsImport) -> str:
    """What in the events batch since the last position needs a full poll ("" if nothing)."""
    if batch.instance_uuid != source.events_instance:
        return "another scheduler instance"
    if not batch.records and batch.start < batch.lowest_id:
        return "events lost from the scheduler's buffer"
    changes = sum(1 for r in batch.records if r.change_type)
    if changes:
        return f"{_events(len(batch.records))} since the last read ({changes} changes)"
    if batch.preemptions or batch.quota_preemptions or batch.releases or batch.queue_max_changes:
        return "preemptions in the events batch"
    if len(batch.waiting) != len(source.events_waiting or []):
        # quota victims whose summary is not read yet: the full poll keeps them, named
        # from its snapshot, as polling mode does
        return "quota victims waiting for their summary"
    return ""


def _poll(source: ClusterSource, lease: datetime, note: str, now: datetime) -> PollOutcome | None:
    """Record why this cycle polls in full; ``None`` tells the caller to poll."""
    ClusterSource.objects.filter(pk=source.pk, lease_until=lease).update(
        last_cycle=note[:500], last_full_poll_at=now
    )
    return None


def _unchanged(
    source: ClusterSource, lease: datetime, batch: EventsImport, note: str, now: datetime
) -> PollOutcome:
    """End a cycle with nothing to store: keep the events position, mark the source healthy."""
    with transaction.atomic():
        locked = ClusterSource.objects.select_for_update().filter(pk=source.pk).first()
        if locked is None or locked.lease_until != lease or locked.last_snapshot_id is None:
            return PollOutcome(source.pk, "lost_lease")
        fields = keep_position(locked, batch)
        locked.last_events_error = ""
        locked.last_cycle = note[:500]
        locked.save(update_fields=[*fields, "last_events_error", "last_cycle"])
        snapshot_id = locked.last_snapshot_id
        record_success(locked, snapshot_id, stored=False, now=now)
    return PollOutcome(source.pk, "unchanged", snapshot_id)
