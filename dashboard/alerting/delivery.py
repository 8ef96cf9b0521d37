"""Routing raised alerts to their routes and delivering them, at most once per alert and route.

- :func:`queue_deliveries` (called by ``raise_alert`` for a new alert) makes one
  ``pending`` delivery row per matching route (the unique constraint on (alert, route)
  keeps it one under any race) and sends ``dashboard.deliver_alert`` for each once the
  transaction commits.
- :func:`deliver` claims the row by a conditional update (``pending`` and due ->
  ``sending``, with a lease), sends it, and only then writes the outcome, again
  conditionally on its own claim: ``sent``; back to ``pending`` with the next try's
  time (exponential backoff) after a failure a later try may cure; ``failed`` after a
  permanent failure or the last try.  A row that is ``sent`` is never sent again.
- A worker lost while sending leaves the row ``sending``: nobody knows whether the
  receiver got it, so :func:`expire_stale` marks it ``failed`` once its lease is over
  instead of sending it a second time (at most once).  Every try of one delivery
  carries the same delivery id (``X-Dashboard-Delivery``), so a receiver can drop a
  repeat after a lost answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from kombu.exceptions import OperationalError as BrokerError

from dashboard.access import scoping
from dashboard.access.grants import access_for
from dashboard.alerting import noise, payload
from dashboard.celery import app as celery_app
from dashboard.models import Alert
from dashboard.models.alerting import AlertDelivery, AlertRoute
from dashboard.plumbing.clock import utcnow

logger = logging.getLogger(__name__)

TASK = "dashboard.deliver_alert"
Status = AlertDelivery.Status


def max_attempts() -> int:
    return max(1, int(getattr(settings, "ALERT_DELIVERY_MAX_ATTEMPTS", 6)))


def backoff_seconds(attempts: int) -> float:
    """The wait after the *attempts*-th failed try: base * 2**(attempts-1), capped."""
    base = float(getattr(settings, "ALERT_DELIVERY_BACKOFF_SECONDS", 10.0))
    cap = float(getattr(settings, "ALERT_DELIVERY_BACKOFF_MAX_SECONDS", 600.0))
    return float(min(cap, base * 2 ** max(0, attempts - 1)))


def lease_seconds() -> float:
    timeout = float(getattr(settings, "ALERT_HTTP_TIMEOUT", 5.0))
    return max(60.0, 6 * timeout)


def send_on_commit(delivery_id: int) -> None:
    """Send the delivery task once the current transaction commits; a broker that
    cannot be reached is logged (the row stays pending and the resend sweep sends it)."""

    def send() -> None:
        try:
            celery_app.signature(TASK, args=(delivery_id,)).delay()
        except BrokerError as exc:
            logger.warning("alert delivery %s stored but not sent: %s", delivery_id, exc)

    transaction.on_commit(send)


def routes_for(alert: Alert) -> list[AlertRoute]:
    """The enabled routes *alert* goes over: those matching it whose owner, for a
    tenant's route, may view its queue by the queue ACLs in force now."""
    partition = alert.partition
    cluster_id = partition.cluster_id if partition is not None else None
    candidates = (
        AlertRoute.objects.filter(enabled=True)
        .filter(Q(cluster__isnull=True) | Q(cluster_id=cluster_id))
        .select_related("owner")
    )
    return [
        route
        for route in candidates
        if route.matches(alert, cluster_id) and _owner_reads(route, alert)
    ]


def _owner_reads(route: AlertRoute, alert: Alert) -> bool:
    owner = route.owner
    if owner is None:
        return True
    if not owner.is_active:
        return False
    if not scoping.is_tenant(owner):
        return True
    return bool(alert.queue) and access_for(owner, alert.partition).may_view(alert.queue)


