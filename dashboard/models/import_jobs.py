"""Uploads imported by a worker, with their progress."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ImportJob(models.Model):
    """An upload imported by a worker (above ``DASHBOARD_IMPORT_ASYNC_BYTES``), with its
    progress: the request that accepted it never waits for the import."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=10, default="config")
    filename = models.CharField(max_length=255)
    cluster = models.CharField(
        max_length=200, blank=True, help_text="the cluster to import into (empty: the only one)"
    )
    partition = models.CharField(
        max_length=200, blank=True, help_text="import only this partition of the file"
    )
    data = models.BinaryField()
    size = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    stage = models.CharField(max_length=200, blank=True, help_text="what the worker is doing")
    progress = models.PositiveSmallIntegerField(default=0, help_text="percent done")
    error = models.TextField(blank=True)
    versions = models.JSONField(default=list, blank=True, help_text="config versions stored")
    changes = models.JSONField(default=list, blank=True, help_text="quota changes scheduled")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import job {self.pk} ({self.filename}): {self.status}"
