"""Alert routes (which alerts go where) and their deliveries (one row per alert and route).

A route matches alerts by cluster (or any), kind (or any) and level (this level or a
more severe one), and sends them over one channel: a signed HTTP webhook, a
Slack-compatible incoming webhook or e-mail.  A delivery row is made once per alert
and route (a unique constraint), and only the worker that claimed it by a conditional
update (``pending`` -> ``sending``) sends it; see :mod:`dashboard.alerting.delivery`.

Stored here, in the models package, so that ``dashboard.models`` and the alerting code
(:mod:`dashboard.alerting`, which reads and writes these rows) import in one direction.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, validate_email
from django.db import models
from django.db.models import Q

from dashboard.models.alerts import Alert
from dashboard.models.clusters import Cluster
from dashboard.sources.addresses import AddressRefused, check_url, policy_from_settings
from dashboard.sources.secrets import EncryptedTokenField

LEVEL_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


def validate_target_url(value: str) -> None:
    """http(s), a host, no credentials; an IP literal or port the cluster-source address
    policy refuses is refused here already (names are checked again after DNS)."""
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("the URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise ValidationError("the URL must not carry a user name or password")
    try:
        check_url(value, policy_from_settings())
    except (ValueError, AddressRefused) as exc:
        raise ValidationError(f"URL refused by the address policy: {exc}") from None


def split_addresses(value: str) -> list[str]:
    return [a.strip() for a in value.replace(";", ",").split(",") if a.strip()]


def validate_addresses(value: str) -> None:
    for address in split_addresses(value):
        try:
            validate_email(address)
        except ValidationError:
            raise ValidationError(f"{address!r} is not an e-mail address") from None


class AlertRoute(models.Model):
    """Where alerts of one cluster, kind and level (or more severe) are sent."""

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "HTTP webhook (signed JSON)"
        SLACK = "slack", "Slack-compatible incoming webhook"
        EMAIL = "email", "E-mail"

    name = models.CharField(max_length=100, unique=True)
    cluster = models.ForeignKey(
        Cluster,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_routes",
        help_text="only alerts of this cluster (empty: every cluster, and alerts of none)",
    )
    kind = models.CharField(
        max_length=30, blank=True, choices=Alert.Kind.choices, help_text="empty: every kind"
    )
    min_level = models.CharField(
        max_length=10,
        choices=Alert.Level.choices,
        default=Alert.Level.WARNING,
        help_text="alerts of this level or a more severe one",
    )
    channel = models.CharField(max_length=10, choices=Channel.choices)
    url = models.CharField(
        max_length=2000,
        blank=True,
        validators=[validate_target_url],
        help_text="webhook and Slack: the target URL (the cluster-source address policy applies)",
    )
    secret = EncryptedTokenField(
        blank=True,
        default="",
        help_text="webhook: the HMAC-SHA256 key; write-only, encrypted at rest",
    )
    email_to = models.CharField(
        max_length=2000,
        blank=True,
        validators=[validate_addresses],
        help_text="e-mail: recipients, comma-separated",
    )
    enabled = models.BooleanField(default=True)
    rate_limit = models.PositiveIntegerField(
        default=10,
        help_text="at most this many alerts sent in the rate window; the rest are held and "
        "sent later in one digest message (0: no limit)",
    )
    rate_window_seconds = models.PositiveIntegerField(
        default=3600,
        validators=[MinValueValidator(60), MaxValueValidator(7 * 86400)],
        help_text="the rate limit's window, in seconds (60 to 604800)",
    )
    queue = models.CharField(
        max_length=1000,
        blank=True,
        default="",
        help_text="only alerts of this queue and the queues below it (empty: every queue)",
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_routes",
        help_text="a tenant's route: only alerts of queues the queue ACLs let its owner "
        "view, checked at each alert (empty: a staff route)",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "dashboard"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.channel in (self.Channel.WEBHOOK, self.Channel.SLACK) and not self.url:
            raise ValidationError({"url": f"a {self.channel} route needs a URL"})
        if self.channel == self.Channel.WEBHOOK and not self.secret:
            raise ValidationError({"secret": "a webhook route needs a signing secret"})
        if self.channel == self.Channel.EMAIL and not split_addresses(self.email_to):
            raise ValidationError({"email_to": "an e-mail route needs at least one recipient"})

    def matches(self, alert: Alert, cluster_id: int | None) -> bool:
        """Whether *alert* (of the cluster *cluster_id*) goes over this route."""
        if not self.enabled:
            return False
        if self.cluster_id is not None and self.cluster_id != cluster_id:
            return False
        if self.kind and self.kind != alert.kind:
            return False
        if self.queue and not (
            alert.queue == self.queue or alert.queue.startswith(self.queue + ".")
        ):
            return False
        return LEVEL_RANK.get(str(alert.level), 0) >= LEVEL_RANK.get(str(self.min_level), 0)


class AlertDelivery(models.Model):
    """One alert sent (or to be sent) over one route; a test delivery has no alert."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        HELD = "held", "Held for the next digest"
        DIGESTED = "digested", "Folded into a digest"

    alert = models.ForeignKey(
        Alert, null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    route = models.ForeignKey(AlertRoute, on_delete=models.CASCADE, related_name="deliveries")
    is_test = models.BooleanField(default=False, help_text="sent from the route's test button")
    is_digest = models.BooleanField(
        default=False, help_text="one message carrying the alerts held for this route"
    )
    digest = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="folded",
        help_text="a held delivery: the digest that carried it",
    )
    cause = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="what the alert is about (a quota change, a run, a source, refused "
        "uploads...): one alert per cause is sent, later ones of it wait for the digest",
    )
    note = models.CharField(max_length=300, blank=True, default="", help_text="why it was held")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    response_status = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "dashboard"
        ordering = ["-created_at", "-id"]
        constraints = [
            # at most once per alert and route, whatever raced to make the row
            models.UniqueConstraint(fields=["alert", "route"], name="one_delivery_per_alert_route"),
            models.CheckConstraint(
                condition=Q(is_test=True) | Q(is_digest=True) | Q(alert__isnull=False),
                name="delivery_has_alert_unless_test_or_digest",
            ),
        ]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"]),
            models.Index(fields=["route", "created_at"]),
        ]

    def __str__(self) -> str:
        what = "test" if self.is_test else "digest" if self.is_digest else f"alert {self.alert_id}"
        return f"delivery {self.pk} ({what} -> {self.route_id}): {self.status}"
