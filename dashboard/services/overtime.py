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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from dashboard import models
from dashboard.services.clock import utcnow
from dashboard.services.errors import ServiceError

Resource = Mapping[str, int]

#: The longest window asked about; longer ones are refused as absurd.
MAX_WINDOW = timedelta(days=366)
#: The window when none is given: the 30 days before its end.
DEFAULT_WINDOW = timedelta(days=30)
#: How far past now a window may end (a day boundary ahead of the clock is fine).
FUTURE_SLACK = timedelta(days=1)
#: No window starts before this (the scheduler did not exist; a mistyped year).
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
#: The most points a step chart's series holds; beyond, it is resampled.
SERIES_POINTS = 1500


@dataclass(frozen=True, slots=True)
class Window:
    """A half-open window of time ``[start, end)``."""

    start: datetime
    end: datetime

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass(frozen=True, slots=True)
class QueueSpan:
    """A queue's figures as one snapshot held them, from *start* until *end*.

    ``end`` None: the newest snapshot's span, still open. ``present`` False: the
    snapshot had no such queue (its figures are then empty).
    """

    start: datetime
    end: datetime | None
    used: Resource = field(default_factory=dict)
    allocated: Resource = field(default_factory=dict)
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


def check_window(start: datetime | None, end: datetime | None, now: datetime) -> Window:
    """The window asked for, its defaults filled in (end: now; start: 30 days before end).

    Raises:
        ServiceError: naming ``start`` or ``end``: end not after start, a window
            longer than :data:`MAX_WINDOW`, a start before 2000, an end more than a
            day after now.
    """
    end = end or now
    start = start or end - DEFAULT_WINDOW
    if end > now + FUTURE_SLACK:
        raise ServiceError("end", f"{end.isoformat()} is more than a day after now")
    if start < EARLIEST:
        raise ServiceError("start", f"{start.isoformat()} is before {EARLIEST.date().isoformat()}")
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


def _clipped(
    spans: Sequence[QueueSpan], window: Window, until: datetime
) -> list[tuple[datetime, datetime, QueueSpan]]:
    """The spans' parts within the window, in time order; an open span ends at *until*."""
    out = []
    for span in sorted(spans, key=lambda s: s.start):
        begin = max(span.start, window.start)
        finish = min(span.end if span.end is not None else until, window.end)
        if finish > begin:
            out.append((begin, finish, span))
    return out


def _types(parts: Sequence[tuple[datetime, datetime, QueueSpan]]) -> list[str]:
    seen: set[str] = set()
    for _, _, s in parts:
        seen.update(s.used)
        seen.update(s.allocated)
        seen.update(s.guaranteed or {})
        seen.update(s.max or {})
    return sorted(seen)


def _type_figures(
    rtype: str, parts: Sequence[tuple[datetime, datetime, QueueSpan]], covered: float
) -> TypeFigures:
    used_time = guaranteed_time = share_time = max_time = above = 0.0
    for begin, finish, s in parts:
        if not s.present:
            continue
        seconds = (finish - begin).total_seconds()
        used = s.used.get(rtype, 0)
        used_time += used * seconds
        guaranteed = (s.guaranteed or {}).get(rtype)
        if guaranteed is not None and guaranteed > 0:
            # usage above the guaranteed uses all of it, no more
            guaranteed_time += seconds
            share_time += min(used, guaranteed) / guaranteed * seconds
        if s.max is not None and rtype in s.max:
            max_time += seconds
            if used > s.max[rtype]:
                above += seconds
    return TypeFigures(
        type=rtype,
        mean_used=used_time / covered if covered else 0.0,
        guaranteed_seconds=guaranteed_time,
        guaranteed_share=share_time / guaranteed_time if guaranteed_time else None,
        max_seconds=max_time,
        above_max_seconds=above,
    )


def _is_above_max(s: QueueSpan) -> bool:
    return s.present and any(s.used.get(t, 0) > q for t, q in (s.max or {}).items())


def _point(at: datetime, s: QueueSpan) -> SeriesPoint:
    return SeriesPoint(at, s.used, s.allocated, s.guaranteed, s.max, s.present)


