"""Preemption runs (one engine evaluation, or one observed in the cluster) and their victims."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from dashboard.models.clusters import Partition
from dashboard.models.snapshots import ClusterSnapshot


class PreemptionRun(models.Model):
    """One engine evaluation: its request, answer, victims, outcome and timings."""

    class Kind(models.TextChoices):
        WHATIF_PREEMPT = "whatif_preempt", "What-if preemption for one ask"
        WHATIF_QUOTA = "whatif_quota", "What-if quota decrease"
        ROUND = "round", "Preemption round"
        QUOTA_ENFORCEMENT = "quota_enforcement", "Predicted quota preemption"
        QUOTA = "quota", "Quota preemption by the scheduler"
        PREEMPT = "preempt", "Preemption by the scheduler"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        TIMER = "timer", "Dashboard timer"
        API = "api", "API"
        OBSERVED = "observed", "Observed in the cluster"

    class Nature(models.TextChoices):
        """What a run is, in words: derived from its kind and trigger."""

        WHAT_IF = "what_if", "what-if"
        PREDICTED = "predicted", "predicted"
        OBSERVED = "observed", "observed"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    partition = models.ForeignKey(Partition, on_delete=models.CASCADE, related_name="runs")
    snapshot = models.ForeignKey(
        ClusterSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.API)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    queue = models.CharField(max_length=1000, blank=True, help_text="ask queue or changed queue")
    request = models.JSONField(default=dict)
    result = models.JSONField(null=True, blank=True)
    outcome = models.CharField(max_length=30, blank=True)
    claimed = models.JSONField(null=True, blank=True)
    target = models.JSONField(null=True, blank=True)
    alerts = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    idempotency_key = models.CharField(max_length=200, null=True, blank=True, unique=True)
    attempts = models.PositiveIntegerField(default=0)
    lease_until = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    queued_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    engine_ms = models.FloatField(null=True, blank=True)
    predicted = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="observed_runs",
        help_text="observed runs: the dashboard's own run that predicted this enforcement",
    )

    class Meta:
        ordering = ["-queued_at", "-id"]
        constraints = [
            # At most one quota preemption runs per queue, even under races.
            models.UniqueConstraint(
                fields=["partition", "queue"],
                condition=Q(kind="quota_enforcement", status="running"),
                name="one_running_quota_preemption_per_queue",
            ),
        ]
        indexes = [
            models.Index(fields=["partition", "-queued_at"]),
            models.Index(fields=["queue", "-queued_at"]),
            models.Index(fields=["kind", "status"]),
            models.Index(fields=["outcome"]),
            models.Index(fields=["trigger"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} {self.kind} {self.status}"

    @property
    def nature(self) -> str:
        """what-if (asked by someone), predicted (the dashboard's timers) or observed
        (the scheduler's own preemption, read from its events)."""
        return nature_of(self.kind, self.trigger)

    def get_nature_display(self) -> str:
        return str(self.Nature(self.nature).label)


def nature_of(kind: str, trigger: str) -> str:
    """The :class:`PreemptionRun.Nature` of a run of *kind* started by *trigger*."""
    if trigger == PreemptionRun.Trigger.OBSERVED:
        return PreemptionRun.Nature.OBSERVED
    if trigger == PreemptionRun.Trigger.TIMER or kind == PreemptionRun.Kind.QUOTA_ENFORCEMENT:
        return PreemptionRun.Nature.PREDICTED
    return PreemptionRun.Nature.WHAT_IF


class RunVictim(models.Model):
    run = models.ForeignKey(PreemptionRun, on_delete=models.CASCADE, related_name="victims")
    position = models.PositiveIntegerField()
    allocation_key = models.CharField(max_length=500)
    ask = models.CharField(max_length=500, blank=True, help_text="round: the ask it was taken for")
    app = models.CharField(max_length=255, blank=True)
    queue = models.CharField(max_length=1000, blank=True)
    leaf = models.CharField(max_length=1000, blank=True)
    node = models.CharField(max_length=255, blank=True)
    resources = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "allocation_key"], name="run_victim_unique"),
        ]

    def __str__(self) -> str:
        return self.allocation_key
