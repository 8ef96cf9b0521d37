"""Poll counters of each cluster source, kept in the database so that every web process
answers ``/metrics`` with the same totals, whichever worker process polled.

Belongs to the ``dashboard`` app (``dashboard.models`` imports it).
"""

from __future__ import annotations

from django.db import models


class SourcePollStats(models.Model):
    """Totals of one source's polls: count, failures, seconds spent, the last one's seconds."""

    source = models.OneToOneField(
        "sources.ClusterSource", on_delete=models.CASCADE, related_name="poll_stats"
    )
    polls = models.PositiveBigIntegerField(default=0)
    failures = models.PositiveBigIntegerField(default=0)
    seconds_total = models.FloatField(default=0.0)
    last_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        app_label = "dashboard"

    def __str__(self) -> str:
        return f"poll stats of source {self.source_id}"


# ---------------------------------------------------------------- tallies of the history
#
# Kept by PostgreSQL triggers (migration 0034) in the same transaction as every write of a
# run or victim, so that a scrape reads a few rows per queue, partition or kind instead
# of the whole run history (dashboard/metrics/tallies.py).  Partition and run ids are
# plain integers, not foreign keys: the triggers alone write these rows, whatever order
# Django deletes a partition's runs and victims in.


class PreemptionTally(models.Model):
    """Finished preemption runs (predicted and observed) of one partition, queue and kind,
    and the victims they took."""

    partition_id = models.BigIntegerField()
    queue = models.CharField(max_length=1000)
    kind = models.CharField(max_length=20)
    runs = models.BigIntegerField(default=0)
    victims = models.BigIntegerField(default=0)

    class Meta:
        app_label = "dashboard"
        constraints = [
            models.UniqueConstraint(
                fields=["partition_id", "queue", "kind"], name="preemption_tally_key"
            )
        ]

    def __str__(self) -> str:
        return f"{self.partition_id} {self.queue} {self.kind}: {self.runs}"


class ObservedAgreement(models.Model):
    """One observed run linked to its prediction: whether both took the same victims."""

    run_id = models.BigIntegerField(primary_key=True)
    partition_id = models.BigIntegerField()
    kind = models.CharField(max_length=20)
    agreed = models.BooleanField()

    class Meta:
        app_label = "dashboard"

    def __str__(self) -> str:
        return f"run {self.run_id}: {'agreed' if self.agreed else 'differed'}"


class AgreementTally(models.Model):
    """Observed runs of one partition and kind linked to a prediction, and of them agreeing."""

    partition_id = models.BigIntegerField()
    kind = models.CharField(max_length=20)
    linked = models.BigIntegerField(default=0)
    agreed = models.BigIntegerField(default=0)

    class Meta:
        app_label = "dashboard"
        constraints = [
            models.UniqueConstraint(fields=["partition_id", "kind"], name="agreement_tally_key")
        ]

    def __str__(self) -> str:
        return f"{self.partition_id} {self.kind}: {self.agreed}/{self.linked}"


class RunLatencyTally(models.Model):
    """Finished runs of one kind (not observed) whose latency falls in one bucket: the
    first bound of the histogram it is at most (``bucket`` = its index; past the last
    bound, the number of bounds), and the exact sum of their latencies."""

    kind = models.CharField(max_length=20)
    bucket = models.SmallIntegerField()
    runs = models.BigIntegerField(default=0)
    seconds = models.DecimalField(max_digits=1000, decimal_places=6, default=0)

    class Meta:
        app_label = "dashboard"
        constraints = [
            models.UniqueConstraint(fields=["kind", "bucket"], name="run_latency_tally_key")
        ]

    def __str__(self) -> str:
        return f"{self.kind} bucket {self.bucket}: {self.runs}"