def _series(
    parts: Sequence[tuple[datetime, datetime, QueueSpan]], window: Window, points: int
) -> tuple[tuple[SeriesPoint, ...], float | None]:
    """One point per change (equal neighbours merged), else the highest per interval."""
    steps: list[SeriesPoint] = []
    for begin, _, s in parts:
        p = _point(begin, s)
        last = steps[-1] if steps else None
        if last is not None and (
            last.used,
            last.allocated,
            last.guaranteed,
            last.max,
            last.present,
        ) == (p.used, p.allocated, p.guaranteed, p.max, p.present):
            continue
        steps.append(p)
    if len(steps) <= points:
        return tuple(steps), None
    step = window.seconds / points
    buckets: list[list[tuple[datetime, datetime, QueueSpan]]] = [[] for _ in range(points)]
    for part in parts:
        first = int((part[0] - window.start).total_seconds() // step)
        last_index = int(((part[1] - window.start).total_seconds() - 1e-6) // step)
        for i in range(max(first, 0), min(last_index, points - 1) + 1):
            buckets[i].append(part)
    out: list[SeriesPoint] = []
    for i, bucket in enumerate(buckets):
        if not bucket:
            continue
        at = window.start + timedelta(seconds=i * step)
        opening = bucket[0][2]
        present = [s for _, _, s in bucket if s.present]
        out.append(
            SeriesPoint(
                at=max(at, bucket[0][0]),
                used=_highest(s.used for s in present),
                allocated=_highest(s.allocated for s in present),
                guaranteed=opening.guaranteed,
                max=opening.max,
                present=bool(present),
            )
        )
    return tuple(out), step


def _highest(resources: Iterable[Resource]) -> dict[str, int]:
    out: dict[str, int] = {}
    for res in resources:
        for t, q in res.items():
            if q > out.get(t, q - 1):
                out[t] = q
    return out


def usage_over_time(
    spans: Sequence[QueueSpan],
    window: Window,
    now: datetime,
    *,
    points: int = SERIES_POINTS,
) -> UsageOverTime:
    """A queue's figures over *window* from its spans (open ones last until *now*).

    >>> from datetime import datetime, UTC
    >>> t = lambda h: datetime(2026, 1, 1, h, tzinfo=UTC)
    >>> spans = [QueueSpan(t(0), t(2), {"vcore": 5}, guaranteed={"vcore": 10}, max={"vcore": 8}),
    ...          QueueSpan(t(2), None, {"vcore": 9}, guaranteed={"vcore": 10}, max={"vcore": 8})]
    >>> v = usage_over_time(spans, Window(t(1), t(3)), now=t(5)).types[0]
    >>> (v.mean_used, v.guaranteed_share, v.above_max_seconds)
    (7.0, 0.7, 3600.0)
    """
    parts = _clipped(spans, window, min(now, window.end))
    covered = sum((f - b).total_seconds() for b, f, s in parts if s.present)
    types = tuple(_type_figures(t, parts, covered) for t in _types(parts))
    above_any = sum((f - b).total_seconds() for b, f, s in parts if _is_above_max(s))
    series, resampled = _series(parts, window, points)
    return UsageOverTime(
        window=window,
        covered_seconds=covered,
        above_max_any_seconds=above_any,
        types=types,
        series=series,
        resampled_seconds=resampled,
        snapshots=len(parts),
    )


def queue_spans(partition: models.Partition, path: str, window: Window) -> list[QueueSpan]:
    """The queue's spans overlapping *window*: the snapshots captured in it, and the one
    before its start (in force at the start).

    Two queries on indexes: the partition's snapshots by capture time, and the queue's
    row of each (by queue path and snapshot).
    """
    snapshots = models.ClusterSnapshot.objects.filter(partition=partition).order_by()
    before = list(
        snapshots.filter(captured_at__lte=window.start)
        .order_by("-captured_at", "-id")
        .values_list("id", "captured_at")[:1]
    )
    inside = list(
        snapshots.filter(captured_at__gt=window.start, captured_at__lt=window.end)
        .order_by("captured_at", "id")
        .values_list("id", "captured_at")
    )
    times = before + inside
    if not times:
        return []
    queue_rows = (
        models.SnapshotQueue.objects.filter(
            path=path,
            snapshot__partition=partition,
            snapshot__captured_at__gte=times[0][1],
            snapshot__captured_at__lt=window.end,
        )
        .order_by()
        .values_list("snapshot_id", "usage", "allocated", "guaranteed", "max")
    )
    rows = {row[0]: row[1:] for row in queue_rows}
    # the span after the window's last snapshot: when a later one exists, it ends there
    later = (
        snapshots.filter(captured_at__gte=window.end)
        .order_by("captured_at", "id")
        .values_list("captured_at", flat=True)
        .first()
    )
    out: list[QueueSpan] = []
    for i, (snapshot_id, at) in enumerate(times):
        end = times[i + 1][1] if i + 1 < len(times) else later
        row = rows.get(snapshot_id)
        if row is None:
            out.append(QueueSpan(at, end, present=False))
            continue
        used, allocated, guaranteed, maximum = row
        out.append(QueueSpan(at, end, used or {}, allocated or used or {}, guaranteed, maximum))
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
