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
