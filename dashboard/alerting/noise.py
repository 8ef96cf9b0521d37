"""Alert noise at the routes: one alert per cause, a per-route rate limit, and digests.

When a new alert matches a route (:func:`dashboard.alerting.delivery.queue_deliveries`),
:func:`decide` says whether its delivery is sent now or held:

- **One alert per cause.** Alerts about the same thing share a *cause*
  (:func:`cause_of`): one quota change (its timer, firing, observed enforcement), one
  run, one cluster source (failing, stale, its scheduler unhealthy), the refused
  uploads of one cluster. Within the route's rate window only the first alert of a
  cause is sent; later ones of that cause are held, unless they are more severe than
  every one of that cause sent already.
- **Rate limit.** A route sends at most ``rate_limit`` alerts per
  ``rate_window_seconds``; the alerts beyond it are held.
- **Digest.** :func:`send_digests` (beat's delivery sweep, every minute) folds a
  route's held deliveries into one digest delivery once the oldest has waited
  ``ALERT_DIGEST_SECONDS``; the digest names every held alert and is sent like any
  delivery (its own row, claim, retries). Nothing held is dropped.

The decision runs with the route's row locked (``SELECT ... FOR UPDATE``), so alerts
raised at once by several workers count against the limit one after another.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Min

from dashboard.models import Alert
from dashboard.models.alerting import LEVEL_RANK, AlertDelivery, AlertRoute

Status = AlertDelivery.Status
Kind = Alert.Kind

# the kinds about one cluster source and its scheduler: a trickling source is failing,
# then stale, then its health check fails: one cause (recoveries are news of their own)
SOURCE_KINDS = frozenset({Kind.SOURCE_FAILING, Kind.SCHEDULER_UNHEALTHY})
# refusals of one cluster's uploads: a client retrying or a hostile run is one cause
IMPORT_KINDS = frozenset({Kind.IMPORT_FAILED, Kind.IMPORT_WARNING})
# deliveries that count as sent (or being sent) for the limit and for a cause
SENDING = (Status.PENDING, Status.SENDING, Status.SENT, Status.FAILED)
DIGEST_ENTRIES = 100  # alerts listed in one digest's body; all are counted
TEXT_LINES = 20  # alerts written out in its message (Slack, e-mail)


def digest_seconds() -> float:
    return max(0.0, float(getattr(settings, "ALERT_DIGEST_SECONDS", 900.0)))


def cause_of(alert: Alert) -> str:
    """What *alert* is about, as a short key compared between alerts."""
    if alert.change_id is not None:
        return f"change:{alert.change_id}"
    if alert.run_id is not None:
        return f"run:{alert.run_id}"
    where = str(alert.partition_id) if alert.partition_id is not None else "-"
    if alert.kind in SOURCE_KINDS:
        if alert.partition_id is None:  # a source that never polled: its name
            # the sources' messages start "cluster source NAME ..."
            words = alert.message.split()
            where = "name:" + (words[2] if len(words) > 2 else "")
        return f"source:{where}"[:200]
    if alert.kind in IMPORT_KINDS:
        return f"{alert.kind}:{where}"
    digest = hashlib.sha256(alert.message.encode()).hexdigest()[:16]
    return f"{alert.kind}:{where}:{alert.queue[:100]}:{digest}"


@dataclass(frozen=True, slots=True)
class Decision:
    status: str  # PENDING (send now) or HELD
    note: str = ""


def decide(route: AlertRoute, alert: Alert, cause: str, now: datetime) -> Decision:
    """Send *alert* over *route* now, or hold it for the digest (see the module docstring).

    Call it inside a transaction holding the route's row lock (:func:`lock_route`).
    """
    since = now - timedelta(seconds=route.rate_window_seconds)
    recent = AlertDelivery.objects.filter(
        route=route, is_test=False, is_digest=False, created_at__gte=since, status__in=SENDING
    )
    rank = LEVEL_RANK.get(str(alert.level), 0)
    earlier = list(
        recent.filter(cause=cause).values_list("pk", "alert__level").order_by("created_at", "pk")
    )
    if earlier and rank <= max(LEVEL_RANK.get(str(level), 0) for _, level in earlier):
        return Decision(Status.HELD, f"same cause as delivery {earlier[0][0]} ({cause})")
    if route.rate_limit and recent.count() >= route.rate_limit:
        return Decision(
            Status.HELD,
            f"rate limit: {route.rate_limit} alerts per {route.rate_window_seconds} s reached",
        )
    return Decision(Status.PENDING)


def lock_route(route: AlertRoute) -> None:
    """Take *route*'s row lock for the rest of the current transaction."""
    list(AlertRoute.objects.select_for_update().filter(pk=route.pk).values_list("pk"))


def due_routes(now: datetime) -> list[int]:
    """Routes whose oldest held delivery has waited ALERT_DIGEST_SECONDS."""
    cutoff = now - timedelta(seconds=digest_seconds())
    rows = (
        AlertDelivery.objects.filter(status=Status.HELD)
        .values("route")
        .annotate(oldest=Min("created_at"))
        .filter(oldest__lte=cutoff)
        .order_by("route")
    )
    return [int(r["route"]) for r in rows]


def fold(route_id: int, now: datetime) -> AlertDelivery | None:
    """One digest delivery carrying every held delivery of the route; None if none is held
    (another sweep took them). The caller sends it once the transaction commits."""
    with transaction.atomic():
        route = AlertRoute.objects.select_for_update().get(pk=route_id)
        held = list(
            AlertDelivery.objects.select_for_update()
            .filter(route=route, status=Status.HELD)
            .values_list("pk", flat=True)
        )
        if not held:
            return None
        digest = AlertDelivery.objects.create(
            route=route, alert=None, is_digest=True, cause="digest", created_at=now
        )
        AlertDelivery.objects.filter(pk__in=held, status=Status.HELD).update(
            status=Status.DIGESTED, digest=digest
        )
        return digest


@dataclass(frozen=True, slots=True)
class DigestSummary:
    count: int
    level: str
    message: str
    first: datetime
    last: datetime
    alerts: list[Alert]


def summary(digest: AlertDelivery) -> DigestSummary:
    """What a digest says: how many alerts, of which kinds, the most severe level."""
    rows = list(
        digest.folded.select_related("alert__partition__cluster").order_by("created_at", "pk")
    )
    alerts = [r.alert for r in rows if r.alert is not None]
    kinds = Counter(str(a.get_kind_display()) for a in alerts)
    level = max((str(a.level) for a in alerts), key=lambda v: LEVEL_RANK.get(v, 0), default="info")
    parts = ", ".join(f"{label}: {n}" for label, n in sorted(kinds.items()))
    message = (
        f"{len(alerts)} alerts held for route {digest.route.name} (the rate limit, or "
        f"an earlier alert of the same cause): {parts}"
    )
    # the first few in the text too, for Slack and e-mail (a webhook gets them all listed)
    lines = [f"- [{a.level}] {a.get_kind_display()}: {a.message}" for a in alerts[:TEXT_LINES]]
    if len(alerts) > TEXT_LINES:
        lines.append(f"- and {len(alerts) - TEXT_LINES} more")
    message = "\n".join([message, *lines])
    first = rows[0].created_at if rows else digest.created_at
    last = rows[-1].created_at if rows else digest.created_at
    return DigestSummary(len(alerts), level, message, first, last, alerts[:DIGEST_ENTRIES])
