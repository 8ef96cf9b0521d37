"""The ``/metrics`` collector: every figure read from the database at scrape time.

Nothing is counted in process memory, so any web process (of any pod) answers a
scrape with the same figures, whichever gunicorn or Celery process did the work:
gauges are the stored state now, counters are counts of stored rows (or of the
stored poll totals, :mod:`dashboard.metrics.polls`).  A counter of rows can go
down when old rows are pruned; Prometheus' ``rate()`` reads that as a reset.

Names follow Prometheus' conventions (base units, ``_seconds``, ``_total``,
``_timestamp_seconds``, ``_ratio``); docs/operations/metrics.md lists them all.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from django.db.models import Count, F, FloatField, Func, OuterRef, Q, Subquery, Sum
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
    SummaryMetricFamily,
)
from prometheus_client.registry import Collector

from dashboard import models
from dashboard.plumbing.clock import utcnow

PREFIX = "yunikorn_dashboard"

#: Upper bounds (seconds) of the run latency histogram's buckets.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

Run = models.PreemptionRun

#: (kind, trigger) of the runs counted as preemptions: predicted (the dashboard's own
#: timers) and observed (the scheduler's, read from its events), quota or inter-queue.
PREEMPTION_KINDS: dict[str, tuple[str, str]] = {
    Run.Kind.QUOTA_ENFORCEMENT: ("predicted", "quota"),
    Run.Kind.QUOTA: ("observed", "quota"),
    Run.Kind.PREEMPT: ("observed", "inter_queue"),
}


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


def _preemption_metrics() -> Iterator[Metric]:
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
    names = {
        pk: (cluster, name)
        for pk, cluster, name in models.Partition.objects.values_list("pk", "cluster__name", "name")
    }
    done = Run.objects.filter(kind__in=list(PREEMPTION_KINDS), status=Run.Status.DONE)
    # two plain grouped counts (runs; victims joined to their run): a count of distinct
    # runs over the runs-victims join sorted every victim at each scrape
    counts = (
        done.values_list("partition_id", "queue", "kind")
        .annotate(n=Count("id"))
        .order_by("partition_id", "queue", "kind")
    )
    taken = {
        (partition_id, queue, kind): n
        for partition_id, queue, kind, n in models.RunVictim.objects.filter(
            run__kind__in=list(PREEMPTION_KINDS), run__status=Run.Status.DONE
        )
        .values_list("run__partition_id", "run__queue", "run__kind")
        .annotate(n=Count("id"))
        .order_by()
    }
    for partition_id, queue, run_kind, n in counts:
        nature, kind = PREEMPTION_KINDS[run_kind]
        values = [*names[partition_id], queue, nature, kind]
        runs.add_metric(values, n)
        victims.add_metric(values, taken.get((partition_id, queue, run_kind), 0))
    yield runs
    yield victims


#: One observed run linked to its prediction agrees when both took the same set of
#: victims (a round's victims counted only when taken for the observed run's ask).
#: Every linked pair is judged in the database: the victims of both sides meet in one
#: grouped union, and a key seen on one side only marks the pair as differing.  A run's
#: victims are unique per allocation key (``run_victim_unique``), so each side holds a
#: key at most once: a key on both sides is counted twice, on one side once.
_AGREEMENT_SQL = """
WITH linked AS (
    SELECT r.id AS id, r.predicted_id AS predicted_id, r.partition_id AS partition_id,
           r.kind AS kind, COALESCE({ask}, '') AS ask, p.kind AS predicted_kind
    FROM {run} r JOIN {run} p ON p.id = r.predicted_id
    WHERE r."trigger" = %s
),
sides AS (
    SELECT l.id AS run_id, v.allocation_key AS allocation_key, 1 AS side
    FROM linked l JOIN {victim} v ON v.run_id = l.id
    UNION ALL
    SELECT l.id, v.allocation_key, 2
    FROM linked l JOIN {victim} v ON v.run_id = l.predicted_id
    WHERE NOT (l.ask <> '' AND l.predicted_kind = %s) OR v.ask = l.ask
),
differing AS (
    SELECT DISTINCT run_id FROM (
        SELECT run_id FROM sides GROUP BY run_id, allocation_key HAVING COUNT(*) <> 2
    ) one_sided
)
SELECT l.partition_id, l.kind, COUNT(*), SUM(CASE WHEN d.run_id IS NULL THEN 1 ELSE 0 END)
FROM linked l LEFT JOIN differing d ON d.run_id = l.id
GROUP BY l.partition_id, l.kind
ORDER BY l.partition_id, l.kind
"""


def agreement_counts() -> list[tuple[int, str, int, int]]:
    """(partition id, observed run kind, linked runs, of them agreeing), per partition and
    kind, as :func:`dashboard.services.runs.observed.compare` judges one run."""
    from django.db import connection

    ask = (
        "r.request ->> 'ask'"
        if connection.vendor == "postgresql"
        else "CAST(json_extract(r.request, '$.ask') AS TEXT)"
    )
    sql = _AGREEMENT_SQL.format(
        ask=ask,
        run=connection.ops.quote_name(Run._meta.db_table),
        victim=connection.ops.quote_name(models.RunVictim._meta.db_table),
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [Run.Trigger.OBSERVED, Run.Kind.ROUND])
        return [(int(p), str(k), int(n), int(a or 0)) for p, k, n, a in cursor.fetchall()]


def _agreement_metrics() -> Iterator[Metric]:
    """The predicted-versus-observed agreement of every linked observed run
    (:func:`agreement_counts`), per cluster, partition and kind."""
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
    names = {
        pk: (cluster, name)
        for pk, cluster, name in models.Partition.objects.values_list("pk", "cluster__name", "name")
    }
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for partition_id, kind, n_linked, n_agreed in agreement_counts():
        nature_kind = PREEMPTION_KINDS.get(kind, ("observed", str(kind)))[1]
        entry = counts[(*names[partition_id], nature_kind)]
        entry[0] += n_linked
        entry[1] += n_agreed
    for key in sorted(counts):
        n_predicted, n_agreed = counts[key]
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


def _latency_metrics() -> Iterator[Metric]:
    """Queued to finished, of the dashboard's own runs (observed runs have no latency)."""
    histogram = HistogramMetricFamily(
        f"{PREFIX}_run_latency_seconds",
        "Seconds from a run being queued to its answer (what-if, round, predicted), by kind.",
        labels=["kind"],
    )
    bounds = {
        f"le_{i}": Count("id", filter=Q(latency__lte=b)) for i, b in enumerate(LATENCY_BUCKETS)
    }
    rows = (
        Run.objects.filter(finished_at__isnull=False)
        .exclude(trigger=Run.Trigger.OBSERVED)
        .annotate(latency=SecondsBetween("queued_at", "finished_at"))
        .values("kind")
        .annotate(total=Count("id"), seconds=Sum("latency"), **bounds)
        .order_by("kind")
    )
    for row in rows:
        buckets = [(str(b), row[f"le_{i}"]) for i, b in enumerate(LATENCY_BUCKETS)]
        buckets.append(("+Inf", row["total"]))
        histogram.add_metric([row["kind"]], buckets, sum_value=float(row["seconds"] or 0.0))
    yield histogram


