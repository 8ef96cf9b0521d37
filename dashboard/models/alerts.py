"""Alerts raised for people: imports, timers, runs, sources and the scheduler's health."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from dashboard.models.clusters import Partition
from dashboard.models.quota_changes import QuotaChange
from dashboard.models.runs import PreemptionRun


class Alert(models.Model):
    class Level(models.TextChoices):
        INFO = "info", "Info"
        WARNING = "warning", "Warning"
        ERROR = "error", "Error"

    class Kind(models.TextChoices):
        IMPORT_FAILED = "import_failed", "Import failed"
        IMPORT_WARNING = "import_warning", "Import warning"
        #: the dashboard's own timer for a change fired (predicted: nothing happened in the cluster)
        QUOTA = "quota", "Quota timer fired (predicted)"
        #: the scheduler's quota preemption, read from its events, settled a waiting change
        QUOTA_OBSERVED = "quota_observed", "Quota preemption observed (scheduler)"
        TIMER = "timer", "Timer"
        CHANGE_SKIPPED = "change_skipped", "Change skipped"
        CANCELLED_BY_INCREASE = "cancelled_by_increase", "Cancelled by increase"
        RUN_FAILED = "run_failed", "Run failed"
        ENGINE = "engine", "Engine"
        SOURCE_FAILING = "source_failing", "Cluster source failing"
        SOURCE_RECOVERED = "source_recovered", "Cluster source recovered"
        SCHEDULER_UNHEALTHY = "scheduler_unhealthy", "Scheduler unhealthy (its healthcheck)"
        SCHEDULER_HEALTHY = "scheduler_healthy", "Scheduler healthy again"
        SCHEDULER_RESTART = "scheduler_restart", "Scheduler restarted"

    level = models.CharField(max_length=10, choices=Level.choices, default=Level.INFO)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    message = models.TextField()
    partition = models.ForeignKey(
        Partition, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    queue = models.CharField(max_length=1000, blank=True)
    run = models.ForeignKey(
        PreemptionRun, null=True, blank=True, on_delete=models.CASCADE, related_name="alert_rows"
    )
    change = models.ForeignKey(
        QuotaChange, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    created_at = models.DateTimeField()
    count = models.PositiveIntegerField(
        default=1, help_text="how many times this alert was raised while unread"
    )
    last_seen_at = models.DateTimeField(help_text="when it was raised last")
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="acknowledged_alerts",
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["acknowledged_at", "-created_at"]),
            models.Index(fields=["kind", "-created_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.level}: {self.message[:60]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.last_seen_at is None:  # a new alert: seen once, when it was raised
            self.last_seen_at = self.created_at
        super().save(*args, **kwargs)
