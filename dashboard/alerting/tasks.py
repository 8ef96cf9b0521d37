"""Celery envelopes of alert delivery: one delivery (with its retries), and the sweep.

Imported by every process that sets Django up (the tasks are registered), so the
delivery code is imported when a task runs, not at start (see :mod:`dashboard.tasks`).
"""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.envelope import TRANSIENT_ERRORS, envelope


@shared_task(
    name="dashboard.deliver_alert",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT_ERRORS,
    retry_backoff=True,
    max_retries=None,  # the delivery row counts the tries (ALERT_DELIVERY_MAX_ATTEMPTS)
    time_limit=300,
    ignore_result=True,
)
def deliver_alert(self: Task[[int], None], delivery_id: int) -> None:
    """Send one alert delivery; after a failure a later try may cure, send it again
    when its backoff is over (the row says when)."""
    from dashboard.alerting import delivery

    outcome = delivery.deliver(delivery_id)
    # eager (tests, CELERY_TASK_ALWAYS_EAGER): a retry would run at once, before it is due
    if outcome.retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=outcome.retry_in)


@envelope("dashboard.sweep_alert_deliveries", time_limit=120)
def sweep_alert_deliveries() -> None:
    """Fail deliveries whose sender was lost mid-send; re-send lost pending ones; send
    the digests that are due."""
    from dashboard.alerting import delivery

    delivery.expire_stale()
    delivery.resend_pending()
    delivery.send_digests()
