"""A scheduler restart recognised by a poll from ``/ws/v1/clusters`` ``startTime``.

Every poll (and every full poll of a source following the stream) reads
``/ws/v1/clusters`` for the scheduler's health card (:mod:`dashboard.sources.health`).
Its ``startTime`` is the scheduler instance's start: the best clock for a restart.
The events batch of the same poll has already been read by then, and a new
``InstanceUUID`` there was noted with its first event's time (the fallback, when no
start time is served); the start time then corrects that instance's start and, at
a restart, the timers are re-armed from it
(:func:`dashboard.services.quota.restarts.note_start_time`). A start time no stored
instance has is a restart on its own (the events batch may be failing), whose
``InstanceUUID`` a later batch names.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from dashboard import models as dm
from dashboard.services.quota.restarts import note_start_time
from dashboard.sources.models import ClusterSource


def note_served_start(
    source: ClusterSource, start_time: datetime | None, *, now: datetime
) -> dm.SchedulerStart | None:
    """Feed the ``startTime`` one poll read to restart detection (None: nothing new)."""
    if start_time is None:
        return None
    partition = dm.Partition.objects.filter(
        cluster_id=source.cluster_id, name=source.partition
    ).first()
    if partition is None:  # never polled successfully: nothing to re-arm or to compare
        return None
    with transaction.atomic():
        dm.Partition.objects.select_for_update().filter(pk=partition.pk).first()
        snapshot = (
            dm.ClusterSnapshot.objects.filter(pk=source.last_snapshot_id).defer("scenario").first()
            if source.last_snapshot_id
            else None
        )
        return note_start_time(
            partition,
            start_time,
            now=now,
            instance=source.events_instance or "",
            snapshot=snapshot,
        )
