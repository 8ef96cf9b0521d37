"""Preemption runs (one engine evaluation, or one observed in the cluster) and their victims."""

from __future__ import annotations

import operator
from functools import reduce

from django.conf import settings
from django.db import models
from django.db.models import Q

from dashboard.models.clusters import Partition
from dashboard.models.snapshots import ClusterSnapshot


class PreemptionRunQuerySet(models.QuerySet["PreemptionRun"]):
    def of_nature(self, nature: str) -> PreemptionRunQuerySet:
        """The runs of one :class:`PreemptionRun.Nature` (by :data:`NATURE_RULE`)."""
        return self.filter(nature_q(nature))


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

    objects = PreemptionRunQuerySet.as_manager()

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


#: What a run is, from its trigger and kind: the first nature one of whose (field,
#: value) pairs the run has; a run with none of them is a what-if. The one rule, read
#: for a row by :func:`nature_of` and for a query by :func:`nature_q`
#: (``PreemptionRun.objects.of_nature``).
NATURE_RULE: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (PreemptionRun.Nature.OBSERVED, (("trigger", PreemptionRun.Trigger.OBSERVED),)),
    (
        PreemptionRun.Nature.PREDICTED,
        (("trigger", PreemptionRun.Trigger.TIMER), ("kind", PreemptionRun.Kind.QUOTA_ENFORCEMENT)),
    ),
)
#: The nature of a run that matches no pair of :data:`NATURE_RULE`.
NATURE_OTHERWISE = PreemptionRun.Nature.WHAT_IF


def nature_of(kind: str, trigger: str) -> str:
    """The :class:`PreemptionRun.Nature` of a run of *kind* started by *trigger*."""
    fields = {"kind": kind, "trigger": trigger}
    for nature, pairs in NATURE_RULE:
        if any(fields[field] == value for field, value in pairs):
            return nature
    return NATURE_OTHERWISE


def nature_q(nature: str) -> Q:
    """The runs of *nature* (a :class:`PreemptionRun.Nature` value) as a query filter:
    one of its own pairs and none of an earlier nature's (any other value: the runs
    of :data:`NATURE_OTHERWISE`)."""
    earlier = Q()
    for name, pairs in NATURE_RULE:
        has_pair = reduce(operator.or_, (Q(**{field: value}) for field, value in pairs))
        if name == nature:
            return earlier & has_pair
        earlier &= ~has_pair
    return earlier


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
