"""Scheduler instances a partition's cluster ran: the first, then every restart."""

from __future__ import annotations

from django.db import models

from dashboard.models.clusters import Partition


class SchedulerStart(models.Model):
    """A scheduler instance a partition's cluster ran, first seen in a poll, stream or upload.

    Every instance after the first is a restart (``is_restart``). The scheduler re-arms
    its timers when it recovers the allocations (the shim replays its pods after
    listing them): ``recovered_at``, the new instance's first recovered allocation or
    node, else ``started_at`` (``/ws/v1/clusters`` ``startTime`` when served, else the
    first event of the new ``InstanceUUID``). While the partition answers empty after
    the restart (``awaiting_recovery``) nothing is re-armed, and no waiting change closed.
    """

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="starts")
    instance_uuid = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField()
    source = models.CharField(max_length=40, help_text="where started_at comes from")
    seen_at = models.DateTimeField()
    is_restart = models.BooleanField(default=False)
    rearmed = models.JSONField(default=list, blank=True, help_text="queues re-armed")
    recovered_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when the scheduler recovered its allocations; timers re-arm from it",
    )
    awaiting_recovery = models.BooleanField(
        default=False,
        help_text="the partition was empty after the restart: timers re-arm at recovery",
    )

    class Meta:
        ordering = ["partition", "-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "instance_uuid", "started_at"], name="one_start_per_instance"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.partition} scheduler {self.instance_uuid or '?'} from {self.started_at}"
