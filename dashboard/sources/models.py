"""Cluster sources: where a live YuniKorn scheduler is read from, and how the polls went.

A :class:`ClusterSource` holds the connection (base URL, partition, optional
bearer token, poll interval) and its state (healthy / failing since / last
error / last success / last snapshot).  The token is write-only: nothing here
renders it (``__str__``, ``token_state``); the API, admin and pages show
"set" / "not set".  Polls are claimed by a conditional update on
``next_poll_at`` / ``lease_until`` so that two beats or workers never poll one
source at once.

A :class:`SourceSnapshot` links a stored :class:`dashboard.models.ClusterSnapshot`
to the source whose poll produced it, with the fingerprint of the state it holds
(scenario + asks, without capture timestamps): the next poll stores a snapshot
only when the fingerprint changes.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from dashboard.models import Cluster, ClusterSnapshot
from dashboard.sources.addresses import AddressRefused, check_url, policy_from_settings
from dashboard.sources.client import check_base_url
from dashboard.sources.secrets import EncryptedTokenField, UndecryptableToken

MIN_POLL_INTERVAL = 5
MAX_POLL_INTERVAL = 7 * 24 * 3600
MAX_ALERT_AFTER = 30 * 24 * 3600

partition_name_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$",
    "a partition name: letters, digits, '_', '.', '-' (YuniKorn's default is 'default')",
)
dns_label_validator = RegexValidator(
    r"^[a-z0-9]([a-z0-9\-]{0,61}[a-z0-9])?$",
    "a Kubernetes namespace: lower-case letters, digits and '-', at most 63 characters",
)
dns_subdomain_validator = RegexValidator(
    r"^[a-z0-9]([a-z0-9.\-]{0,251}[a-z0-9])?$",
    "a Kubernetes object name: lower-case letters, digits, '.' and '-'",
)


def validate_base_url(value: str) -> None:
    """http(s), a host, no credentials, query or fragment (see ``client.check_base_url``),
    and an address the address policy allows when the host is an IP literal, in any
    spelling, or the port is one of the dashboard's own (see ``addresses``)."""
    try:
        check_base_url(value)
        check_url(value, policy_from_settings())
    except (ValueError, AddressRefused) as exc:
        raise ValidationError(f"base URL {exc}") from None


def validate_token(value: str) -> None:
    """A bearer token is one header value: printable, no spaces or line breaks."""
    if len(value) > 8192:
        raise ValidationError("the token is longer than 8192 characters")
    if any(not c.isprintable() or c.isspace() for c in value):
        raise ValidationError(
            "the token must not contain spaces, line breaks or control characters"
        )


