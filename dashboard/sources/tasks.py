"""Celery envelopes for cluster sources: the beat tick, one poll, retention.

``dashboard.poll_cluster_sources`` runs often (``SOURCES_BEAT_SECONDS``); it only
finds the due sources and sends one ``dashboard.poll_cluster_source`` each.  The
due check and the claim are in the database (a conditional UPDATE with a lease),
so overlapping ticks, redelivered messages or two beats never poll one source
twice at once; a poll that finds its source not due does nothing.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from dashboard.sources import retention, services

TRANSIENT_ERRORS = (OperationalError, InterfaceError, BrokerError)


@shared_task(
    name="dashboard.poll_cluster_sources",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    max_retries=3,
    time_limit=120,
    ignore_result=True,
)
def poll_cluster_sources() -> None:
    """Send a poll for every enabled source that is due."""
    for source_id in services.due_source_ids():
        poll_cluster_source.delay(source_id)


@shared_task(
    name="dashboard.poll_cluster_source",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    max_retries=3,
    time_limit=900,
    ignore_result=True,
)
def poll_cluster_source(source_id: int, force: bool = False) -> None:
    """Poll one source if it is due (or *force*, a manual "poll now")."""
    services.poll_source(source_id, force=force)


@shared_task(
    name="dashboard.prune_snapshots",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    max_retries=3,
    time_limit=1800,
    ignore_result=True,
)
def prune_snapshots() -> None:
    """Thin old polled snapshots (see ``dashboard.sources.retention``)."""
    retention.prune_snapshots()
