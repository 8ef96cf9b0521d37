"""Celery envelopes around services: ids in, nothing returned (the rows are the result).

Every task is safe to redeliver: ``acks_late`` keeps the message until the task
finished, ``reject_on_worker_lost`` puts it back when the worker dies, and the
services claim rows by conditional updates, so a second delivery finds the run
done (or leased by a live worker) and does nothing.  Only named transient errors
(broker or database connection) are retried.
"""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError

from dashboard import services

TRANSIENT_ERRORS = (OperationalError, InterfaceError, BrokerError)


@shared_task(
    name="dashboard.execute_run",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    max_retries=5,
    time_limit=600,
)
def execute_run(run_id: int) -> None:
    """Evaluate one stored preemption run (what-if preempt / quota, round, enforcement)."""
    services.execute_run(run_id)


@shared_task(
    name="dashboard.sweep_quota_changes",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    max_retries=3,
    time_limit=300,
    ignore_result=True,
)
def sweep_quota_changes() -> None:
    """Fire due quota changes (deadlines are in the database) and recover stale runs."""
    services.sweep_due_changes()
