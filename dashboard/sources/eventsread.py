"""Reading a source's scheduler events (``/ws/v1/events/batch``): one code path for a
full poll and for a cycle that follows the stream.

Both read from the source's ``events_next`` with the quota victims a previous read
left waiting for their summary (``events_waiting``), again from ``LowestID`` when the
scheduler restarted or the position left its ring buffer, and both keep what the
read leaves waiting: a victim whose summary comes in a later cycle is stored then,
whichever mode read it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.events import EventsImport, Victim, parse_events
from dashboard.sources.addresses import policy_from_settings
from dashboard.sources.client import FetchError, fetch_events
from dashboard.sources.models import ClusterSource
from dashboard.sources.policy import fetch_policy
from dashboard.sources.secrets import UNDECRYPTABLE_MESSAGE, UndecryptableToken

logger = logging.getLogger(__name__)

EventsFetcher = Callable[[ClusterSource, int], bytes]
"""Reads one ``/ws/v1/events/batch?start=N`` answer of a source (N the second argument)."""


def default_events_fetcher(
    sleep: Callable[[float], None] = time.sleep,
) -> EventsFetcher:
    """Read the scheduler's events over HTTP with the configured policy."""

    def fetch(source: ClusterSource, start: int) -> bytes:
        if isinstance(source.token, UndecryptableToken):
            raise FetchError("token", UNDECRYPTABLE_MESSAGE)
        return fetch_events(
            source.base_url,
            start,
            token=source.token,
            verify_tls=source.verify_tls,
            policy=fetch_policy(),
            sleep=sleep,
            addresses=policy_from_settings(),
        )

    return fetch


@dataclass(frozen=True)
class EventsRead:
    """What one poll read of the scheduler's events: a batch, or why none.

    ``failed`` tells a read that got no batch (the endpoint failed or was refused)
    from one that only lost events: the first counts toward the events alert.
    """

    batch: EventsImport | None
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.batch is None and bool(self.note)


def read_events(
    source: ClusterSource,
    fetch: EventsFetcher,
    allocations: Mapping[str, Mapping[str, Any]] | None = None,
) -> EventsRead:
    """Read the scheduler's events since the source's last one.

    Starts at the source's next event id (0 for a new source); when the scheduler
    restarted (another ``InstanceUUID``) or the id has left its event buffer, reads
    again from its ``LowestID``. Quota victims whose summary is not read yet are
    carried over from the previous read. Victims are named from *allocations* (key ->
    the snapshot's allocation) where given. A failure is a note, never a failed poll.
    """
    by_key = dict(allocations or {})
    start = start_was = source.events_next or 0
    carry = _carried(source.events_waiting)
    try:
        body = fetch(source, start)
        batch = parse_events(body, start=start, allocations=by_key, carry=carry)
        restarted = bool(source.events_instance) and batch.instance_uuid != source.events_instance
        if restarted:
            carry = []  # the old instance's victims will never get their summary
        # events the source had not read yet left the buffer before this poll
        lost = (
            source.events_next is not None
            and not restarted
            and not batch.records
            and start < batch.lowest_id
        )
        if (restarted and start != batch.lowest_id) or (
            not batch.records and start < batch.lowest_id
        ):
            start = batch.lowest_id
            body = fetch(source, start)
        if restarted or start != batch.start:
            batch = parse_events(body, start=start, allocations=by_key, carry=carry)
    except FetchError as exc:
        return EventsRead(None, f"events fetch {exc}")
    except ImportFailure as exc:
        # the importer's message quotes the answer (the target's content): logged only
        logger.warning("cluster source %s: events refused by the importer: %s", source.name, exc)
        return EventsRead(
            None,
            "events refused: /ws/v1/events/batch is not an events batch the dashboard can "
            "read (the importer's message is in the worker log)",
        )
    for w in batch.warnings:
        logger.info("cluster source %s: events: %s", source.name, w)
    return EventsRead(
        batch,
        f"events {start_was} to {batch.lowest_id - 1} left the scheduler's event buffer "
        "before they were read"
        if lost
        else "",
    )


def _carried(stored: object) -> list[Victim]:
    """The quota victims a previous read left waiting for their summary."""
    if not isinstance(stored, list):
        return []
    out = []
    for v in stored:
        try:
            out.append(Victim(**v))
        except TypeError:  # stored by another version: dropped, never a failed poll
            continue
    return out


def keep_position(source: ClusterSource, batch: EventsImport) -> list[str]:
    """Set the (locked) source's events position from *batch*; the fields to save."""
    source.events_instance = batch.instance_uuid[:100]
    source.events_next = batch.next_start
    source.events_waiting = [v.to_dict() for v in batch.waiting]
    return ["events_instance", "events_next", "events_waiting"]


def store_events(
    source: ClusterSource,
    read: EventsRead,
    snapshot_id: int | None,
    *,
    recorded: bool = False,
) -> None:
    """Store a read batch's preemptions as observed runs; keep the position (locked source).

    *recorded*: the snapshot's import stored the batch already (a poll hands its batch
    to the import, as an uploaded folder's events are).
    """
    fields = ["last_events_error"]
    source.last_events_error = read.note[:4000]
    batch = read.batch
    if batch is not None:
        partition = dm.Partition.objects.filter(
            cluster_id=source.cluster_id, name=source.partition
        ).first()
        if partition is not None:
            if not recorded:
                snapshot = (
                    dm.ClusterSnapshot.objects.filter(pk=snapshot_id).first()
                    if snapshot_id
                    else None
                )
                platform.record_observed(partition, batch, snapshot=snapshot)
            fields += keep_position(source, batch)
    source.save(update_fields=fields)
