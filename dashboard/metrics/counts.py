"""The counts of the run history that ``/metrics`` exposes, read two ways.

- :func:`from_tallies`: the tally tables PostgreSQL's triggers keep in the same
  transaction as every write of a run or victim (migration 0034); a few rows per
  partition, queue or kind, whatever the length of the history.  What a scrape reads.
- :func:`from_history`: the same counts computed from every run and victim, by grouped
  SQL.  What a scrape reads on SQLite (no triggers there), and the reference the tallies
  are checked against (tests; ``manage.py recount_metrics --check``).

Both answer the same :class:`HistoryCounts`, rows in the same order.

The triggers count each write's own rows: a run's counted state (finished, its kind,
queue, partition) and its victims are written in one transaction by the services (a
run finishes with its victims; an observed run is stored done).  Two transactions
touching the same linked observed run take turns on a lock of its partition, so its
agreement is judged on both.  ``manage.py recount_metrics --check`` shows any drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, F, FloatField, Func, Q, Sum

from dashboard import models

Run = models.PreemptionRun

#: Upper bounds (seconds) of the run latency histogram's buckets (frozen in migration
#: 0034's ``dashboard_latency_bucket``: a change needs a migration).
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)

#: (kind, trigger) of the runs counted as preemptions: predicted (the dashboard's own
#: timers) and observed (the scheduler's, read from its events), quota or inter-queue
#: (frozen in migration 0034 too).
PREEMPTION_KINDS: dict[str, tuple[str, str]] = {
    Run.Kind.QUOTA_ENFORCEMENT: ("predicted", "quota"),
    Run.Kind.QUOTA: ("observed", "quota"),
    Run.Kind.PREEMPT: ("observed", "inter_queue"),
}


@dataclass(frozen=True)
class Preemptions:
    """Finished preemption runs of one partition, queue and kind, and their victims."""

    partition_id: int
    queue: str
    kind: str
    runs: int
    victims: int


@dataclass(frozen=True)
class Agreement:
    """Observed runs of one partition and kind linked to a prediction, and of them
    those that took exactly the predicted victims."""

    partition_id: int
    kind: str
    linked: int
    agreed: int


@dataclass(frozen=True)
class Latency:
    """Finished runs of one kind (not observed): how many, how many took at most each
    bound of :data:`LATENCY_BUCKETS` (cumulative), and their seconds in all."""

    kind: str
    runs: int
    at_most: tuple[int, ...]
    seconds: float


@dataclass(frozen=True)
class HistoryCounts:
    preemptions: list[Preemptions]
    agreement: list[Agreement]
    latency: list[Latency]


def tallied() -> bool:
    """Whether this database keeps the tallies (PostgreSQL: migration 0034's triggers)."""
    return connection.vendor == "postgresql"


# ------------------------------------------------------------------ from the tallies


def from_tallies() -> HistoryCounts:
    """The counts as the triggers keep them: rows per partition, queue and kind."""
    preemptions = [
        Preemptions(*row)
        for row in models.PreemptionTally.objects.filter(runs__gt=0)
        .order_by("partition_id", "queue", "kind")
        .values_list("partition_id", "queue", "kind", "runs", "victims")
    ]
    agreement = [
        Agreement(*row)
        for row in models.AgreementTally.objects.filter(linked__gt=0)
        .order_by("partition_id", "kind")
        .values_list("partition_id", "kind", "linked", "agreed")
    ]
    buckets: dict[str, list[int]] = {}
    seconds: dict[str, Decimal] = {}
    with connection.cursor() as cursor:
        # the seconds are added up by the database, exactly (numeric), as the history's sum
        cursor.execute(
            "SELECT kind, bucket, runs, SUM(seconds) OVER (PARTITION BY kind) "
            f"FROM {models.RunLatencyTally._meta.db_table} WHERE runs > 0 ORDER BY kind, bucket"
        )
        for kind, bucket, runs, total in cursor.fetchall():
            counts = buckets.setdefault(kind, [0] * (len(LATENCY_BUCKETS) + 1))
            counts[bucket] += runs
            seconds[kind] = total
    latency = []
    for kind, counts in buckets.items():
        at_most = tuple(sum(counts[: i + 1]) for i in range(len(LATENCY_BUCKETS)))
        latency.append(Latency(kind, sum(counts), at_most, float(seconds[kind] or 0.0)))
    return HistoryCounts(preemptions, agreement, latency)


# ------------------------------------------------------------------ from the history


def from_history() -> HistoryCounts:
    """The counts computed from every finished run and victim (grouped SQL)."""
    return HistoryCounts(_preemptions(), agreement_counts(), _latency())


def _preemptions() -> list[Preemptions]:
    done = Run.objects.filter(kind__in=list(PREEMPTION_KINDS), status=Run.Status.DONE)
    # two plain grouped counts (runs; victims joined to their run): a count of distinct
    # runs over the runs-victims join sorted every victim
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
    return [
        Preemptions(partition_id, queue, kind, n, taken.get((partition_id, queue, kind), 0))
        for partition_id, queue, kind, n in counts
    ]


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


def agreement_counts() -> list[Agreement]:
    """Linked observed runs and of them agreeing, per partition and observed run kind,
    as :func:`dashboard.services.runs.observed.compare` judges one run."""
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
        return [Agreement(int(p), str(k), int(n), int(a or 0)) for p, k, n, a in cursor.fetchall()]


def _latency() -> list[Latency]:
    """Queued to finished, of the dashboard's own runs (observed runs have no latency)."""
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
    return [
        Latency(
            row["kind"],
            row["total"],
            tuple(row[f"le_{i}"] for i in range(len(LATENCY_BUCKETS))),
            float(row["seconds"] or 0.0),
        )
        for row in rows
    ]


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


# ------------------------------------------------------------------ upkeep


def recount() -> None:
    """Rebuild the tallies from the history (PostgreSQL), writers held off meanwhile.

    Never needed while the triggers run (they keep the tallies in every write's
    transaction); for an operator who changed rows with the triggers disabled.
    """
    if not tallied():
        return
    tables = ", ".join(connection.ops.quote_name(m._meta.db_table) for m in (Run, models.RunVictim))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {tables} IN SHARE ROW EXCLUSIVE MODE")
        # fresh statistics first: without them (a table just filled in bulk) the
        # recount's joins were planned as scans, minutes instead of a second or two
        cursor.execute(f"ANALYZE {tables}")
        cursor.execute("SELECT dashboard_recount_metrics()")


def differences() -> list[str]:
    """Where the tallies differ from the history's counts (empty: they agree)."""
    if not tallied():
        return []
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost:  # both read from one snapshot, whatever is written meanwhile
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        kept, counted = from_tallies(), from_history()
    out = []
    for field in ("preemptions", "agreement", "latency"):
        a, b = getattr(kept, field), getattr(counted, field)
        for row in sorted(set(map(repr, a)) ^ set(map(repr, b))):
            side = "tallied" if any(repr(r) == row for r in a) else "history"
            out.append(f"{field}: only {side}: {row}")
    return out