class SecondsBetween(Func):
    """Seconds from one datetime column to a later one, computed by the database itself
    (Django's own datetime subtraction calls a Python function per row on SQLite)."""

    template = "EXTRACT(EPOCH FROM (%(expressions)s))"
    arg_joiner = " - "
    output_field = FloatField()

    def __init__(self, start: str, end: str) -> None:
        super().__init__(F(end), F(start))

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        days = self.copy()
        days.set_source_expressions(
            [Func(e, function="julianday") for e in self.get_source_expressions()]
        )
        return days.as_sql(
            compiler, connection, template="((%(expressions)s) * 86400.0)", **extra_context
        )


class ScrapeDeadline(Exception):
    """The scrape ran past its deadline (``METRICS_DEADLINE_SECONDS``)."""


class DashboardCollector(Collector):
    """Reads every figure from the database when Prometheus scrapes; with a *deadline*
    (a ``time.monotonic()`` value), raises :class:`ScrapeDeadline` once past it."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline

    def collect(self) -> Iterator[Metric]:
        now = utcnow()
        parts: list[tuple[str, Callable[[], Iterator[Metric]]]] = [
            ("the quota timers", partial(_timer_metrics, now)),
            ("the usage ratios", _usage_metrics),
            ("the preemption counts", _preemption_metrics),
            ("the prediction agreement", _agreement_metrics),
            ("the sources", _source_metrics),
            ("the run latency", _latency_metrics),
        ]
        for name, part in parts:
            families = list(part())
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise ScrapeDeadline(name)
            yield from families
