"""Polling cluster sources: claim when due, fetch, fingerprint, store on change, keep state.

The only module of this app that writes source state.  A poll:

1. claims the source by one conditional UPDATE (enabled, due, lease free), which
   also sets the next due time, so two beats or workers never poll one source at
   once (a worker that dies leaves a lease that expires);
2. fetches the scheduler's REST answers (:mod:`dashboard.sources.client`) outside
   any transaction;
3. parses them with the importers' ``parse_snapshot`` exactly as an upload of
   the same files is parsed, and fingerprints the state (scenario + asks,
   without the capture time);
4. when the fingerprint differs from the source's last stored one (or another
   snapshot became the partition's newest meanwhile), stores a snapshot through
   the platform's :func:`dashboard.services.import_snapshot` - so the rows are
   those of an upload - and links it to the source, all in one transaction that
   first checks the poll still holds its lease; the scheduler's events and its
   config in force (``/ws/v1/config``, :mod:`dashboard.sources.configpoll`) are
   read too, and a failure of either is a note on the source, never a failed poll;
5. records the outcome: healthy (last success, last snapshot), or failing (since
   when, last error); one alert when a source has been failing for longer than
   its ``alert_after``, one recovery note when it is healthy again.

A failed poll writes no snapshot, so earlier snapshots stay as they were.
Time comes in as ``now`` (tests pass their own clock; tasks use the wall clock).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from dashboard import models as dm
from dashboard import services as platform
from dashboard.display import format_datetime
from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import SnapshotImport, parse_snapshot
from dashboard.metrics.polls import record_poll
from dashboard.services.restarts import note_scheduler_instance
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import (
    FetchError,
    FetchPolicy,
    FetchResult,
    fetch_snapshot_files,
)
from dashboard.sources.completed import check_completed
from dashboard.sources.configpoll import (
    ConfigFetcher,
    ConfigRead,
    default_config_fetcher,
    read_config,
    store_polled_config,
)
from dashboard.sources.eventsread import (
    EventsFetcher,
    EventsRead,
    default_events_fetcher,
    read_events,
    store_events,
)
from dashboard.sources.faults import is_stale, note_events, note_warnings, poll_finished
from dashboard.sources.health import PathFetcher, check_health, default_path_fetcher
from dashboard.sources.models import ClusterSource, SourceSnapshot
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken
from dashboard.sources.ugm import check_usage

logger = logging.getLogger(__name__)

__all__ = ["EventsFetcher", "EventsRead", "default_events_fetcher", "read_events"]

ALERT_SOURCE_FAILING = "source_failing"
ALERT_SOURCE_RECOVERED = "source_recovered"

Fetcher = Callable[[ClusterSource], FetchResult]
PollStatus = Literal["not_due", "stored", "unchanged", "failed", "lost_lease"]


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def fetch_policy() -> FetchPolicy:
    """Timeout, retries and backoff from the ``SOURCES_HTTP_*`` settings."""
    return FetchPolicy(
        timeout=float(_setting("SOURCES_HTTP_TIMEOUT", 10.0)),
        retries=int(_setting("SOURCES_HTTP_RETRIES", 2)),
        backoff=float(_setting("SOURCES_HTTP_BACKOFF", 0.5)),
        backoff_max=float(_setting("SOURCES_HTTP_BACKOFF_MAX", 8.0)),
        max_bytes=answer_limit(),
    )


def answer_limit() -> int:
    """The largest answer read from a scheduler, per endpoint (``SOURCES_MAX_ANSWER_BYTES``)."""
    return int(_setting("SOURCES_MAX_ANSWER_BYTES", 64 * 1024 * 1024))


def lease_seconds() -> float:
    """How long a claimed poll may take before another worker may take the source over."""
    policy = fetch_policy()
    per_endpoint = policy.timeout * (policy.retries + 1) + sum(
        policy.delay(i) for i in range(policy.retries)
    )
    floor = float(_setting("SOURCES_POLL_LEASE_SECONDS", 120.0))
    return max(floor, 4 * per_endpoint + 60.0)


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """What one poll did: ``stored`` a new snapshot, found it ``unchanged``, ``failed``..."""

    source_id: int
    status: PollStatus
    snapshot_id: int | None = None
    error: str = ""


# -- fingerprint ----------------------------------------------------------------------


def state_fingerprint(parsed: SnapshotImport) -> str:
    """SHA-256 of the cluster state a parsed snapshot holds, independent of capture time.

    Covers the partition, the scenario (queues with their limits and settings, nodes,
    allocations, partition flags) and the pending asks.  The scenario's ``now`` and
    ``captured_at`` (the state dump's timestamp) are left out, and nodes, allocations
    and asks are sorted by their keys, because the scheduler lists them in Go map order.
    """
    scenario = {k: v for k, v in parsed.scenario.items() if k not in ("now", "captured_at")}
    nodes = scenario.get("nodes")
    if isinstance(nodes, list):
        scenario["nodes"] = sorted(nodes, key=lambda n: str(n.get("id", "")))
    allocations = scenario.get("allocations")
    if isinstance(allocations, list):
        scenario["allocations"] = sorted(allocations, key=lambda a: str(a.get("key", "")))
    doc = {
        "partition": parsed.partition,
        "scenario": scenario,
        "asks": sorted(parsed.asks, key=lambda a: str(a.get("key", ""))),
    }
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


# -- claiming ---------------------------------------------------------------------------


def _due(now: datetime) -> Q:
    return Q(next_poll_at__isnull=True) | Q(next_poll_at__lte=now)


def _lease_free(now: datetime) -> Q:
    return Q(lease_until__isnull=True) | Q(lease_until__lt=now)


def due_source_ids(now: datetime | None = None) -> list[int]:
    """Enabled sources whose next poll is due and that no live poll holds."""
    now = now or platform.utcnow()
    return list(
        ClusterSource.objects.filter(enabled=True)
        .filter(_due(now))
        .filter(_lease_free(now))
        .order_by("next_poll_at", "id")
        .values_list("pk", flat=True)
    )


def claim_poll(source_id: int, now: datetime, *, force: bool = False) -> datetime | None:
    """Claim one source for a poll; returns the lease (the claim's token) or ``None``.

    One conditional UPDATE: the source must be enabled and due (unless *force*, a
    manual "poll now") and not leased by a live poll.  It sets the lease and the
    next due time together, so whoever loses the race updates no row.
    """
    lease = now + timedelta(seconds=lease_seconds())
    qs = ClusterSource.objects.filter(pk=source_id).filter(_lease_free(now))
    if not force:
        qs = qs.filter(enabled=True).filter(_due(now))
    source = ClusterSource.objects.filter(pk=source_id).only("poll_interval").first()
    if source is None:
        return None
    taken = qs.update(
        lease_until=lease,
        last_poll_at=now,
        next_poll_at=now + timedelta(seconds=source.poll_interval),
    )
    return lease if taken else None


# -- polling ----------------------------------------------------------------------------


def default_fetcher(
    sleep: Callable[[float], None] = time.sleep,
) -> Fetcher:
    """Fetch over HTTP with the configured policy (tests pass their own *sleep*)."""

    def fetch(source: ClusterSource) -> FetchResult:
        if isinstance(source.token, UndecryptableToken):
            raise FetchError("token", UNDECRYPTABLE_MESSAGE)
        return fetch_snapshot_files(
            source.base_url,
            source.partition,
            token=source.token,
            use_state_dump=source.use_state_dump,
            verify_tls=source.verify_tls,
            policy=fetch_policy(),
            sleep=sleep,
            addresses=policy_from_settings(),
        )

    return fetch


def _note_restart(
    source: ClusterSource, read: EventsRead | None, snapshot_id: int | None, now: datetime
) -> None:
    """A new scheduler instance in the batch: stored; at a restart the timers are re-armed
    (after the snapshot and the config in force of this poll are stored)."""
    partition = source_partition(source) if read is not None and read.batch else None
    if partition is None or read is None or read.batch is None:
        return
    snapshot = dm.ClusterSnapshot.objects.filter(pk=snapshot_id).first() if snapshot_id else None
    note_scheduler_instance(partition, read.batch, now=now, snapshot=snapshot)


def _scrub(text: str, token: str) -> str:
    # len, not truth: an undecryptable token is true but has no text to hide
    return text.replace(token, "***") if len(token) else text


def poll_source(
    source_id: int,
    *,
    now: datetime | None = None,
    force: bool = False,
    fetch: Fetcher | None = None,
    events: EventsFetcher | None = None,
    config: ConfigFetcher | None = None,
    health: PathFetcher | None = None,
) -> PollOutcome:
    """Poll one source if it is due (or *force*); see the module docstring for the steps.

    *events* reads the scheduler's events (default: over HTTP, with *fetch*'s source);
    the scheduler's preemptions read are stored as observed runs with the snapshot.
    *config* reads its config in force (:mod:`dashboard.sources.configpoll`), *health*
    its healthcheck and build (:mod:`dashboard.sources.health`) after the poll (default:
    over HTTP when *fetch* is too; not read when only *fetch* is given).
    """
    now = now or platform.utcnow()
    lease = claim_poll(source_id, now, force=force)
    if lease is None:
        return PollOutcome(source_id, "not_due")
    source = ClusterSource.objects.get(pk=source_id)
    started = time.monotonic()
    failed = True
    try:
        outcome = _poll_claimed(
            source,
            lease,
            fetch or default_fetcher(),
            events or default_events_fetcher(),
            now,
            config or default_config_fetcher(),
        )
        failed = outcome.status == "failed"
    except Exception as exc:
        # a bug or an unexpected answer must still show on the source, not only in a
        # worker log; the task then fails loudly as well
        # the exception's text may quote the scheduler's answer: only its type is shown
        record_failure(
            source_id,
            lease,
            f"internal error: {type(exc).__name__} (details in the worker log)",
            now=now,
        )
        raise
    finally:
        # counted for /metrics (dashboard.metrics): polls, failures, seconds
        record_poll(source_id, time.monotonic() - started, failed=failed)
    if health is None and fetch is None:  # read over HTTP like the rest of the poll
        health = default_path_fetcher(fetch_policy())
    if health is not None and not failed:  # a failed poll told it already
        check_health(source_id, health, now=now)
        check_usage(source_id, health, now=now)
        check_completed(source_id, health, now=now)
    return outcome


def _poll_claimed(
    source: ClusterSource,
    lease: datetime,
    fetch: Fetcher,
    events: EventsFetcher,
    now: datetime,
    config: ConfigFetcher | None = None,
) -> PollOutcome:
    source_id = source.pk
    if source.follow_stream:
        from dashboard.sources.follow import follow_stream  # it builds on this module

        claimed = time.monotonic()
        followed = follow_stream(source, lease, events, now)
        if followed is not None:
            return followed
        # the snapshot is the state when its answers were fetched, not when the cycle
        # began: the cycle read the stream for up to a window first
        now = now + timedelta(seconds=time.monotonic() - claimed)
    try:
        fetched = fetch(source)
    except FetchError as exc:
        return record_failure(source_id, lease, f"fetch {exc}", now=now)
    try:
        # each answer is bounded by SOURCES_MAX_ANSWER_BYTES as it is read
        parsed = parse_snapshot(fetched.files, max_bytes=answer_limit() * len(fetched.files))
    except ImportFailure as exc:
        logger.warning("cluster source %s: answer refused by the importer: %s", source.name, exc)
        return record_failure(source_id, lease, _refusal(exc.location), now=now)
    if parsed.partition != source.partition:
        return record_failure(
            source_id,
            lease,
            f"the scheduler's answer is for another partition than {source.partition!r} "
            "(a state dump with several partitions is read as its 'default' one)",
            now=now,
        )
    allocations = {str(a.get("key")): a for a in parsed.scenario.get("allocations") or []}
    read = read_events(source, events, allocations)
    if read.batch is not None:
        # the batch goes into the import as an uploaded folder's events do: the first
        # poll times the timers the batch explains (QUEUE_MAX events), not by the poll
        parsed = replace(parsed, observed=read.batch)
    config_read = read_config(source, config) if config is not None else None
    return _store_if_changed(source, lease, fetched.files, parsed, now, read, config_read)


def _store_if_changed(
    source: ClusterSource,
    lease: datetime,
    files: Mapping[str, bytes],
    parsed: SnapshotImport,
    now: datetime,
    read: EventsRead | None = None,
    config_read: ConfigRead | None = None,
) -> PollOutcome:
    fingerprint = state_fingerprint(parsed)
    try:
        with transaction.atomic():
            locked = ClusterSource.objects.select_for_update().filter(pk=source.pk).first()
            if locked is None or locked.lease_until != lease:
                return PollOutcome(source.pk, "lost_lease")
            last = (
                SourceSnapshot.objects.filter(source=locked).order_by("-fetched_at", "-id").first()
            )
            partition = source_partition(locked)
            newest = platform.latest_snapshot(partition) if partition is not None else None
            unchanged = (
                last is not None
                and last.fingerprint == fingerprint
                and newest is not None
                and newest.pk == last.snapshot_id
            )
            if unchanged:
                assert last is not None
                if read is not None:
                    store_events(locked, read, last.snapshot_id)
                    note_events(locked, read, now)
                store_polled_config(locked, config_read, now)
                _note_restart(locked, read, last.snapshot_id, now)
                _record_success(locked, last.snapshot_id, stored=False, now=now)
                return PollOutcome(source.pk, "unchanged", last.snapshot_id)
            # The platform's import: the very rows an upload of these files gets.  An
            # import refusal raises out of this block, which also rolls back the
            # platform's import_failed alert: the source's own failure state and
            # alert (below) report it, once, instead of one alert per poll.
            row = platform.import_snapshot(
                dict(files),
                partition=locked.partition,
                cluster=locked.cluster.name,
                now=now,
                parsed=parsed,
                max_bytes=(answer_limit(), "SOURCES_MAX_ANSWER_BYTES"),
                # a source warns once per warning until it changes (note_warnings), not
                # once per snapshot
                alert_warnings=False,
            )
            SourceSnapshot.objects.create(
                source=locked, snapshot=row, fingerprint=fingerprint, fetched_at=now
            )
            note_warnings(locked, "snapshot", list(row.warnings or []), now)
            if read is not None:
                store_events(locked, read, row.pk, recorded=parsed.observed is read.batch)
                note_events(locked, read, now)
            store_polled_config(locked, config_read, now)
            _note_restart(locked, read, row.pk, now)
            _record_success(locked, row.pk, stored=True, now=now)
            return PollOutcome(source.pk, "stored", row.pk)
    except platform.ServiceError as exc:
        logger.warning("cluster source %s: answer refused by the import: %s", source.name, exc)
        if exc.field == "cluster":  # the message quotes the answer's clusterId: logged only
            return record_failure(
                source.pk,
                lease,
                f"import refused: the scheduler's clusterId is not the one cluster "
                f"{source.cluster.name} holds the state of; is the base URL that cluster's "
                "scheduler? (the importer's message is in the worker log)",
                now=now,
            )
        return record_failure(source.pk, lease, _refusal(exc.field), now=now)


def _refusal(location: str) -> str:
    """A refused answer, named by the endpoint's file only: the importer's own message
    quotes the answer (keys, names), which is the target's content and is only logged."""
    first = location.split(":", 1)[0].strip()
    where = first if first.endswith(".json") else "the answer"
    return (
        f"import refused: {where} is not a YuniKorn answer the dashboard can store "
        "(the importer's message is in the worker log)"
    )


def _record_success(
    source: ClusterSource, snapshot_id: int, *, stored: bool, now: datetime
) -> None:
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
        message = _scrub(error, source.token)[:4000]
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


def poll_due_sources(
    now: datetime | None = None,
    *,
    fetch: Fetcher | None = None,
    events: EventsFetcher | None = None,
    config: ConfigFetcher | None = None,
) -> list[PollOutcome]:
    """Poll every due source in this process (the management command; tests)."""
    now = now or platform.utcnow()
    return [
        poll_source(pk, now=now, fetch=fetch, events=events, config=config)
        for pk in due_source_ids(now)
    ]


# -- writes from the API / admin --------------------------------------------------------

RESET_POLL_FIELDS = frozenset(
    {"base_url", "partition", "token", "use_state_dump", "verify_tls", "poll_interval", "enabled"}
)


def source_saved(source: ClusterSource, changed: set[str]) -> None:
    """After an edit of the connection or interval: poll again at the next beat tick."""
    if changed & RESET_POLL_FIELDS:
        ClusterSource.objects.filter(pk=source.pk).update(next_poll_at=None)


def sources_for_partition(partition: dm.Partition | str) -> list[ClusterSource]:
    """The sources of *partition* (a name: of that partition in any cluster)."""
    if isinstance(partition, str):
        return list(ClusterSource.objects.filter(partition=partition))
    return list(
        ClusterSource.objects.filter(cluster_id=partition.cluster_id, partition=partition.name)
    )


def source_partition(source: ClusterSource) -> dm.Partition | None:
    """The stored partition a source's snapshots go to (None before its first snapshot)."""
    return dm.Partition.objects.filter(cluster_id=source.cluster_id, name=source.partition).first()


def source_state(source: ClusterSource, now: datetime | None = None) -> dict[str, object]:
    """A source's state for pages and the API (never the token)."""
    now = now or platform.utcnow()
    failing_for = (
        (now - source.failing_since).total_seconds() if source.failing_since is not None else None
    )
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
    }
