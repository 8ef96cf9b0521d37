"""A queue's preemptions over time: per day and per node, predicted apart from observed.

A preemption here is a victim taken from the queue or a queue below it (its leaf,
else its queue, at or under the path) by a finished run of one of two natures
(:func:`dashboard.models.nature_of`): *predicted* (the dashboard's own timers: a
quota enforcement it computed; nothing happened in the cluster) or *observed* (the
scheduler's own preemption, read from its events). What-if runs are nobody's
preemptions and are left out. A run counts at its ``queued_at``: the firing of the
dashboard's timer, or the scheduler's event time.

Days are UTC days. The counts are grouped in the database (one query each, on the
runs' ``(partition, queued_at)`` index), so a month of runs costs one small answer.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import Count, Q, QuerySet
from django.db.models.functions import TruncDate

from dashboard import models
from dashboard.services.history.overtime import Window

Run = models.PreemptionRun
#: The natures counted (what-if runs are not preemptions).
NATURES = (Run.Nature.PREDICTED.value, Run.Nature.OBSERVED.value)
#: The time before the window's end (or now) over which victims are counted per node.
NODE_WINDOW = timedelta(hours=48)


@dataclass(frozen=True, slots=True)
class RunCount:
    """Runs and the victims they took, of one nature."""

    runs: int = 0
    victims: int = 0


@dataclass(frozen=True, slots=True)
class DayPreemptions:
    """One UTC day: predicted and observed preemptions of the queue."""

    day: date
    predicted: RunCount
    observed: RunCount


@dataclass(frozen=True, slots=True)
class NodePreemptions:
    """One node: the queue's victims on it, predicted and observed."""

    node: str
    predicted: int
    observed: int

    @property
    def total(self) -> int:
        return self.predicted + self.observed


def _subtree(path: str) -> Q:
    below = path + "."
    return (
        Q(leaf=path)
        | Q(leaf__startswith=below)
        | (Q(leaf="") & (Q(queue=path) | Q(queue__startswith=below)))
    )


#: The runs counted: the dashboard's own timers' (predicted) and the scheduler's (observed).
_COUNTED = (
    Q(trigger=Run.Trigger.OBSERVED)
    | Q(trigger=Run.Trigger.TIMER)
    | Q(kind=Run.Kind.QUOTA_ENFORCEMENT)
)


def counted_runs(partition: models.Partition) -> QuerySet[models.PreemptionRun]:
    """The partition's finished predicted and observed runs (what-ifs left out)."""
    return Run.objects.filter(_COUNTED, partition=partition, status=Run.Status.DONE).order_by()


def _victims(
    partition: models.Partition, path: str, since: datetime, until: datetime
) -> QuerySet[models.RunVictim]:
    """The queue's victims of finished predicted or observed runs queued in [since, until)."""
    counted = (
        Q(run__trigger=Run.Trigger.OBSERVED)
        | Q(run__trigger=Run.Trigger.TIMER)
        | Q(run__kind=Run.Kind.QUOTA_ENFORCEMENT)
    )
    victims = models.RunVictim.objects.filter(
        counted,
        run__partition=partition,
        run__status=Run.Status.DONE,
        run__queued_at__gte=since,
        run__queued_at__lt=until,
    ).order_by()
    return victims if path == "root" else victims.filter(_subtree(path))


def preemptions_per_day(
    partition: models.Partition, path: str, window: Window
) -> list[DayPreemptions]:
    """Every UTC day the window touches, in order, with the queue's preemptions of the day."""
    rows = (
        _victims(partition, path, window.start, window.end)
        .annotate(day=TruncDate("run__queued_at"))
        .values_list("day", "run__kind", "run__trigger")
        .annotate(victims=Count("id"), runs=Count("run", distinct=True))
    )
    counts: dict[tuple[date, str], tuple[int, int]] = defaultdict(lambda: (0, 0))
    for day, kind, trigger, victims, runs in rows:
        nature = models.nature_of(kind, trigger)
        was = counts[(day, nature)]
        # a run has one kind and trigger: its runs are counted in one group only
        counts[(day, nature)] = (was[0] + runs, was[1] + victims)
    out = []
    day = window.start.date()
    last = (window.end - timedelta(microseconds=1)).date()
    while day <= last:
        p = counts.get((day, Run.Nature.PREDICTED), (0, 0))
        o = counts.get((day, Run.Nature.OBSERVED), (0, 0))
        out.append(DayPreemptions(day, RunCount(*p), RunCount(*o)))
        day += timedelta(days=1)
    return out


def preemptions_per_node(
    partition: models.Partition, path: str, until: datetime, *, hours: timedelta = NODE_WINDOW
) -> tuple[Window, list[NodePreemptions]]:
    """The queue's victims per node in the *hours* before *until*: most first, then by name.

    A victim with no node known is counted under the empty name.
    """
    window = Window(until - hours, until)
    rows = (
        _victims(partition, path, window.start, window.end)
        .values_list("node", "run__kind", "run__trigger")
        .annotate(victims=Count("id"))
    )
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(NATURES, 0))
    for node, kind, trigger, victims in rows:
        counts[node][models.nature_of(kind, trigger)] += victims
    nodes = [
        NodePreemptions(node, c[Run.Nature.PREDICTED], c[Run.Nature.OBSERVED])
        for node, c in counts.items()
    ]
    nodes.sort(key=lambda n: (-n.total, n.node))
    return window, nodes
