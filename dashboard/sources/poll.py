"""Polling cluster sources: claim when due, fetch, fingerprint, store on change.

A poll:

1. claims the source by one conditional UPDATE (enabled, due, lease free), which
   also sets the next due time, so two beats or workers never poll one source at
   once (a worker that dies leaves a lease that expires);
2. fetches the scheduler's REST answers (:mod:`dashboard.sources.client`) outside
   any transaction;
3. parses them as an upload of the same files is parsed (``parse_polled``: with
   what this process read at the source's last poll, so only the node objects that
   changed are read again, and of a node whose figures alone changed not its
   allocations, :mod:`dashboard.importers.snapshot.memo`), and
   fingerprints the state (scenario + asks, without the capture time);
4. when the fingerprint differs from the source's last stored one (or another
   snapshot became the partition's newest meanwhile), stores a snapshot through
   the platform's :func:`dashboard.services.import_snapshot` - so the rows are
   those of an upload - and links it to the source, all in one transaction that
   first checks the poll still holds its lease; the scheduler's events and its
   config in force (``/ws/v1/config``, :mod:`dashboard.sources.configpoll`) are
   read too, and a failure of either is a note on the source, never a failed poll;
5. records the outcome (:mod:`dashboard.sources.outcome`): healthy (last success,
   last snapshot), or failing (since when, last error); one alert when a source has
   been failing for longer than its ``alert_after``, one recovery note when it is
   healthy again.

A failed poll writes no snapshot, so earlier snapshots stay as they were.
Time comes in as ``now`` (tests pass their own clock; tasks use the wall clock).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timedelta

import msgspec
from django.conf import settings
from django.db import transaction
from django.db.models import Q

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.snapshot import PollMemo, SnapshotImport, parse_polled
from dashboard.metrics.polls import record_poll
from dashboard.services.quota.restarts import note_scheduler_instance
from dashboard.services.snapshots.checksum import AllocationTexts
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError, FetchResult, fetch_snapshot_files
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
from dashboard.sources.faults import note_events, note_warnings
from dashboard.sources.follow import follow_stream
from dashboard.sources.health import PathFetcher, check_health, default_path_fetcher
from dashboard.sources.models import ClusterSource, SourceSnapshot
from dashboard.sources.outcome import PollOutcome, record_failure, record_success
from dashboard.sources.partitions import source_partition
from dashboard.sources.policy import answer_limit, fetch_policy, lease_seconds
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken
from dashboard.sources.ugm import check_usage

logger = logging.getLogger(__name__)

Fetcher = Callable[[ClusterSource], FetchResult]


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
    # msgspec's sorted JSON: json.dumps(sort_keys=True)'s bytes for these values, written
    # five times faster (non-ASCII text is written as UTF-8 instead of escaped)
    return hashlib.sha256(msgspec.json.encode(doc, order="sorted")).hexdigest()


# -- what the last poll read -----------------------------------------------------------

#: How many sources' last reads a process keeps (a worker follows a few clusters).
MEMO_SOURCES = 32
#: How many allocations those reads may hold together (about 1.2 KB each: the parse's
#: dict and engine object, the checksum's text); the sources polled longest ago are
#: forgotten first, the one polled now never.
MEMO_ALLOCATIONS = 400_000

_memos: OrderedDict[int, tuple[PollMemo, AllocationTexts]] = OrderedDict()


def _kept(source_id: int) -> tuple[PollMemo, AllocationTexts]:
    """What this process last read of the source: the parse's memo (a parse reads only
    the node objects that changed since; see :mod:`dashboard.importers.snapshot.memo`)
    and the allocation texts of the store's checksum."""
    kept = _memos.pop(source_id, None) or (PollMemo(), AllocationTexts())
    _memos[source_id] = kept
    held = sum(len(texts.known) for _, texts in _memos.values())
    while len(_memos) > 1 and (len(_memos) > MEMO_SOURCES or held > MEMO_ALLOCATIONS):
        _, (_memo, texts) = _memos.popitem(last=False)
        held -= len(texts.known)
    return kept


def _memo_of(source_id: int) -> PollMemo:
    return _kept(source_id)[0]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused for one poll.

    A poll of a big cluster makes hundreds of thousands of short-lived containers
    (the parse, the checksum's lists, the rows written) beside the hundreds of thousands
    the memo keeps; none of them is in a reference cycle, and the collector, triggered
    again and again by that many, walked the memo's objects each time for nothing (a
    fifth of a 1 % poll's time, in the checksum's steps that allocate the most).
    Reference counting frees them all the same.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


