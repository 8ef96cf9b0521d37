"""One queue over a window of time: its usage against its guaranteed and max.

Every stored snapshot keeps each queue's figures as the scheduler reported them
(:class:`~dashboard.models.SnapshotQueue`: ``usage`` = allocated - preempting,
``allocated``, ``guaranteed``, ``max``). Read over time, a snapshot's figures hold
from its capture until the next snapshot of the partition: a *queue span*. The
newest snapshot's span is open (the poller stores no snapshot while nothing
changes), and is taken to last until the end of the window or now, whichever comes
first. A snapshot without the queue is a span where the queue was absent: no usage,
no limits.

From the spans clipped to a window ``[start, end)`` this module computes, per
resource type, the time-weighted mean used, the time-weighted share of the
guaranteed used (usage above the guaranteed counts as all of it), the time spent
above the max, and a series for a step chart of used, allocated, guaranteed and max.
The guaranteed and max are those the scheduler reported with each snapshot: the
limits in force then, whichever config version set them.

The arithmetic (:func:`usage_over_time`) takes plain spans; :func:`queue_spans`
reads them from the rows (two indexed queries, whatever the churn of allocations).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any, NamedTuple

import msgspec
from django.db import connection
from django.db.models import FilteredRelation, FloatField, Func, Max, Min, Q, TextField
from django.db.models.functions import Cast

from dashboard import models
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError

Resource = Mapping[str, int]

#: The longest window asked about; longer ones are refused as absurd.
MAX_WINDOW = timedelta(days=366)
#: The window when only its end is given: the 30 days before it (without either, the
#: window is the data's: :func:`~dashboard.services.history.overtime_report.data_window`).
DEFAULT_WINDOW = timedelta(days=30)
#: How far past now a window may end (a day boundary ahead of the clock is fine).
FUTURE_SLACK = timedelta(days=1)
#: No window starts before this (the scheduler did not exist; a mistyped year).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
#: The most points a step chart's series holds; beyond, it is resampled.
SERIES_POINTS = 1500
#: No resources (shared by the spans of absent queues; never changed).
_NONE: Resource = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open window of time ``[start, end)``."""

    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


class QueueSpan(NamedTuple):
    """A queue's figures as one snapshot held them, from *start* until *end*.

    Times are epoch seconds (UTC): a month of spans is read and summed without a
    datetime per snapshot. ``end`` None: the newest snapshot's span, still open.
    ``present`` False: the snapshot had no such queue (its figures are then empty).
    """

    start: float
    end: float | None
    used: Resource = _NONE
    allocated: Resource = _NONE
    guaranteed: Resource | None = None
    max: Resource | None = None
    present: bool = True


@dataclass(frozen=True, slots=True)
class TypeFigures:
    """One resource type of a queue over a window (seconds and quantities).

    ``guaranteed_share`` is None when the type had no guaranteed above 0 at any time
    of the window; ``max_seconds`` is the time a max of the type was defined.
    """

    type: str
    mean_used: float
    guaranteed_seconds: float
    guaranteed_share: float | None
    max_seconds: float
    above_max_seconds: float


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """A step of the chart: figures from *at* until the next point (or the window's end).

    When the series is resampled, ``used`` and ``allocated`` are the highest of the
    interval per type and the limits those in force at its start.
    """

    at: datetime
    used: Resource
    allocated: Resource
    guaranteed: Resource | None
    max: Resource | None
    present: bool


@dataclass(frozen=True, slots=True)
class UsageOverTime:
    """A queue's usage against its limits over a window."""

    window: Window
    #: the time within the window with a snapshot holding the queue
    covered_seconds: float
    #: the time any type's usage was above its max
    above_max_any_seconds: float
    types: tuple[TypeFigures, ...]
    series: tuple[SeriesPoint, ...]
    #: the interval of a resampled series in seconds (None: every change is a point)
    resampled_seconds: float | None
    snapshots: int
    #: where the last span ends: the next snapshot's capture, the window's end or the
    #: data's end, whichever is first (the window's start when no span is in it)
    until: datetime
    #: True when the window's data is one instant (a single snapshot, the data ending at
    #: its capture): the figures are that snapshot's, and no time is counted
    is_instant: bool = False


def check_window(start: datetime | None, end: datetime | None, now: datetime) -> Window:
    """The window asked for, its defaults filled in (end: now; start: 30 days before end).

    Raises:
        ServiceError: naming ``start`` or ``end``: end not after start, a window
            longer than :data:`MAX_WINDOW`, a start before 2000, an end more than a
            day after now.
    """
    try:
        return _checked(start, end, now)
    except OverflowError:  # a time near year 1 or 9999 with an offset
        raise ServiceError(
            "start" if start is not None else "end", "out of the range of dates"
        ) from None


