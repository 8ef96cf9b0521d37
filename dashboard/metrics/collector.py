"""The ``/metrics`` collector: every figure read from the database at scrape time.

Nothing is counted in process memory, so any web process (of any pod) answers a
scrape with the same figures, whichever gunicorn or Celery process did the work:
gauges are the stored state now, counters are counts of stored rows (or of the
stored poll totals, :mod:`dashboard.metrics.polls`).  A counter of rows can go
down when old rows are pruned; Prometheus' ``rate()`` reads that as a reset.

The counts of the run history (preemptions, victims, the predicted-versus-observed
agreement, run latency) are read from the tallies PostgreSQL keeps as runs are written
(:mod:`dashboard.metrics.counts`), so a scrape costs the same whatever the history's
length: it grows with queues, partitions and kinds only.

Names follow Prometheus' conventions (base units, ``_seconds``, ``_total``,
``_timestamp_seconds``, ``_ratio``); docs/operations/metrics.md lists them all.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db.models import OuterRef, Subquery
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from dashboard import models
from dashboard.metrics.counts import (
    LATENCY_BUCKETS,
    PREEMPTION_KINDS,
    HistoryCounts,
    from_history,
    from_tallies,
    tallied,
)
from dashboard.plumbing.clock import utcnow

PREFIX = "yunikorn_dashboard"

#: (cluster name, partition name) by partition id.
PartitionNames = Mapping[int, tuple[str, str]]


@dataclass(frozen=True)
class RunningTimer:
    cluster: str
    partition: str
    queue: str
    deadline: datetime


def running_timer_deadlines() -> list[RunningTimer]:
    """Every running quota timer (a waiting change) with its deadline.

    The one place ``/metrics`` reads a change's deadline: today the ``deadline``
    field the scheduling services store when the timer starts.
    """
    rows = (
        models.QuotaChange.objects.filter(
            state=models.QuotaChange.State.WAITING, deadline__isnull=False
        )
        .values_list("partition__cluster__name", "partition__name", "queue_path", "deadline")
        .order_by("partition__cluster__name", "partition__name", "queue_path")
    )
    return [RunningTimer(c, p, q, d) for c, p, q, d in rows if d is not None]


def _timer_metrics(now: datetime) -> Iterator[Metric]:
    labels = ["cluster", "partition", "queue"]
    deadline = GaugeMetricFamily(
        f"{PREFIX}_quota_timer_deadline_timestamp_seconds",
        "When a running quota timer fires (Unix time), per queue.",
        labels=labels,
    )
    remaining = GaugeMetricFamily(
        f"{PREFIX}_quota_timer_seconds_to_deadline",
        "Seconds until a running quota timer fires (negative: overdue), per queue.",
        labels=labels,
    )
    for timer in running_timer_deadlines():
        values = [timer.cluster, timer.partition, timer.queue]
        deadline.add_metric(values, timer.deadline.timestamp())
        remaining.add_metric(values, (timer.deadline - now).total_seconds())
    yield deadline
    yield remaining


def _ratio(used: object, limit: object) -> float | None:
    """used / limit; +Inf for use of a type limited to 0; None for nothing over nothing."""
    if not isinstance(limit, int | float) or isinstance(limit, bool):
        return None
    amount = used if isinstance(used, int | float) and not isinstance(used, bool) else 0
    if limit > 0:
        return float(amount) / float(limit)
    return math.inf if amount > 0 else None


def _usage_metrics() -> Iterator[Metric]:
    labels = ["cluster", "partition", "queue", "resource"]
    over_max = GaugeMetricFamily(
        f"{PREFIX}_queue_usage_max_ratio",
        "A queue's usage over its max, per resource type the max sets (latest snapshot).",
        labels=labels,
    )
    over_guaranteed = GaugeMetricFamily(
        f"{PREFIX}_queue_usage_guaranteed_ratio",
        "A queue's usage over its guaranteed, per resource type it sets (latest snapshot).",
        labels=labels,
    )
    latest = models.ClusterSnapshot.objects.filter(partition=OuterRef("pk")).order_by(
        "-captured_at", "-id"
    )
    partitions = {
        snapshot_id: (cluster, name)
        for snapshot_id, cluster, name in models.Partition.objects.annotate(
            latest=Subquery(latest.values("pk")[:1])
        )
        .filter(latest__isnull=False)
        .values_list("latest", "cluster__name", "name")
    }
    rows = (
        models.SnapshotQueue.objects.filter(snapshot_id__in=list(partitions))
        .values_list("snapshot_id", "path", "usage", "max", "guaranteed")
        .order_by("snapshot_id", "path")
    )
    for snapshot_id, path, usage, limit, guaranteed in rows.iterator(chunk_size=2000):
        cluster, partition = partitions[snapshot_id]
        used = usage if isinstance(usage, dict) else {}
        for family, bound in ((over_max, limit), (over_guaranteed, guaranteed)):
            if not isinstance(bound, dict):
                continue
            for resource in sorted(bound):
                value = _ratio(used.get(resource), bound[resource])
                if value is not None:
                    family.add_metric([cluster, partition, path, resource], value)
    yield over_max
    yield over_guaranteed


def _preemption_metrics(counts: HistoryCounts, names: PartitionNames) -> Iterator[Metric]:
    labels = ["cluster", "partition", "queue", "nature", "kind"]
    runs = CounterMetricFamily(
        f"{PREFIX}_preemptions",
        "Preemptions, predicted (the dashboard's quota timers) and observed (the "
        "scheduler's, from its events), by kind: quota or inter_queue.",
        labels=labels,
    )
    victims = CounterMetricFamily(
        f"{PREFIX}_preemption_victims",
        "Allocations those preemptions took (victims).",
        labels=labels,
    )
    for row in counts.preemptions:
        nature, kind = PREEMPTION_KINDS[row.kind]
        values = [*names[row.partition_id], row.queue, nature, kind]
        runs.add_metric(values, row.runs)
        victims.add_metric(values, row.victims)
    yield runs
    yield victims


def _agreement_metrics(counts: HistoryCounts, names: PartitionNames) -> Iterator[Metric]:
    """The predicted-versus-observed agreement of every linked observed run, per
    cluster, partition and kind."""
    labels = ["cluster", "partition", "kind"]
    predicted = CounterMetricFamily(
        f"{PREFIX}_observed_preemptions_predicted",
        "Observed preemptions the dashboard had predicted (linked to a prediction).",
        labels=labels,
    )
    agreed = CounterMetricFamily(
        f"{PREFIX}_observed_preemptions_agreed",
        "Observed preemptions whose victims were exactly the predicted ones.",
        labels=labels,
    )
    ratio = GaugeMetricFamily(
        f"{PREFIX}_prediction_agreement_ratio",
        "Agreed over predicted observed preemptions (predicted-versus-observed agreement).",
        labels=labels,
    )
    totals: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for row in counts.agreement:
        nature_kind = PREEMPTION_KINDS.get(row.kind, ("observed", str(row.kind)))[1]
        entry = totals[(*names[row.partition_id], nature_kind)]
        entry[0] += row.linked
        entry[1] += row.agreed
    for key in sorted(totals):
        n_predicted, n_agreed = totals[key]
        predicted.add_metric(list(key), n_predicted)
        agreed.add_metric(list(key), n_agreed)
        ratio.add_metric(list(key), n_agreed / n_predicted)
    yield predicted
    yield agreed
    yield ratio


def _source_metrics() -> Iterator[Metric]:
    from dashboard.sources.models import ClusterSource  # an app built on this one

    labels = ["source", "cluster", "partition"]

    def gauge(name: str, text: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"{PREFIX}_source_{name}", text, labels=labels)

    last_success = gauge("last_success_timestamp_seconds", "When a poll last succeeded.")
    last_poll = gauge("last_poll_timestamp_seconds", "When the source was last polled.")
    healthy = gauge("healthy", "1 when the last poll succeeded, 0 when the source is failing.")
    streak = gauge("consecutive_failures", "Failed polls since the last success.")
    last_seconds = gauge("last_poll_duration_seconds", "How long the last poll took.")
    polls = SummaryMetricFamily(
        f"{PREFIX}_source_poll_duration_seconds", "Time spent polling the source.", labels=labels
    )
    failures = CounterMetricFamily(
        f"{PREFIX}_source_poll_failures", "Polls of the source that failed.", labels=labels
    )
    sources = ClusterSource.objects.select_related("cluster", "poll_stats").order_by("name")
    for source in sources:
        values = [source.name, source.cluster.name, source.partition]
        if source.last_success_at is not None:
            last_success.add_metric(values, source.last_success_at.timestamp())
        if source.last_poll_at is not None:
            last_poll.add_metric(values, source.last_poll_at.timestamp())
        if source.status != ClusterSource.Status.NEW:
            healthy.add_metric(values, float(source.status == ClusterSource.Status.HEALTHY))
        streak.add_metric(values, source.consecutive_failures)
        stats = getattr(source, "poll_stats", None)
        count, total, failed = (0, 0.0, 0)
        if stats is not None:
            count, total, failed = stats.polls, stats.seconds_total, stats.failures
            if stats.last_seconds is not None:
                last_seconds.add_metric(values, stats.last_seconds)
        polls.add_metric(values, count_value=count, sum_value=total)
        failures.add_metric(values, failed)
    yield from (last_success, last_poll, healthy, streak, last_seconds, polls, failures)


def _latency_metrics(counts: HistoryCounts) -> Iterator[Metric]:
    """Queued to finished, of the dashboard's own runs (observed runs have no latency)."""
    histogram = HistogramMetricFamily(
        f"{PREFIX}_run_latency_seconds",
        "Seconds from a run being queued to its answer (what-if, round, predicted), by kind.",
        labels=["kind"],
    )
    for row in counts.latency:
        buckets = [(str(b), n) for b, n in zip(LATENCY_BUCKETS, row.at_most, strict=True)]
        buckets.append(("+Inf", row.runs))
        histogram.add_metric([row.kind], buckets, sum_value=row.seconds)
    yield histogram


