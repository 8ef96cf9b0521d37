"""Completed applications read with every HTTP poll, for the work lost to preemption.

``GET /ws/v1/partition/<p>/applications/completed`` answers the partition's completed
list (``[]*dao.ApplicationDAOInfo``) with each application's ``resourceHistory``
(:mod:`dashboard.importers.snapshot.completed`).  The applications not stored yet are
stored by :func:`dashboard.services.history.work_lost.record_completed`; an application is
stored once however many polls see it.  A failed read stores nothing: the poll itself
has succeeded, and the next poll reads the list again.  The failure is logged, shown on
the source until a read succeeds, and alerted once when it lasts ``alert_after``
seconds (:func:`dashboard.sources.faults.note_read`), since the scheduler keeps its
completed list only for a while.
"""

from __future__ import annotations

import logging
from datetime import datetime
from urllib.parse import quote

from dashboard import models as dm
from dashboard import services as platform
from dashboard.importers.errors import ImportFailure
from dashboard.importers.safejson import load_json
from dashboard.importers.snapshot.completed import read_completed
from dashboard.services.history.work_lost import record_completed
from dashboard.sources.client import FetchError
from dashboard.sources.faults import COMPLETED_READ, note_read
from dashboard.sources.health import PathFetcher
from dashboard.sources.models import ClusterSource

logger = logging.getLogger(__name__)

ANSWER = "partition_applications_completed.json"


def completed_path(partition: str) -> str:
    """The path of *partition*'s completed applications."""
    return f"/ws/v1/partition/{quote(partition, safe='')}/applications/completed"


def check_completed(
    source_id: int, fetch: PathFetcher, *, now: datetime | None = None
) -> int | None:
    """Read the source's completed applications and store the new ones.

    Returns how many were new, or None when the answer could not be read.
    """
    now = now or platform.utcnow()
    source = ClusterSource.objects.get(pk=source_id)
    partition = dm.Partition.objects.filter(
        cluster_id=source.cluster_id, name=source.partition
    ).first()
    if partition is None:  # no snapshot stored yet: nothing to attach them to
        return None
    try:
        doc = load_json(ANSWER, fetch(source, completed_path(source.partition)))
        read = read_completed([(ANSWER, doc)], source.partition)
    except (FetchError, ImportFailure) as exc:
        logger.warning("cluster source %s: completed applications not read: %s", source.name, exc)
        note_read(source, COMPLETED_READ, str(exc), now)
        return None
    note_read(source, COMPLETED_READ, None, now)
    return record_completed(partition, read, now=now)
