"""Celery envelopes for cluster sources: the beat tick, one poll, retention.

``dashboard.poll_cluster_sources`` runs often (``SOURCES_BEAT_SECONDS``); it only
finds the due sources and sends one ``dashboard.poll_cluster_source`` each.  The
due check and the claim are in the database (a conditional UPDATE with a lease),
so overlapping ticks, redelivered messages or two beats never poll one source
twice at once; a poll that finds its source not due does nothing.  With
``SOURCES_POLL_QUEUE`` set, both go to that queue (a worker of their own), so a slow
scheduler never delays what-ifs or the quota sweep; each source's polls go to the queue
of one live poller (:mod:`dashboard.sources.affinity`).

Imported by every process that sets Django up (the tasks are registered), so the
polling code is imported when a task runs, not at start (see :mod:`dashboard.tasks`).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings

from dashboard.envelope import envelope


@envelope("dashboard.poll_cluster_sources", time_limit=120)
def poll_cluster_sources() -> None:
    """Send a poll for every enabled source that is due, once (the source is marked as
    sent, ``services.mark_sent``) to the queue of its poller (``affinity.owner``), after
    releasing the sources of dead pollers; alert the stale ones."""
    from dashboard import services as platform
    from dashboard.sources import affinity, faults, services

    now = platform.utcnow()
    pollers = affinity.live_pollers(now)
    affinity.release_orphans(pollers, now)
    for source_id in services.due_source_ids(now):
        poller = affinity.owner(source_id, pollers)
        mark = services.mark_sent(source_id, now, to=poller.name if poller else "")
        if mark is None:
            continue
        if poller is None:  # the poll queue, which every poller consumes
            poll_cluster_source.delay(source_id, sent=mark.isoformat())
        else:
            poll_cluster_source.apply_async(
                (source_id,), {"sent": mark.isoformat()}, queue=poller.queue
            )
    faults.alert_stale()


@envelope("dashboard.poll_cluster_source", time_limit=900)
def poll_cluster_source(source_id: int, force: bool = False, sent: str | None = None) -> None:
    """Poll one source if it is due or holds the mark *sent* of this message (or *force*,
    a manual "poll now"), every request of it within ``SOURCES_POLL_DEADLINE_SECONDS``
    (a trickling scheduler holds no worker)."""
    from dashboard.sources import services
    from dashboard.sources.deadline import poll_deadline

    with poll_deadline(settings.SOURCES_POLL_DEADLINE_SECONDS):
        services.poll_source(
            source_id, force=force, sent=datetime.fromisoformat(sent) if sent else None
        )


@envelope("dashboard.prune_snapshots", time_limit=1800)
def prune_snapshots() -> None:
    """Thin old polled snapshots (see ``dashboard.sources.retention``)."""
    from dashboard.sources import retention

    retention.prune_snapshots()