class ScrapeDeadline(Exception):
    """The scrape ran past its deadline (``METRICS_DEADLINE_SECONDS``)."""


class DashboardCollector(Collector):
    """Reads every figure from the database when Prometheus scrapes; with a *deadline*
    (a ``time.monotonic()`` value), raises :class:`ScrapeDeadline` once past it.

    *now* fixes the clock of the timers' seconds to deadline; *counts* reads the run
    history's counts (by default the tallies where the database keeps them, else the
    history itself: :mod:`dashboard.metrics.counts`).
    """

    def __init__(
        self,
        deadline: float | None = None,
        *,
        now: datetime | None = None,
        counts: Callable[[], HistoryCounts] | None = None,
    ) -> None:
        self.deadline = deadline
        self.now = now
        self.counts = counts

    def collect(self) -> Iterator[Metric]:
        now = self.now or utcnow()
        read_counts = self.counts or (from_tallies if tallied() else from_history)
        history: list[HistoryCounts] = []
        names: dict[int, tuple[str, str]] = {}

        def read_history() -> Iterator[Metric]:
            names.update(
                (pk, (cluster, name))
                for pk, cluster, name in models.Partition.objects.values_list(
                    "pk", "cluster__name", "name"
                )
            )
            history.append(read_counts())
            return iter(())

        parts: list[tuple[str, Callable[[], Iterator[Metric]]]] = [
            ("the quota timers", partial(_timer_metrics, now)),
            ("the usage ratios", _usage_metrics),
            ("the run history's counts", read_history),
            ("the preemption counts", lambda: _preemption_metrics(history[0], names)),
            ("the prediction agreement", lambda: _agreement_metrics(history[0], names)),
            ("the sources", _source_metrics),
            ("the run latency", lambda: _latency_metrics(history[0])),
        ]
        for name, part in parts:
            families = list(part())
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise ScrapeDeadline(name)
            yield from families
