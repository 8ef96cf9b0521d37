"""The completed applications the scheduler reported, with the work they lost to preemption
(read by :mod:`dashboard.services.history.work_lost`)."""

from __future__ import annotations

from django.db import models


class CompletedApplication(models.Model):
    """One completed application and its resource history, as the scheduler reported it.

    ``preempted`` and ``used`` keep ``resourceHistory.preemptedResource`` and
    ``resourceUsage`` unchanged: instance type -> resource type -> quantity times seconds
    in the scheduler's units (millicore-seconds, byte-seconds, count-seconds).  A row is
    stored once per partition, application and finish time, whichever poll or upload
    read it first.
    """

    partition = models.ForeignKey(
        "dashboard.Partition", on_delete=models.CASCADE, related_name="completed_applications"
    )
    app_id = models.CharField(max_length=255)
    queue = models.CharField(max_length=1000)
    state = models.CharField(max_length=50, blank=True)
    user = models.CharField(max_length=255, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(help_text="the scheduler's finishedTime")
    preempted = models.JSONField(
        default=dict, blank=True, help_text="resourceHistory.preemptedResource (quantity-seconds)"
    )
    used = models.JSONField(
        default=dict, blank=True, help_text="resourceHistory.resourceUsage (quantity-seconds)"
    )
    read_at = models.DateTimeField(help_text="when the dashboard first read it")

    class Meta:
        app_label = "dashboard"
        ordering = ["partition", "finished_at", "app_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "app_id", "finished_at"], name="completed_app_unique"
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "finished_at"], name="completed_app_finished"),
        ]

    def __str__(self) -> str:
        return f"{self.app_id} ({self.state}, {self.queue})"
