"""Work lost to preemption, per queue and per day or week, by resource type.

Two sources, kept apart on every answer:

- **lost** (from the scheduler's resource history): the sum of the completed
  applications' ``resourceHistory.preemptedResource`` over every instance type, counted
  in the period the application finished (the scheduler adds a preempted allocation's
  resource times its seconds from bind to release, and reports it once the application is
  completed).  ``used`` is their ``resourceUsage`` the same way: the work that was not
  lost, for the share.
- **observed** (from the scheduler's events): the victims of the observed preemption
  runs (:mod:`dashboard.services.runs.observed`) in the period, by their queue, with the
  resources they held.  These are known when they happen, before their application
  completes.

Quantities stay the scheduler's (millicore-seconds, byte-seconds); pages and the CSV
turn them into hours with :func:`dashboard.display.work_unit`.  Periods are UTC days,
or ISO weeks starting on Monday.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Literal

from django.db.models import Q

from dashboard import models
from dashboard.access import scoping
from dashboard.access.acl import RECOVERY_QUEUE
from dashboard.access.grants import access_for
from dashboard.display import plain_work, work_unit
from dashboard.importers.snapshot.completed import CompletedRead, total
from dashboard.plumbing.clock import from_epoch, utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.services.runs.csv_export import csv_safe

if TYPE_CHECKING:
    from dashboard.plumbing.users import UserLike

Period = Literal["day", "week"]
PERIODS: tuple[Period, ...] = ("day", "week")

#: The longest window one answer covers (a year of days).
MAX_DAYS = 366


def record_completed(
    partition: models.Partition, read: CompletedRead, *, now: datetime | None = None
) -> int:
    """Store the completed applications of *read* not stored yet; returns how many were new.

    An application is stored once per partition, id and finish time: reading the same
    answer again (every poll, an upload of the same folder) adds nothing.
    """
    now = now or utcnow()
    if not read.applications:
        return 0
    # the answer's time span bounds what is read back (a poll reads the whole completed
    # list every time: thousands of ids would make a long IN list)
    known = set(
        models.CompletedApplication.objects.filter(
            partition=partition,
            finished_at__gte=from_epoch(min(a.finished for a in read.applications)),
            finished_at__lte=from_epoch(max(a.finished for a in read.applications)),
        ).values_list("app_id", "finished_at")
    )
    rows = [
        models.CompletedApplication(
            partition=partition,
            app_id=a.app_id[:255],
            queue=a.queue[:1000],
            state=a.state[:50],
            user=a.user[:255],
            submitted_at=from_epoch(a.submitted) if a.submitted else None,
            finished_at=from_epoch(a.finished),
            preempted=a.preempted,
            used=a.used,
            read_at=now,
        )
        for a in read.applications
        if (a.app_id, from_epoch(a.finished)) not in known
    ]
    # a concurrent reader of the same answer may have stored some meanwhile
    models.CompletedApplication.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return len(rows)


@dataclass
class WorkLostRow:
    """One period and queue: what was lost and what was observed."""

    period_start: date
    queue: str
    applications: int = 0
    applications_with_loss: int = 0
    lost: dict[str, int] = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    observed_victims: int = 0
    observed_resources: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class WorkLost:
    """The answer for one partition: rows by period then queue, and the types they name."""

    partition: models.Partition
    period: Period
    since: date | None
    until: date | None
    queue: str
    rows: tuple[WorkLostRow, ...]
    types: tuple[str, ...]

    def totals(self) -> dict[str, int]:
        """Lost quantity times seconds per type over every row."""
        out: dict[str, int] = {}
        for row in self.rows:
            _add(out, row.lost)
        return out


def period_start(moment: datetime, period: Period) -> date:
    """The first day of *moment*'s period (UTC): the day, or the Monday of its week.

    >>> period_start(datetime(2026, 9, 3, 23, 59, tzinfo=UTC), "week")
    datetime.date(2026, 8, 31)
    """
    day = moment.astimezone(UTC).date()
    return day - timedelta(days=day.weekday()) if period == "week" else day


def check_window(
    period: str, since: date | None, until: date | None
) -> tuple[Period, date | None, date | None]:
    """The period and window of a request, checked.

    Raises:
        ServiceError: an unknown period, ``since`` after ``until``, or a window longer
            than :data:`MAX_DAYS`.
    """
    if period not in PERIODS:
        raise ServiceError("period", f"must be one of {', '.join(PERIODS)}, not {period[:40]!r}")
    if since is not None and until is not None:
        if since > until:
            raise ServiceError("since", f"{since} is after until ({until})")
        if (until - since).days >= MAX_DAYS:
            raise ServiceError("until", f"the window is longer than {MAX_DAYS} days")
    kind: Period = "week" if period == "week" else "day"
    return kind, since, until


def _add(into: dict[str, int], res: Mapping[str, int]) -> None:
    for t, q in res.items():
        into[t] = into.get(t, 0) + int(q)


def _in_queue(column: str, queue: str) -> Q:
    """*queue* and every queue below it."""
    return Q(**{column: queue}) | Q(**{f"{column}__startswith": queue + "."})


def _bounds(since: date | None, until: date | None) -> tuple[datetime | None, datetime | None]:
    start = datetime.combine(since, time(), tzinfo=UTC) if since else None
    end = datetime.combine(until + timedelta(days=1), time(), tzinfo=UTC) if until else None
    return start, end


def work_lost(
    partition: models.Partition,
    *,
    period: str = "day",
    since: date | None = None,
    until: date | None = None,
    queue: str = "",
    user: UserLike = None,
) -> WorkLost:
    """The work lost to preemption in *partition*, per *period* and queue.

    Args:
        period: ``day`` or ``week``.
        since, until: the first and last day counted (UTC, both included); None for no bound.
        queue: only this queue and the queues below it; empty for every queue.
        user: whose queue ACLs narrow the rows to the queues it may view (None: all).

    Raises:
        ServiceError: see :func:`check_window`.
        QueueAccessDenied: *queue* is not one *user* may view (unknown ones alike).
    """
    kind, since, until = check_window(period, since, until)
    viewable = _viewable_rows(partition, user, queue)
    start, end = _bounds(since, until)
    apps = models.CompletedApplication.objects.filter(partition=partition)
    victims = models.RunVictim.objects.filter(
        run__partition=partition, run__trigger=models.PreemptionRun.Trigger.OBSERVED
    )
    if start is not None:
        apps = apps.filter(finished_at__gte=start)
        victims = victims.filter(run__queued_at__gte=start)
    if end is not None:
        apps = apps.filter(finished_at__lt=end)
        victims = victims.filter(run__queued_at__lt=end)
    if queue:
        apps = apps.filter(_in_queue("queue", queue))
        victims = victims.filter(_in_queue("queue", queue))
    if viewable is not None:
        apps = apps.filter(viewable)
        victims = victims.filter(viewable)
    rows: dict[tuple[date, str], WorkLostRow] = {}

    def row(moment: datetime, q: str) -> WorkLostRow:
        key = (period_start(moment, kind), q)
        if key not in rows:
            rows[key] = WorkLostRow(period_start=key[0], queue=q)
        return rows[key]

    types: set[str] = set()
    for finished, q, preempted, used in apps.values_list(
        "finished_at", "queue", "preempted", "used"
    ).iterator(chunk_size=2000):
        r = row(finished, q)
        lost = total(preempted or {})
        r.applications += 1
        r.applications_with_loss += 1 if any(lost.values()) else 0
        _add(r.lost, lost)
        _add(r.used, total(used or {}))
        types.update(lost)
    for at, q, held in victims.values_list("run__queued_at", "queue", "resources").iterator(
        chunk_size=2000
    ):
        r = row(at, q)
        r.observed_victims += 1
        _add(r.observed_resources, held if isinstance(held, Mapping) else {})
    ordered = tuple(rows[k] for k in sorted(rows))
    return WorkLost(partition, kind, since, until, queue, ordered, tuple(sorted(types)))


def _viewable_rows(partition: models.Partition, user: UserLike, queue: str) -> Q | None:
    """The rows' filter to the queues *user* may view in *partition* (None: every row);
    a *queue* it may not view is refused as an unknown one is."""
    if user is None or not scoping.is_tenant(user):
        return None
    if queue:
        scoping.require_view(user, partition, queue)
    q = Q(pk__in=[])
    for root in scoping.granted_roots(access_for(user, partition)):
        q |= _in_queue("queue", root)
    return q & ~Q(queue=RECOVERY_QUEUE)


#: The CSV's fixed columns; one ``lost <type> (<unit>)`` column per type follows.
WORK_LOST_CSV_COLUMNS = (
    "period_start",
    "period",
    "cluster",
    "partition",
    "queue",
    "completed_applications",
    "applications_with_lost_work",
    "observed_victims",
)


class _Line:
    def write(self, value: str) -> str:
        return value


def work_lost_csv_lines(answer: WorkLost) -> Iterator[str]:
    """The header and one line per row of *answer*: each type's lost work in its own
    column, in the pages' units (core-hours, GiB-hours, hours)."""
    writer = csv.writer(_Line())
    headers = [f"lost {t} ({work_unit(t)[0]})" for t in answer.types]
    yield writer.writerow([*WORK_LOST_CSV_COLUMNS, *headers])
    for r in answer.rows:
        cells: list[object] = [
            r.period_start.isoformat(),
            answer.period,
            answer.partition.cluster.name,
            answer.partition.name,
            r.queue,
            r.applications,
            r.applications_with_loss,
            r.observed_victims,
        ]
        cells.extend(plain_work(t, r.lost[t]) if t in r.lost else "0" for t in answer.types)
        yield writer.writerow([csv_safe(c) if isinstance(c, str) else c for c in cells])


def queues_of(answer: WorkLost) -> list[str]:
    """The queues the answer's rows name, sorted."""
    return sorted({r.queue for r in answer.rows})


def lost_by_queue(answer: WorkLost, rtype: str) -> dict[str, dict[date, int]]:
    """queue -> period start -> lost quantity times seconds of *rtype* (for a chart)."""
    out: dict[str, dict[date, int]] = {}
    for r in answer.rows:
        if r.lost.get(rtype):
            out.setdefault(r.queue, {})[r.period_start] = r.lost[rtype]
    return out


def periods_of(rows: Iterable[WorkLostRow]) -> list[date]:
    return sorted({r.period_start for r in rows})
