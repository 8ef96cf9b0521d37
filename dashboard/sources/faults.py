"""A source's faults made visible: overdue polls, a failing events batch, warnings once.

- **Stale.** A source whose last finished poll (a success or a failure) is older than
  two poll intervals is *stale*: its worker died, a poll hangs on its lease, or the
  beat stopped. Pages and the API show it at once (:func:`is_stale`, read from the
  row, so no worker is needed); the beat tick (:func:`alert_stale`) raises one
  ``source_failing`` alert when it has been stale for ``alert_after`` seconds and a
  recovery note when a poll finishes again.
- **Events or completed applications failing.** A poll whose ``/ws/v1/events/batch``
  read, or whose read of the completed applications, failed still stores its snapshot
  (the read is a note); a source whose read has failed for ``alert_after`` seconds
  alerts as a failing poll does, once, with a recovery note (:func:`note_read`).
- **Warnings once.** The importer's warnings of a polled snapshot or config are raised
  once per source and cause (``snapshot``, ``config``) while they stay the same, not
  once per snapshot or config version; they are always kept on the snapshot or version.

What was alerted lives in ``ClusterSource.faults`` (a JSON object).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from dashboard import models as dm
from dashboard import services as platform
from dashboard.display import format_datetime
from dashboard.sources.models import ClusterSource

if TYPE_CHECKING:
    from dashboard.sources.eventsread import EventsRead

ALERT_SOURCE_FAILING = "source_failing"
ALERT_SOURCE_RECOVERED = "source_recovered"
STALE_INTERVALS = 2
"""A source is stale when no poll finished for this many poll intervals."""


def _partition(source: ClusterSource) -> dm.Partition | None:
    return dm.Partition.objects.filter(cluster_id=source.cluster_id, name=source.partition).first()


def _faults(source: ClusterSource) -> dict[str, Any]:
    return dict(source.faults) if isinstance(source.faults, dict) else {}


def last_finished(source: ClusterSource) -> datetime | None:
    """When the source's last poll finished (successfully or not)."""
    times = [t for t in (source.last_success_at, source.last_error_at) if t is not None]
    return max(times) if times else None


def stale_since(source: ClusterSource, now: datetime) -> datetime | None:
    """Since when the enabled *source* is stale (no poll finished for two intervals)."""
    if not source.enabled:
        return None
    base = last_finished(source) or source.created_at
    if base is None:
        return None
    since = base + timedelta(seconds=STALE_INTERVALS * source.poll_interval)
    return since if since <= now else None


def is_stale(source: ClusterSource, now: datetime) -> bool:
    return stale_since(source, now) is not None


def alert_stale(now: datetime | None = None) -> list[int]:
    """Alert once for every source stale for ``alert_after`` seconds (the beat tick)."""
    now = now or platform.utcnow()
    alerted: list[int] = []
    for source in ClusterSource.objects.filter(enabled=True).select_related("cluster"):
        since = stale_since(source, now)
        faults = _faults(source)
        if since is None or faults.get("stale_alerted"):
            continue
        if (now - since).total_seconds() < source.alert_after:
            continue
        finished = last_finished(source)
        held = source.lease_until is not None and source.lease_until > now
        # only the first alert of a stale streak; a concurrent tick may race: the update
        # below only succeeds for the one that still sees the old faults
        faults["stale_alerted"] = now.isoformat()
        updated = ClusterSource.objects.filter(pk=source.pk, faults=source.faults).update(
            faults=faults
        )
        if not updated:
            continue
        platform.raise_alert(
            ALERT_SOURCE_FAILING,
            f"cluster source {source.name} (cluster {source.cluster.name}, partition "
            f"{source.partition}) is stale: no poll finished since "
            f"{format_datetime(finished) if finished else 'it was added'} (poll interval "
            f"{source.poll_interval}s{'; a poll holds its lease' if held else ''}); is a "
            "worker and the beat running?",
            level=dm.Alert.Level.ERROR,
            partition=_partition(source),
            now=now,
        )
        alerted.append(source.pk)
    return alerted


def poll_finished(source: ClusterSource, now: datetime) -> list[str]:
    """A poll of the (locked) *source* finished: end a stale streak; the fields to save."""
    faults = _faults(source)
    if not faults.pop("stale_alerted", None):
        return []
    source.faults = faults
    platform.raise_alert(
        ALERT_SOURCE_RECOVERED,
        f"cluster source {source.name} is polled again (it was stale)",
        level=dm.Alert.Level.INFO,
        partition=_partition(source),
        now=now,
    )
    return ["faults"]


