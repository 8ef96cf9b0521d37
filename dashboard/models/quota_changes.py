"""Scheduled quota changes (max and delay) and the scheduler's own QUEUE_MAX events."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q

from dashboard.models.clusters import Partition
from dashboard.models.configs import ConfigVersion
from dashboard.models.runs import PreemptionRun
from dashboard.models.snapshots import ClusterSnapshot


class QuotaChange(models.Model):
    """A scheduled change of one queue's max and/or quota preemption delay.

    States: ``waiting`` (timer running until ``deadline``), ``running`` (the sweep
    claimed it and runs the plan), ``fired`` (the dashboard's timer fired and ``run``
    holds its prediction; nothing happened in the cluster until the scheduler reports
    it), ``done`` (settled by what the scheduler reports, or no timer was needed:
    ``reason`` says which), ``cleared`` (the scheduler's one-second check found the
    queue's usage, its allocated, within the max before the timer fired: the timer is
    cleared, nothing is preempted, and a later rise above the max starts a new timer),
    ``reset`` (shown as "superseded": a later change to the
    same queue took its place; under the ``seed`` rules it restarted the timer, under
    ``scheduler`` it kept or moved it), ``cancelled_by_increase`` (an
    increase arrived before the deadline), ``cancelled`` (withdrawn by an admin),
    ``skipped`` (arrived while a quota preemption ran for the queue), ``failed``.
    ``pending`` is the state of a row being decided inside its transaction.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        WAITING = "waiting", "Waiting"
        RESET = "reset", "Superseded by a later change"
        CANCELLED_BY_INCREASE = "cancelled_by_increase", "Cancelled by an increase"
        CANCELLED = "cancelled", "Cancelled"
        RUNNING = "running", "Running"
        FIRED = "fired", "Fired: predicted here, awaiting the scheduler"
        DONE = "done", "Done"
        CLEARED = "cleared", "Cleared: usage within the max at the scheduler's check"
        SKIPPED = "skipped", "Skipped (preemption running)"
        FAILED = "failed", "Failed"

    ACTIVE_STATES = ("waiting", "running")

    class ClockSource(models.TextChoices):
        """Where the change's time (``changed_at``) comes from."""

        DASHBOARD = "dashboard", "the dashboard (planned here: saved in a page or the API)"
        EVENT = "event", "the scheduler's QUEUE_MAX event"
        START_TIME = "quotaPreemptionStartTime", "the scheduler (quotaPreemptionStartTime)"
        CONFIG_IMPORT = (
            "config_import",
            "unknown: the scheduler's change time is not known; counted from the config import",
        )
        CAPTURE = (
            "capture",
            "unknown: counted from the snapshot's capture time (the latest it can have started)",
        )
        IMPORT = (
            "import",
            "unknown: counted from the snapshot's import (recorded before the scheduler's "
            "clock was kept)",
        )

    class Cause(models.TextChoices):
        CHANGE = "change", "Max or delay changed"
        USAGE_ROSE = "usage_rose", "Usage rose above the max"
        RECHECK = "recheck", "Re-check after a skipped change"
        RESTART = "restart", "Re-armed at a scheduler restart"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="changes")
    cause = models.CharField(
        max_length=20,
        choices=Cause.choices,
        default=Cause.CHANGE,
        help_text="what started it: a change of the max/delay (API, page or config import), "
        "a snapshot whose usage rose above the max in force, or a re-check",
    )
    queue_path = models.CharField(max_length=1000)
    depth = models.PositiveIntegerField(default=0)
    old_max = models.JSONField(null=True, blank=True)
    new_max = models.JSONField(null=True, blank=True)
    old_delay = models.FloatField(null=True, blank=True)
    new_delay = models.FloatField(null=True, blank=True)
    delay = models.FloatField(default=0.0, help_text="effective delay in seconds")
    state = models.CharField(max_length=30, choices=State.choices, default=State.PENDING)
    reason = models.TextField(blank=True)
    changed_at = models.DateTimeField(
        help_text="when the change was made, by the clock clock_source names; the timer its "
        "deadline counts from started at deadline - delay (earlier when the rule set kept a "
        "first decrease's start)"
    )
    deadline_reason = models.JSONField(
        default=dict, blank=True, help_text="the engine's reason for the deadline (rule, at, since)"
    )
    clock_source = models.CharField(
        max_length=30,
        choices=ClockSource.choices,
        default=ClockSource.DASHBOARD,
        help_text="where changed_at comes from: the dashboard's save time (a planned change), "
        "the scheduler's QUEUE_MAX event or quotaPreemptionStartTime, or unknown",
    )
    clock_detail = models.CharField(
        max_length=255, blank=True, help_text="e.g. the QUEUE_MAX event id"
    )
    learned = models.BooleanField(
        default=False,
        help_text="learned from a config imported from the cluster (not made in the dashboard)",
    )
    applied_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="when the cluster applied it (None: planned in the dashboard, not yet seen "
        "in an imported or polled config)",
    )
    deadline = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    config_version = models.ForeignKey(
        ConfigVersion, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    snapshot = models.ForeignKey(
        ClusterSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    run = models.ForeignKey(
        PreemptionRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="changes"
    )
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )

    class Meta:
        ordering = ["-changed_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(state__in=["waiting", "running"]),
                name="one_active_change_per_queue",
            ),
            models.UniqueConstraint(
                fields=["partition", "queue_path"],
                condition=Q(state="running"),
                name="one_running_change_per_queue",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "deadline"]),
            models.Index(fields=["partition", "queue_path", "-changed_at"]),
        ]

    def __str__(self) -> str:
        return f"change {self.pk} {self.queue_path} {self.state}"

    @property
    def is_planned(self) -> bool:
        """Made in the dashboard and not yet seen applied in the cluster's config."""
        return self.applied_at is None

    @property
    def timer_started_at(self) -> datetime | None:
        """When the timer its deadline counts from started: the deadline less the delay.

        The change's own time (``changed_at``) unless another event set the deadline:
        under the ``scheduler`` rules a further decrease keeps the first start and a new
        delay counts from it too; a restart re-arms from the restart.
        """
        if self.deadline is None:
            return None
        return self.deadline - timedelta(seconds=self.delay)

    @property
    def timer_started_elsewhere(self) -> bool:
        """The timer started at another moment than this change (a millisecond or more
        apart: the deadline is stored to the microsecond, the delay a float of seconds)."""
        start = self.timer_started_at
        return start is not None and abs((start - self.changed_at).total_seconds()) >= 0.001


class ObservedMaxChange(models.Model):
    """A QUEUE_MAX event: the scheduler changed a queue's max at ``time`` (its own clock)."""

    partition = models.ForeignKey(
        Partition, on_delete=models.CASCADE, related_name="observed_max_changes"
    )
    instance_uuid = models.CharField(max_length=100, blank=True)
    event_id = models.BigIntegerField()
    queue = models.CharField(max_length=1000)
    time = models.DateTimeField()
    new_max = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["time", "event_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["partition", "instance_uuid", "event_id"], name="one_max_change_per_event"
            )
        ]

    def __str__(self) -> str:
        return f"QUEUE_MAX {self.event_id} {self.queue}"
