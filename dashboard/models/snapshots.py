"""Cluster snapshots: a partition's state at one moment, its queues, preemptable
values and pending asks (nodes, applications and allocations are in :mod:`.spans`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from dashboard.models.clusters import Partition


class ClusterSnapshot(models.Model):
    """A cluster state at one moment; ``scenario`` is kept whole for the engine."""

    class Source(models.TextChoices):
        SCENARIO = "scenario", "Scenario JSON"
        REST = "rest", "YuniKorn REST files"
        STATE_DUMP = "state_dump", "YuniKorn full state dump"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="snapshots")
    source_kind = models.CharField(max_length=20, choices=Source.choices)
    source_detail = models.CharField(max_length=500, blank=True)
    captured_at = models.DateTimeField()
    imported_at = models.DateTimeField()
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    scenario = models.JSONField()
    warnings = models.JSONField(default=list, blank=True)
    checksum = models.CharField(max_length=64, blank=True)
    scheduler_timers = models.JSONField(
        default=dict,
        blank=True,
        help_text="queue -> the scheduler's running quota timer as the import read it "
        "(quotaPreemptionStartTime, else a QUEUE_MAX event plus the delay, else unknown)",
    )

    class Meta:
        ordering = ["-captured_at", "-id"]
        indexes = [models.Index(fields=["partition", "-captured_at"])]

    def __str__(self) -> str:
        return f"snapshot {self.pk} of {self.partition.name} at {self.captured_at:%Y-%m-%d %H:%M}"


class SnapshotQueue(models.Model):
    """One queue of a snapshot, with YuniKorn's own figures beside the engine's.

    ``allocated`` is the queue's ``allocatedResource`` as the scheduler reports it
    (allocations being preempted still count), ``preempting`` the part being
    preempted and ``usage`` what remains (allocated - preempting, the engine's
    usage; types held only by preempted allocations are absent from it).
    """

    class Status(models.TextChoices):
        ACTIVE = "Active", "Active"
        DRAINING = "Draining", "Draining"
        STOPPED = "Stopped", "Stopped"

    snapshot = models.ForeignKey(ClusterSnapshot, on_delete=models.CASCADE, related_name="queues")
    path = models.CharField(max_length=1000)
    name = models.CharField(max_length=255)
    parent_path = models.CharField(max_length=1000, blank=True)
    depth = models.PositiveIntegerField(default=0)
    is_leaf = models.BooleanField(default=True)
    guaranteed = models.JSONField(null=True, blank=True)
    max = models.JSONField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    preempting = models.JSONField(default=dict, blank=True)
    pending = models.JSONField(default=dict, blank=True)
    properties = models.JSONField(default=dict, blank=True)
    quota_preemption_delay = models.FloatField(null=True, blank=True)
    allocated = models.JSONField(
        default=dict, blank=True, help_text="allocatedResource as reported (preempting included)"
    )
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    dynamic = models.BooleanField(default=False, help_text="made from a parent's child template")
    max_applications = models.PositiveIntegerField(
        null=True, blank=True, help_text="maxapplications (maxRunningApps); empty when unlimited"
    )
    running_apps = models.PositiveIntegerField(
        null=True, blank=True, help_text="runningApps as reported; empty when not reported"
    )

    class Meta:
        ordering = ["snapshot", "path"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "path"], name="snapshot_queue_unique"),
        ]
        # one queue over time: the unique (snapshot, path) index leads with the snapshot
        indexes = [models.Index(fields=["path", "snapshot"], name="snapshot_queue_path")]

    def __str__(self) -> str:
        return self.path

    @property
    def remaining(self) -> dict[str, int]:
        """allocated - preempting over every type of allocated (0 where all is preempting)."""
        pre = self.preempting or {}
        return {t: q - pre.get(t, 0) for t, q in (self.allocated or {}).items()}


class SnapshotPreemptable(models.Model):
    """The engine's ``preemptable(Q)`` of every queue of a snapshot, computed at import.

    In its own table (one row per snapshot), so that reading snapshots never reads it;
    the tree and queue pages read it instead of building the engine state.  A snapshot
    stored before this table existed has no row (its values are computed on demand).
    """

    snapshot = models.OneToOneField(
        ClusterSnapshot,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="preemptable_values",
    )
    #: queue path -> resource (``{}``: within its guarantee) or null (no allocations)
    values = models.JSONField()

    def __str__(self) -> str:
        return f"preemptable of snapshot {self.snapshot_id}"


class PendingAsk(models.Model):
    """An ask not yet allocated; ``pod`` names its pod as an allocation's span does."""

    snapshot = models.ForeignKey(ClusterSnapshot, on_delete=models.CASCADE, related_name="asks")
    key = models.CharField(max_length=500)
    app = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=1000)
    resources = models.JSONField(default=dict)
    priority = models.IntegerField(default=0)
    allow_preempt_other = models.BooleanField(default=True)
    created = models.FloatField(default=0.0)
    pod = models.CharField(
        max_length=600,
        blank=True,
        default="",
        help_text="namespace/name of the ask's pod (its tags), empty when unknown",
    )
    # the scheduler's own word on why the ask waits (allocationLog, newest first)
    scheduler_log = models.JSONField(default=list, blank=True)
    scheduling_attempted = models.BooleanField(default=False)
    triggered_scale_up = models.BooleanField(default=False)

    class Meta:
        ordering = ["snapshot", "key"]
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "key"], name="snapshot_ask_key_unique"),
        ]

    def __str__(self) -> str:
        return self.key