def mark_sent(source_id: int, now: datetime, to: str = "") -> datetime | None:
    """Note that a poll of a due source is sent to the workers; returns the mark the poll
    message carries (``sent``), or ``None`` when the source is not due any more.

    One conditional UPDATE moves the source's next due time a lease ahead: the beat's
    next ticks do not send it again while its message waits in the broker's queue
    behind other polls (each such copy would cost a task that finds nothing to do and
    lengthen the queue every source waits in), and the poll claims it by the mark
    (:func:`claim_poll`). A message lost on the way is sent again once that time has
    passed (or at once when the poller *to* it went to dies,
    :mod:`dashboard.sources.affinity`).
    """
    mark = now + timedelta(seconds=lease_seconds())
    taken = (
        ClusterSource.objects.filter(pk=source_id, enabled=True)
        .filter(_due(now))
        .filter(_lease_free(now))
        .update(next_poll_at=mark, sent_to=to)
    )
    return mark if taken else None


def claim_poll(
    source_id: int, now: datetime, *, force: bool = False, sent: datetime | None = None
) -> datetime | None:
    """Claim one source for a poll; returns the lease (the claim's token) or ``None``.

    One conditional UPDATE: the source must be enabled and due, or hold the mark *sent*
    of the message that asks for this poll (:func:`mark_sent`), unless *force* (a
    manual "poll now"), and not leased by a live poll.  It sets the lease and the
    next due time together, so whoever loses the race updates no row.
    """
    lease = now + timedelta(seconds=lease_seconds())
    qs = ClusterSource.objects.filter(pk=source_id).filter(_lease_free(now))
    if not force:
        due = _due(now) | Q(next_poll_at=sent) if sent is not None else _due(now)
        qs = qs.filter(enabled=True).filter(due)
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


def poll_source(
    source_id: int,
    *,
    now: datetime | None = None,
    force: bool = False,
    fetch: Fetcher | None = None,
    events: EventsFetcher | None = None,
    config: ConfigFetcher | None = None,
    health: PathFetcher | None = None,
    sent: datetime | None = None,
) -> PollOutcome:
    """Poll one source if it is due (or *force*); see the module docstring for the steps.

    *events* reads the scheduler's events (default: over HTTP, with *fetch*'s source);
    the scheduler's preemptions read are stored as observed runs with the snapshot.
    *config* reads its config in force (:mod:`dashboard.sources.configpoll`), *health*
    its healthcheck and build (:mod:`dashboard.sources.health`) after the poll (default:
    over HTTP when *fetch* is too; not read when only *fetch* is given). *sent* is the
    mark of the beat's message (:func:`mark_sent`).
    """
    now = now or platform.utcnow()
    lease = claim_poll(source_id, now, force=force, sent=sent)
    if lease is None:
        return PollOutcome(source_id, "not_due")
    source = ClusterSource.objects.get(pk=source_id)
    started = time.monotonic()
    failed = True
    try:
        with _collector_paused():
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
        parsed = parse_polled(
            fetched.files, _memo_of(source_id), max_bytes=answer_limit() * len(fetched.files)
        )
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
                record_success(locked, last.snapshot_id, stored=False, now=now)
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
                allocation_texts=_kept(source.pk)[1],
                warm_up=warm_up_stored(locked),
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
            record_success(locked, row.pk, stored=True, now=now)
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


def warm_up_stored(source: ClusterSource) -> bool:
    """Whether the workers warm a snapshot this source's poll stores: only when the source
    polls every ``SOURCES_WARM_UP_MIN_INTERVAL`` seconds or less often. A source polled
    more often replaces its snapshot before anyone is likely to ask (followed every 10 s,
    the warm-ups took a third of a poller pool, docs/benchmarks/fleet.md); the what-if page
    has the workers warm the snapshot it shows (``dashboard.pages.warm``)."""
    return source.poll_interval >= float(getattr(settings, "SOURCES_WARM_UP_MIN_INTERVAL", 60.0))


def _refusal(location: str) -> str:
    """A refused answer, named by the endpoint's file only: the importer's own message
    quotes the answer (keys, names), which is the target's content and is only logged."""
    first = location.split(":", 1)[0].strip()
    where = first if first.endswith(".json") else "the answer"
    return (
        f"import refused: {where} is not a YuniKorn answer the dashboard can store "
        "(the importer's message is in the worker log)"
    )


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