@dataclass(frozen=True, slots=True)
class ExtraRead:
    """A read a poll makes beside its snapshot, whose failure the poll survives."""

    key: str  # its entries in ``ClusterSource.faults``: KEY_failing_since, KEY_alerted, ...
    what: str  # "the scheduler's events (/ws/v1/events/batch)"
    again: str  # "the scheduler's events", in "... are read again"
    meanwhile: str  # what is missed while it fails
    #: the failure kept in the faults (KEY_error) while it lasts; False where the source
    #: has a field of its own for it (the events: ``last_events_error``)
    error_in_faults: bool = True


EVENTS_READ = ExtraRead(
    "events",
    "the scheduler's events (/ws/v1/events/batch)",
    "the scheduler's events",
    "preemptions and QUEUE_MAX events are not read meanwhile",
    error_in_faults=False,
)
COMPLETED_READ = ExtraRead(
    "completed",
    "the completed applications (/ws/v1/partition/{partition}/applications/completed)",
    "the completed applications",
    "applications that finish and leave the scheduler's list meanwhile are missing from "
    "the work lost to preemption",
)


def read_failure(source: ClusterSource, read: ExtraRead) -> tuple[str, datetime | None]:
    """The failure of *read* kept in the source's faults, and since when it has failed:
    ``("", None)`` while it succeeds (or where the source keeps its error elsewhere)."""
    faults = _faults(source)
    since = faults.get(f"{read.key}_failing_since")
    return (
        str(faults.get(f"{read.key}_error", "")),
        datetime.fromisoformat(since) if since else None,
    )


def note_read(source: ClusterSource, read: ExtraRead, failure: str | None, now: datetime) -> None:
    """Count a failed *read* (its *failure*, None when it succeeded) toward the source's
    alert for it: raised once when it has failed for ``alert_after`` seconds, with a
    recovery note when it succeeds again. The failure is kept in the source's faults
    (``KEY_error``) while it lasts, unless the source keeps it in a field of its own."""
    faults = _faults(source)
    failing_key, alerted_key, error_key = (
        f"{read.key}_failing_since",
        f"{read.key}_alerted",
        f"{read.key}_error",
    )
    if failure is not None:
        since = faults.get(failing_key) or now.isoformat()
        faults[failing_key] = since
        if read.error_in_faults:
            faults[error_key] = failure[:1000]
        failing_for = (now - datetime.fromisoformat(since)).total_seconds()
        if not faults.get(alerted_key) and failing_for >= source.alert_after:
            faults[alerted_key] = now.isoformat()
            what = read.what.replace("{partition}", source.partition)
            platform.raise_alert(
                ALERT_SOURCE_FAILING,
                f"cluster source {source.name} (cluster {source.cluster.name}, partition "
                f"{source.partition}): {what} have "
                f"failed since {format_datetime(datetime.fromisoformat(since))} (alert after "
                f"{source.alert_after}s): {failure}; {read.meanwhile}",
                level=dm.Alert.Level.ERROR,
                partition=_partition(source),
                now=now,
            )
    else:
        faults.pop(failing_key, None)
        faults.pop(error_key, None)
        if faults.pop(alerted_key, None):
            platform.raise_alert(
                ALERT_SOURCE_RECOVERED,
                f"cluster source {source.name}: {read.again} are read again",
                level=dm.Alert.Level.INFO,
                partition=_partition(source),
                now=now,
            )
    if faults != source.faults:
        source.faults = faults
        source.save(update_fields=["faults"])


def note_events(source: ClusterSource, read: EventsRead, now: datetime) -> None:
    """Count a failed events read toward the source's events alert (locked source)."""
    note_read(source, EVENTS_READ, read.note if read.failed else None, now)


def note_warnings(
    source: ClusterSource, cause: str, warnings: Sequence[str], now: datetime
) -> None:
    """Raise the importer's *warnings* of one *cause* once per source until they change
    (locked source); no warnings end the streak silently."""
    faults = _faults(source)
    warned = dict(faults.get("warned") or {})
    digest = (
        hashlib.sha256("\n".join(sorted(warnings)).encode()).hexdigest()[:32] if warnings else ""
    )
    if warned.get(cause, "") == digest:
        return
    if digest:
        warned[cause] = digest
        partition = _partition(source)
        for w in sorted(set(warnings)):
            platform.raise_alert(
                dm.Alert.Kind.IMPORT_WARNING,
                f"cluster source {source.name}, {cause}: {w} (raised once until the "
                "warnings change)",
                partition=partition,
                now=now,
            )
    else:
        warned.pop(cause, None)
    faults["warned"] = warned
    source.faults = faults
    source.save(update_fields=["faults"])
