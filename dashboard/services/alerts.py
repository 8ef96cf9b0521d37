"""The administrator alert feed: raising entries and acknowledging them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import F, Q, QuerySet, Value
from django.db.models.functions import Greatest

from dashboard import models
from dashboard.access import scoping
from dashboard.alerting import delivery as alert_delivery
from dashboard.importers.errors import ImportFailure
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ImportRejected
from dashboard.plumbing.users import stored_user

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike


def raise_alert(
    kind: str,
    message: str,
    *,
    level: str = models.Alert.Level.WARNING,
    partition: models.Partition | None = None,
    queue: str = "",
    run: models.PreemptionRun | None = None,
    change: models.QuotaChange | None = None,
    now: datetime | None = None,
) -> models.Alert:
    """Add an entry to the administrator alert feed.

    The same alert raised again while it is unread (same kind, level, message,
    partition, queue, run and change) is not added again: the unread entry's
    ``count`` goes up and its ``last_seen_at`` moves to *now* (a client retrying a
    refused upload leaves one entry, not one per try).  A new entry is queued for
    delivery over every alert route it matches (:mod:`dashboard.alerting.delivery`).
    """
    now = now or utcnow()
    same = (
        models.Alert.objects.filter(
            acknowledged_at__isnull=True,
            kind=kind,
            level=level,
            message=message,
            partition=partition,
            queue=queue,
            run=run,
            change=change,
        )
        .order_by("-id")
        .values_list("pk", flat=True)
        .first()
    )
    if same is not None:
        grouped = models.Alert.objects.filter(pk=same, acknowledged_at__isnull=True).update(
            count=F("count") + 1, last_seen_at=Greatest(F("last_seen_at"), Value(now))
        )
        if grouped:
            return models.Alert.objects.get(pk=same)
    alert = models.Alert.objects.create(
        level=level,
        kind=kind,
        message=message,
        partition=partition,
        queue=queue,
        run=run,
        change=change,
        created_at=now,
        last_seen_at=now,
    )
    # the one place alerts are made: each matching route gets one delivery, sent by a
    # worker once this transaction commits (a grouped repeat above sends nothing new)
    alert_delivery.queue_deliveries(alert, now)
    return alert


def refused_import(
    exc: ImportFailure, default_location: str, what: str, now: datetime | None
) -> ImportRejected:
    """Record a failed import in the alert feed and turn it into a service error."""
    location = exc.location or default_location
    raise_alert(
        models.Alert.Kind.IMPORT_FAILED,
        f"{what} refused: {location}: {exc.message}",
        level=models.Alert.Level.ERROR,
        now=now,
    )
    return ImportRejected(location, exc.message)


def acknowledge_alert(
    alert: models.Alert, *, user: UserLike = None, now: datetime | None = None
) -> models.Alert:
    """Mark one alert read (idempotent: the first acknowledgement is kept)."""
    models.Alert.objects.filter(pk=alert.pk, acknowledged_at__isnull=True).update(
        acknowledged_at=now or utcnow(), acknowledged_by=stored_user(user)
    )
    alert.refresh_from_db()
    return alert


def acknowledge_all_alerts(
    *, user: UserLike = None, now: datetime | None = None, cluster: str = "", kind: str = ""
) -> int:
    """Acknowledge every unread alert, or only those of *cluster* and of *kind* when given
    (the feed's filters: "Acknowledge all" on a feed narrowed to one cluster leaves the
    other clusters' alerts unread). Returns how many were acknowledged."""
    return unread_alerts(cluster=cluster, kind=kind).update(
        acknowledged_at=now or utcnow(), acknowledged_by=stored_user(user)
    )


def unread_alerts(*, cluster: str = "", kind: str = "") -> QuerySet[models.Alert]:
    """The unread alerts, of *cluster* (by name) and of *kind* when given."""
    rows = models.Alert.objects.filter(acknowledged_at__isnull=True)
    if cluster:
        rows = rows.filter(partition__cluster__name=cluster)
    if kind:
        rows = rows.filter(kind=kind)
    return rows


def unread_in_view(cluster: models.Cluster | None, user: object = None) -> int:
    """How many unread alerts concern *cluster*: its own and those of no cluster (an import
    refused before it named one); every unread alert when *cluster* is None.  With
    *user*, only those of the queues it may view (:mod:`dashboard.access.scoping`)."""
    rows = models.Alert.objects.filter(acknowledged_at__isnull=True)
    if cluster is not None:
        rows = rows.filter(Q(partition__cluster=cluster) | Q(partition__isnull=True))
    if user is not None:
        rows = scoping.filter_viewable(rows, user, "queue")
    return rows.count()