def queue_deliveries(alert: Alert, now: datetime | None = None) -> list[int]:
    """One delivery per route matching the new *alert*: pending and sent after the
    commit, or held for the route's digest (:mod:`dashboard.alerting.noise`: the route's
    rate limit, or an earlier alert of the same cause). The ids of the pending ones."""
    now = now or utcnow()
    cause = noise.cause_of(alert)
    made: list[int] = []
    for route in routes_for(alert):
        try:
            with transaction.atomic():
                noise.lock_route(route)
                decision = noise.decide(route, alert, cause, now)
                row = AlertDelivery.objects.create(
                    alert=alert,
                    route=route,
                    created_at=now,
                    cause=cause,
                    status=decision.status,
                    note=decision.note,
                )
        except IntegrityError:
            continue  # already queued for this alert and route
        if decision.status == Status.PENDING:
            made.append(row.pk)
            send_on_commit(row.pk)
    return made


def send_digests(now: datetime | None = None) -> list[int]:
    """Fold each route's held deliveries into one digest once the oldest has waited
    ALERT_DIGEST_SECONDS, and send it; the digests' ids."""
    now = now or utcnow()
    sent: list[int] = []
    for route_id in noise.due_routes(now):
        digest = noise.fold(route_id, now)
        if digest is not None:
            sent.append(digest.pk)
            send_on_commit(digest.pk)
    return sent


def queue_test(route: AlertRoute, now: datetime | None = None) -> AlertDelivery:
    """A test delivery of *route* (a sample alert), sent by a worker like any other."""
    row = AlertDelivery.objects.create(
        alert=None, route=route, is_test=True, created_at=now or utcnow()
    )
    send_on_commit(row.pk)
    return row


def _digest_body(delivery: AlertDelivery) -> tuple[payload.AlertBody, list[payload.DigestEntry]]:
    told = noise.summary(delivery)
    route = delivery.route
    sample = payload.alert_body(
        alert_id=None,
        kind="digest",
        kind_label="Digest of held alerts",
        level=told.level,
        message=told.message,
        cluster=route.cluster.name if route.cluster is not None else None,
        partition=None,
        queue="",
        run=None,
        change=None,
        count=told.count,
        created_at=told.first,
        last_seen_at=told.last,
    )
    entries = [
        payload.digest_entry(
            alert_id=a.pk,
            kind=a.kind,
            level=a.level,
            message=a.message,
            cluster=a.partition.cluster.name if a.partition is not None else None,
            queue=a.queue,
            created_at=a.created_at,
        )
        for a in told.alerts
    ]
    return sample, entries


def body_for(delivery: AlertDelivery, now: datetime) -> payload.WebhookBody:
    route = delivery.route
    alert = delivery.alert
    if delivery.is_digest:
        sample, entries = _digest_body(delivery)
        return {
            "schema": payload.SCHEMA,
            "delivery": delivery.pk,
            "test": False,
            "route": route.name,
            "alert": sample,
            "digest": entries,
        }
    if alert is None:  # a test delivery: a sample alert naming the route's own filters
        sample = payload.alert_body(
            alert_id=None,
            kind=route.kind or Alert.Kind.ENGINE,
            kind_label=str(Alert.Kind(route.kind or Alert.Kind.ENGINE).label),
            level=route.min_level,
            message=f"Test delivery of alert route {route.name}: routing works.",
            cluster=route.cluster.name if route.cluster is not None else None,
            partition=None,
            queue="",
            run=None,
            change=None,
            count=1,
            created_at=delivery.created_at,
            last_seen_at=delivery.created_at,
        )
    else:
        partition = alert.partition
        sample = payload.alert_body(
            alert_id=alert.pk,
            kind=alert.kind,
            kind_label=alert.get_kind_display(),
            level=alert.level,
            message=alert.message,
            cluster=partition.cluster.name if partition is not None else None,
            partition=partition.name if partition is not None else None,
            queue=alert.queue,
            run=alert.run_id,
            change=alert.change_id,
            count=alert.count,
            created_at=alert.created_at,
            last_seen_at=alert.last_seen_at,
        )
    return {
        "schema": payload.SCHEMA,
        "delivery": delivery.pk,
        "test": delivery.is_test,
        "route": route.name,
        "alert": sample,
    }