class ClusterSource(models.Model):
    """A running YuniKorn scheduler the dashboard follows (one per cluster and partition)."""

    class Status(models.TextChoices):
        NEW = "new", "Not polled yet"
        HEALTHY = "healthy", "Healthy"
        FAILING = "failing", "Failing"

    name = models.CharField(max_length=100, unique=True)
    base_url = models.CharField(
        max_length=500,
        validators=[validate_base_url],
        help_text="the scheduler's REST address, e.g. http://yunikorn-service.yunikorn:9080",
    )
    cluster = models.ForeignKey(
        Cluster,
        on_delete=models.CASCADE,
        related_name="sources",
        help_text="the dashboard cluster its snapshots are stored under",
    )
    partition = models.CharField(
        max_length=200,
        default="default",
        validators=[partition_name_validator],
        help_text="the YuniKorn partition to read; snapshots are stored under this "
        "partition of the source's cluster (one source per cluster and partition)",
    )
    token = EncryptedTokenField(
        blank=True,
        default="",
        validators=[validate_token],
        help_text="optional bearer token; write-only, never shown back, encrypted at rest",
    )
    use_state_dump = models.BooleanField(
        default=False,
        help_text="read /debug/fullstatedump (one request, includes the shim's "
        "allow-preemption opt-outs) instead of the partition endpoints",
    )
    verify_tls = models.BooleanField(default=True)
    poll_interval = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(MIN_POLL_INTERVAL), MaxValueValidator(MAX_POLL_INTERVAL)],
        help_text="seconds between polls",
    )
    enabled = models.BooleanField(default=True)
    follow_stream = models.BooleanField(
        default=False,
        help_text="between full polls, follow the scheduler's event stream "
        "(/ws/v1/events/stream) and poll only when it reports a change",
    )
    reconcile_interval = models.PositiveIntegerField(
        default=600,
        validators=[MinValueValidator(MIN_POLL_INTERVAL), MaxValueValidator(MAX_POLL_INTERVAL)],
        help_text="when following the stream: seconds after which a full poll is made "
        "regardless of what the stream said",
    )
    alert_after = models.PositiveIntegerField(
        default=300,
        validators=[MaxValueValidator(MAX_ALERT_AFTER)],
        help_text="seconds a source may fail before an alert is raised",
    )
    namespace = models.CharField(
        max_length=63,
        default="yunikorn",
        validators=[dns_label_validator],
        help_text="namespace of the yunikorn-configs ConfigMap (for kubectl patch)",
    )
    configmap_name = models.CharField(
        max_length=253, default="yunikorn-configs", validators=[dns_subdomain_validator]
    )

    # -- state (written by the poller only) --
    scheduler_health = models.JSONField(
        default=dict,
        blank=True,
        help_text="the scheduler's healthcheck and build as last read (sources.health)",
    )
    scheduler_unhealthy_since = models.DateTimeField(null=True, blank=True)
    usage_tracking = models.JSONField(
        default=dict,
        blank=True,
        help_text="the scheduler's per-user and per-group usage as last read (sources.ugm)",
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.NEW)
    failing_since = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_changed_at = models.DateTimeField(
        null=True, blank=True, help_text="when a poll last stored a new snapshot"
    )
    last_snapshot = models.ForeignKey(
        ClusterSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    alerted_at = models.DateTimeField(
        null=True, blank=True, help_text="the failure alert of the current failing streak"
    )
    next_poll_at = models.DateTimeField(null=True, blank=True)
    events_instance = models.CharField(
        max_length=100,
        blank=True,
        default="",
        help_text="the scheduler instance (InstanceUUID) whose events were read last",
    )
    events_next = models.BigIntegerField(
        null=True, blank=True, help_text="the event id the next events poll starts from"
    )
    events_waiting = models.JSONField(
        default=list,
        blank=True,
        help_text="quota victims read whose preemption summary has not been read yet",
    )
    last_events_error = models.TextField(blank=True, default="")
    last_full_poll_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when a cycle following the stream last fetched the whole state",
    )
    last_cycle = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="what the last cycle following the stream did",
    )
    config_checksum = models.CharField(
        max_length=64,
        blank=True,
        default="",
        help_text="the checksum of the scheduler's config (/ws/v1/config) last read",
    )
    config_seen_at = models.DateTimeField(
        null=True, blank=True, help_text="when that config was last read"
    )
    last_config_error = models.TextField(blank=True, default="")
    faults = models.JSONField(
        default=dict,
        blank=True,
        help_text="what was alerted of the source's faults (stale, events failing) and the "
        "warnings last raised per cause (dashboard.sources.faults)",
    )
    lease_until = models.DateTimeField(null=True, blank=True)
    sent_to = models.CharField(
        max_length=200,
        blank=True,
        default="",
        help_text="the poller the beat last sent this source's poll to (sources.affinity)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster", "partition"], name="one_source_per_cluster_partition"
            ),
            models.CheckConstraint(
                condition=Q(poll_interval__gte=MIN_POLL_INTERVAL)
                & Q(poll_interval__lte=MAX_POLL_INTERVAL),
                name="source_poll_interval_range",
            ),
            models.CheckConstraint(
                condition=Q(status="failing") | Q(failing_since__isnull=True),
                name="source_failing_since_only_when_failing",
            ),
        ]
        indexes = [models.Index(fields=["enabled", "next_poll_at"])]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: object, **kwargs: object) -> None:
        if self.cluster_id is None:  # a source naming no cluster joins the only one
            self.cluster = Cluster.objects.only_one()
        super().save(*args, **kwargs)  # type: ignore[arg-type]  # Model.save's own arguments

    @property
    def has_token(self) -> bool:
        return bool(self.token)

    @property
    def token_state(self) -> str:
        """What pages and the API show instead of the token."""
        if isinstance(self.token, UndecryptableToken):
            return "set, but cannot be decrypted: enter it again"
        return "set" if self.token else "not set"


class SourceSnapshot(models.Model):
    """A snapshot stored by a poll of a source, with the fingerprint of its state."""

    source = models.ForeignKey(ClusterSource, on_delete=models.CASCADE, related_name="snapshots")
    snapshot = models.OneToOneField(
        ClusterSnapshot, on_delete=models.CASCADE, related_name="source_link"
    )
    fingerprint = models.CharField(max_length=64)
    fetched_at = models.DateTimeField()

    class Meta:
        ordering = ["source", "-fetched_at", "-id"]
        indexes = [models.Index(fields=["source", "-fetched_at"])]

    def __str__(self) -> str:
        return f"{self.source.name}: snapshot {self.snapshot_id}"


class SourcePoller(models.Model):
    """A live poller: a Celery worker consuming the poll queue, with a queue of its own
    that the beat sends its sources' polls to (:mod:`dashboard.sources.affinity`)."""

    name = models.CharField(max_length=200, unique=True, help_text="the worker's hostname")
    queue = models.CharField(max_length=300)
    seen_at = models.DateTimeField(help_text="its last heartbeat")

    def __str__(self) -> str:
        return self.name