def _checked(start: datetime | None, end: datetime | None, now: datetime) -> Window:
    if end is not None and end < EARLIEST:
        raise ServiceError("end", f"{end.isoformat()} is before {EARLIEST.date().isoformat()}")
    if start is not None and start < EARLIEST:
        raise ServiceError("start", f"{start.isoformat()} is before {EARLIEST.date().isoformat()}")
    if end is None and start is not None and start >= now:
        raise ServiceError("start", f"{start.isoformat()} is not before the window's end (now)")
    end = end or now
    start = start or end - DEFAULT_WINDOW
    if end > now + FUTURE_SLACK:
        raise ServiceError("end", f"{end.isoformat()} is more than a day after now")
    if end <= start:
        raise ServiceError("end", f"must be after start ({start.isoformat()})")
    if end - start > MAX_WINDOW:
        days = (end - start).total_seconds() / 86400
        raise ServiceError(
            "start", f"the window is {days:.1f} days long; at most {MAX_WINDOW.days} days"
        )
    return Window(start, end)


def parse_instant(text: str | None, name: str) -> datetime | None:
    """An ISO 8601 date or date and time (UTC when it names no offset); None for none.

    Raises:
        ServiceError: naming *name* when the text is no such time.
    """
    if text is None or not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise ServiceError(
            name, f"{text[:40]!r} is not an ISO 8601 time (e.g. 2026-11-01T00:00:00Z)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


#: A span clipped to the window: (begin, finish) in epoch seconds, and the span.
_Part = tuple[float, float, QueueSpan]


def _clipped(spans: Sequence[QueueSpan], window: Window, until: datetime) -> list[_Part]:
    """The spans' parts within the window, in time order; an open span ends at *until*.

    The open span is kept when it ends where it starts (the data ends at the newest
    snapshot's capture): its figures are the data's last, at one instant.
    """
    low, high = window.start.timestamp(), window.end.timestamp()
    last = min(until.timestamp(), high)
    out = []
    for span in sorted(spans, key=lambda s: s.start):
        begin = span.start if span.start > low else low
        finish = span.end if span.end is not None else last
        if finish > high:
            finish = high
        if finish > begin or (span.end is None and finish == begin and begin < high):
            out.append((begin, finish, span))
    return out


@dataclass(frozen=True, slots=True)
class _Sums:
    """Per type sums over the parts of a window (seconds, quantity x seconds)."""

    used: dict[str, float]
    guaranteed: dict[str, float]
    share: dict[str, float]
    max: dict[str, float]
    above: dict[str, float]
    types: set[str]
    covered: float
    above_any: float

    def figures(self, rtype: str) -> TypeFigures:
        guaranteed = self.guaranteed.get(rtype, 0.0)
        return TypeFigures(
            type=rtype,
            mean_used=self.used.get(rtype, 0.0) / self.covered if self.covered else 0.0,
            guaranteed_seconds=guaranteed,
            guaranteed_share=self.share[rtype] / guaranteed if guaranteed else None,
            max_seconds=self.max.get(rtype, 0.0),
            above_max_seconds=self.above.get(rtype, 0.0),
        )


def _sums(parts: Sequence[_Part]) -> _Sums:
    """One pass over a month of parts (the loop is the hot path: locals, no calls)."""
    used_sum: dict[str, float] = {}
    guaranteed_sum: dict[str, float] = {}
    share_sum: dict[str, float] = {}
    max_sum: dict[str, float] = {}
    above_sum: dict[str, float] = {}
    types: set[str] = set()
    limits: tuple[object, object] = (None, None)
    covered = above_any = 0.0
    for begin, finish, s in parts:
        types.update(s.used)
        if s.allocated is not s.used:
            types.update(s.allocated)
        # the limits change seldom, and equal maps are one object (see _Decoder)
        if s.guaranteed is not limits[0] or s.max is not limits[1]:
            limits = (s.guaranteed, s.max)
            types.update(s.guaranteed or ())
            types.update(s.max or ())
        if not s.present:
            continue
        seconds = finish - begin
        covered += seconds
        used = s.used
        for t, q in used.items():
            used_sum[t] = used_sum.get(t, 0.0) + q * seconds
        if s.guaranteed:
            for t, g in s.guaranteed.items():
                if g > 0:  # usage above the guaranteed uses all of it, no more
                    guaranteed_sum[t] = guaranteed_sum.get(t, 0.0) + seconds
                    q = used.get(t, 0)
                    share_sum[t] = share_sum.get(t, 0.0) + (q if q < g else g) / g * seconds
        if s.max:
            is_above = False
            for t, m in s.max.items():
                max_sum[t] = max_sum.get(t, 0.0) + seconds
                if used.get(t, 0) > m:
                    above_sum[t] = above_sum.get(t, 0.0) + seconds
                    is_above = True
            if is_above:
                above_any += seconds
    return _Sums(used_sum, guaranteed_sum, share_sum, max_sum, above_sum, types, covered, above_any)


def _instant(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def _figures_of(s: QueueSpan) -> tuple[object, ...]:
    return (s.used, s.allocated, s.guaranteed, s.max, s.present)


def _series(
    parts: Sequence[_Part], window: Window, points: int
) -> tuple[tuple[SeriesPoint, ...], float | None]:
    """One point per change (equal neighbours merged), else the highest per interval."""
    changes: list[int] = []
    last: tuple[object, ...] | None = None
    for i, (_, _, s) in enumerate(parts):
        figures = _figures_of(s)
        if figures != last:  # the rows' maps are shared when equal: mostly an identity test
            changes.append(i)
            last = figures
            if len(changes) > points:
                break  # resampled: the rest need not be counted
    if len(changes) <= points:
        return tuple(
            SeriesPoint(_instant(parts[i][0]), s.used, s.allocated, s.guaranteed, s.max, s.present)
            for i in changes
            for s in (parts[i][2],)
        ), None
    low = window.start.timestamp()
    step = window.seconds / points
    buckets: dict[int, list[_Part]] = {}
    for part in parts:
        first = int((part[0] - low) // step)
        final = min(int((part[1] - low) // step), points - 1)
        if final > first and (part[1] - low) % step == 0:
            final -= 1  # a part ending on a boundary does not reach into the next interval
        if final == first:
            buckets.setdefault(first, []).append(part)
            continue
        for i in range(max(first, 0), final + 1):
            buckets.setdefault(i, []).append(part)
    out: list[SeriesPoint] = []
    for i in sorted(buckets):
        bucket = buckets[i]
        opening = bucket[0][2]
        present = [s for _, _, s in bucket if s.present]
        used = _highest([s.used for s in present])
        is_used = all(s.allocated is s.used for s in present)  # nothing being preempted
        out.append(
            SeriesPoint(
                at=_instant(max(low + i * step, bucket[0][0])),
                used=used,
                allocated=used if is_used else _highest([s.allocated for s in present]),
                guaranteed=opening.guaranteed,
                max=opening.max,
                present=bool(present),
            )
        )
    return tuple(out), step


def _highest(resources: Sequence[Resource]) -> dict[str, int]:
    """Per type, the highest quantity of *resources* (types absent from all left out)."""
    types: set[str] = set()
    last: Resource | None = None
    for res in resources:
        if res is not last:
            types.update(res)
            last = res
    return {t: max(res.get(t, 0) for res in resources) for t in types}


def usage_over_time(
    spans: Sequence[QueueSpan],
    window: Window,
    now: datetime,
    *,
    points: int = SERIES_POINTS,
) -> UsageOverTime:
    """A queue's figures over *window* from its spans (open ones last until *now*: the
    data's end).

    >>> from datetime import datetime, UTC
    >>> t = lambda h: datetime(2026, 1, 1, h, tzinfo=UTC)
    >>> s = lambda h: t(h).timestamp()
    >>> spans = [QueueSpan(s(0), s(2), {"vcore": 5}, guaranteed={"vcore": 10}, max={"vcore": 8}),
    ...          QueueSpan(s(2), None, {"vcore": 9}, guaranteed={"vcore": 10}, max={"vcore": 8})]
    >>> v = usage_over_time(spans, Window(t(1), t(3)), now=t(5)).types[0]
    >>> (v.mean_used, v.guaranteed_share, v.above_max_seconds)
    (7.0, 0.7, 3600.0)
    """
    parts = _clipped(spans, window, min(now, window.end))
    sums = _sums(parts)
    series, resampled = _series(parts, window, points)
    is_instant = bool(parts) and sums.covered == 0 and any(s.present for _, _, s in parts)
    if is_instant:
        # one instant: the figures at it (as if it lasted a second), no time counted
        at = _sums([(b, b + 1.0, s) for b, _, s in parts[-1:]])
        types = tuple(
            TypeFigures(t, f.mean_used, 0.0, f.guaranteed_share, 0.0, 0.0)
            for t in sorted(at.types)
            for f in (at.figures(t),)
        )
    else:
        types = tuple(sums.figures(t) for t in sorted(sums.types))
    return UsageOverTime(
        window=window,
        covered_seconds=sums.covered,
        above_max_any_seconds=sums.above_any,
        types=types,
        series=series,
        resampled_seconds=resampled,
        snapshots=len(parts),
        until=_instant(parts[-1][1]) if parts else window.start,
        is_instant=is_instant,
    )


def _decoded(texts: set[str | None]) -> dict[str | None, Resource | None]:
    """Each distinct JSON text -> its resource map, decoded once (a month of snapshots
    repeats the same limits thousands of times: equal maps are then one object). SQL
    NULL and a JSON null are None."""
    out: dict[str | None, Resource | None] = {None: None}
    for text in texts:
        if text is not None:
            value = msgspec.json.decode(text)
            out[text] = value if isinstance(value, dict) else None
    return out


class _Epoch(Func):
    """A datetime column as epoch seconds (a float): no datetime built per row."""

    template = "EXTRACT(EPOCH FROM %(expressions)s)::double precision"
    output_field = FloatField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra_context: Any) -> Any:
        # whole seconds, then the stored fraction (".ffffff" after "YYYY-MM-DD HH:MM:SS"):
        # exact, where julianday() is off by microseconds
        inner, params = compiler.compile(self.source_expressions[0])
        sql = f"(CAST(strftime('%%s', {inner}) AS REAL) + CAST(substr({inner}, 20) AS REAL))"
        return sql, [*params, *params]


def queue_spans(partition: models.Partition, path: str, window: Window) -> list[QueueSpan]:
    """The queue's spans overlapping *window*: the snapshots captured in it, and the one
    before its start (in force at the start).

    One query for the month's rows: the partition's snapshots by capture time (its
    index), each joined to the queue's row (the ``(path, snapshot)`` index), read
    without Django's rows: times as epoch seconds, the JSON columns as text decoded
    once per distinct text.
    """
    snapshots = models.ClusterSnapshot.objects.filter(partition=partition).order_by()
    since = (
        snapshots.filter(captured_at__lte=window.start)
        .order_by("-captured_at", "-id")
        .values_list("captured_at", flat=True)
        .first()
    ) or window.start
    in_window = snapshots.filter(captured_at__gte=since, captured_at__lt=window.end)
    # the ids of the window's snapshots bound the queue's rows read on the (path,
    # snapshot) index: a year of them stays out of a month's query
    ids = in_window.aggregate(low=Min("id"), high=Max("id"))
    if ids["low"] is None:
        return []
    on_row = Q(
        queues__path=path, queues__snapshot_id__gte=ids["low"], queues__snapshot_id__lte=ids["high"]
    )
    rows = (
        in_window.annotate(row=FilteredRelation("queues", condition=on_row))
        .annotate(
            at=_Epoch("captured_at"),
            usage_text=Cast("row__usage", TextField()),
            allocated_text=Cast("row__allocated", TextField()),
            guaranteed_text=Cast("row__guaranteed", TextField()),
            max_text=Cast("row__max", TextField()),
        )
        .values_list(
            "at", "id", "row__id", "usage_text", "allocated_text", "guaranteed_text", "max_text"
        )
    )
    # the span after the window's last snapshot: when a later one exists, it ends there
    later = (
        snapshots.filter(captured_at__gte=window.end)
        .order_by("captured_at", "id")
        .values_list("captured_at", flat=True)
        .first()
    )
    sql, params = rows.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchall()
    found.sort(key=lambda r: (r[0], r[1]))  # here: the database would sort the JSON too
    texts: set[str | None] = set()
    for row in found:
        texts.update(row[3:])
    maps = _decoded(texts)
    out: list[QueueSpan] = []
    end = later.timestamp() if later is not None else None
    for at, _, row_id, used, allocated, guaranteed, maximum in reversed(found):
        if row_id is None:
            out.append(QueueSpan(at, end, present=False))
        else:
            used_map = maps[used] or {}
            held = maps[allocated] or used_map
            out.append(QueueSpan(at, end, used_map, held, maps[guaranteed], maps[maximum]))
        end = at
    out.reverse()
    return out


def queue_usage_over_time(
    partition: models.Partition,
    path: str,
    window: Window,
    now: datetime | None = None,
) -> UsageOverTime:
    """The queue's usage against its guaranteed and max over *window*.

    Raises:
        ServiceError: naming ``queue`` when neither the window nor the partition's
            newest snapshot holds it.
    """
    now = now or utcnow()
    spans = queue_spans(partition, path, window)
    if not any(s.present for s in spans) and not _in_newest_snapshot(partition, path):
        raise ServiceError(
            "queue",
            f"no queue {path[:200]!r} in partition {partition.name!r}: neither a snapshot "
            "of the window nor the newest snapshot holds it",
        )
    return usage_over_time(spans, window, now)


def _in_newest_snapshot(partition: models.Partition, path: str) -> bool:
    newest = (
        models.ClusterSnapshot.objects.filter(partition=partition)
        .order_by("-captured_at", "-id")
        .values_list("id", flat=True)
        .first()
    )
    return (
        newest is not None
        and models.SnapshotQueue.objects.filter(snapshot_id=newest, path=path).exists()
    )
