"""Queue config versions and their queues, one version per import of a partition's config."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from dashboard.models.clusters import Partition


class ConfigVersion(models.Model):
    """One import of a queue config for one partition; every import is kept."""

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="configs")
    number = models.PositiveIntegerField()
    filename = models.CharField(max_length=255, blank=True)
    text = models.TextField()
    checksum = models.CharField(max_length=64)
    quota_preemption_enabled = models.BooleanField(default=False)
    warnings = models.JSONField(default=list, blank=True)
    parsed = models.JSONField(default=dict, blank=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    imported_at = models.DateTimeField()
    planned = models.BooleanField(
        default=False,
        help_text="Kept from a plan (a proposed config): never the config in force.",
    )
    applied_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="planned: when a live source first read the scheduler running it "
        "(its /ws/v1/config checksum equal to this version's)",
    )

    class Meta:
        ordering = ["partition", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["partition", "number"], name="config_number_unique"),
        ]
        indexes = [models.Index(fields=["partition", "-imported_at"])]

    def __str__(self) -> str:
        planned = " (planned)" if self.planned else ""
        return f"{self.partition.name} config v{self.number}{planned}"


class ConfigQueue(models.Model):
    """A queue as configured in one config version."""

    version = models.ForeignKey(ConfigVersion, on_delete=models.CASCADE, related_name="queues")
    path = models.CharField(max_length=1000)
    name = models.CharField(max_length=255)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    depth = models.PositiveIntegerField(default=0)
    guaranteed = models.JSONField(null=True, blank=True)
    max = models.JSONField(null=True, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    quota_preemption_delay = models.FloatField(default=0.0)
    is_leaf = models.BooleanField(default=True)
    is_parent_flag = models.BooleanField(default=False)

    class Meta:
        ordering = ["version", "path"]
        constraints = [
            models.UniqueConstraint(fields=["version", "path"], name="config_queue_path_unique"),
        ]

    def __str__(self) -> str:
        return self.path