@dataclass(frozen=True)
class Outcome:
    """What one call of :func:`deliver` did; ``retry_in``: send the task again after it."""

    delivery_id: int
    status: str
    retry_in: float | None = None


def _claim(delivery_id: int, now: datetime) -> datetime | None:
    lease = now + timedelta(seconds=lease_seconds())
    claimed = (
        AlertDelivery.objects.filter(pk=delivery_id, status=Status.PENDING)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .update(status=Status.SENDING, lease_until=lease, attempts=F("attempts") + 1)
    )
    return lease if claimed else None


def deliver(delivery_id: int, now: datetime | None = None) -> Outcome:
    """Claim, send and record one delivery (see the module docstring)."""
    now = now or utcnow()
    lease = _claim(delivery_id, now)
    if lease is None:
        row = AlertDelivery.objects.filter(pk=delivery_id).values("status", "next_attempt_at")
        found = row.first()
        if found is None:
            return Outcome(delivery_id, "missing")
        due = found["next_attempt_at"]
        if found["status"] == Status.PENDING and due is not None and due > now:
            return Outcome(delivery_id, Status.PENDING, (due - now).total_seconds())
        return Outcome(delivery_id, str(found["status"]))  # sent, failed, or another's
    delivery = AlertDelivery.objects.select_related(
        "route__cluster", "alert__partition__cluster"
    ).get(pk=delivery_id)
    mine = AlertDelivery.objects.filter(pk=delivery_id, status=Status.SENDING, lease_until=lease)
    # loaded by a send only: a process start never loads the HTTP client (as for sources)
    from dashboard.alerting import channels

    try:
        code = channels.send(delivery.route, body_for(delivery, now))
    except channels.SendFailed as exc:
        last = delivery.attempts >= max_attempts()
        if exc.retryable and not last:
            wait = backoff_seconds(delivery.attempts)
            mine.update(
                status=Status.PENDING,
                lease_until=None,
                next_attempt_at=now + timedelta(seconds=wait),
                last_error=f"try {delivery.attempts}: {exc.message}"[:4000],
                response_status=exc.status,
            )
            logger.info("alert delivery %s failed, next try in %ss: %s", delivery_id, wait, exc)
            return Outcome(delivery_id, Status.PENDING, wait)
        why = "no tries left" if exc.retryable else "not retried"
        mine.update(
            status=Status.FAILED,
            lease_until=None,
            last_error=f"try {delivery.attempts} ({why}): {exc.message}"[:4000],
            response_status=exc.status,
        )
        logger.warning("alert delivery %s failed for good: %s", delivery_id, exc)
        return Outcome(delivery_id, Status.FAILED)
    mine.update(status=Status.SENT, lease_until=None, sent_at=utcnow(), response_status=code)
    return Outcome(delivery_id, Status.SENT)


def expire_stale(now: datetime | None = None) -> int:
    """Mark deliveries whose sender vanished mid-send failed (never sent twice)."""
    now = now or utcnow()
    return AlertDelivery.objects.filter(status=Status.SENDING, lease_until__lt=now).update(
        status=Status.FAILED,
        lease_until=None,
        last_error="the worker sending it was lost; whether the receiver got it is unknown, "
        "so it is not sent again",
    )


def resend_pending(now: datetime | None = None, *, grace: float = 300.0) -> int:
    """Send the task again for pending deliveries overdue by *grace* seconds (a message
    lost with the broker); the claim keeps a duplicate message harmless."""
    now = now or utcnow()
    overdue = AlertDelivery.objects.filter(status=Status.PENDING).filter(
        Q(next_attempt_at__lt=now - timedelta(seconds=grace))
        | Q(next_attempt_at__isnull=True, created_at__lt=now - timedelta(seconds=grace))
    )
    ids = list(overdue.values_list("pk", flat=True)[:1000])
    for pk in ids:
        send_on_commit(pk)
    return len(ids)
