"""A queue over time as the API and the page ask for it: request values checked, one answer.

Puts together :mod:`dashboard.services.history.overtime` (usage against guaranteed and max)
and :mod:`dashboard.services.history.overtime_preemptions` (preemptions per day, per node
over the last 48 hours) for one partition, queue and window, every bad value
refused naming its parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from dashboard import models
from dashboard.names import name_problem
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.services.history.overtime import (
    MAX_WINDOW,
    UsageOverTime,
    Window,
    check_window,
    parse_instant,
    queue_usage_over_time,
)
from dashboard.services.history.overtime_preemptions import (
    DayPreemptions,
    NodePreemptions,
    counted_runs,
    preemptions_per_day,
    preemptions_per_node,
)
from dashboard.services.scope.cluster_choice import find_partition


@dataclass(frozen=True, slots=True)
class QueueOverTime:
    """One queue of one partition over a window: usage, and preemptions by day and node."""

    partition: models.Partition
    queue: str
    usage: UsageOverTime
    days: tuple[DayPreemptions, ...]
    #: the 48 hours before the window's end (or now, when the window ends later)
    node_window: Window
    nodes: tuple[NodePreemptions, ...]
    #: the partition's data: its first snapshot or counted run to where they end
    #: (None: nothing stored); the newest snapshot's figures hold until its end
    data: DataExtent | None
    #: True when no window was asked for and the data's (whole UTC days) is shown
    is_data_window: bool


@dataclass(frozen=True, slots=True)
class DataExtent:
    """The time a partition's stored data speaks of, and what ends it."""

    start: datetime
    end: datetime
    #: what sets the end: "snapshot" (the newest capture), "run" (a predicted or
    #: observed run after it) or "source" (the live source's last successful poll)
    end_by: str


def data_extent(partition: models.Partition, now: datetime) -> DataExtent | None:
    """From the partition's first snapshot (or predicted or observed run, whichever is
    earlier) to the last instant its data speaks of: the newest snapshot's capture, a
    later run, or, when a live source follows the partition, its last successful poll
    (the poller stores no snapshot while nothing changes). Never after *now*."""
    snapshots = models.ClusterSnapshot.objects.filter(partition=partition).order_by()
    runs = counted_runs(partition)
    first = [
        t
        for t in (
            snapshots.order_by("captured_at").values_list("captured_at", flat=True).first(),
            runs.order_by("queued_at").values_list("queued_at", flat=True).first(),
        )
        if t is not None
    ]
    if not first:
        return None
    ends = [
        (t, by)
        for t, by in (
            (
                snapshots.order_by("-captured_at").values_list("captured_at", flat=True).first(),
                "snapshot",
            ),
            (runs.order_by("-queued_at").values_list("queued_at", flat=True).first(), "run"),
            (_source_polled(partition), "source"),
        )
        if t is not None
    ]
    end, by = max(ends, key=lambda e: (e[0], e[1] == "snapshot"))
    start = min(first)
    return DataExtent(min(start, now), max(min(end, now), min(start, now)), by)


def _source_polled(partition: models.Partition) -> datetime | None:
    """The last successful poll of the live source following *partition*, if any."""
    from dashboard.sources.models import ClusterSource  # sources build on services

    return (
        ClusterSource.objects.filter(cluster_id=partition.cluster_id, partition=partition.name)
        .values_list("last_success_at", flat=True)
        .first()
    )


def data_window(extent: DataExtent) -> Window:
    """The window shown when none is asked for: the whole UTC days the data spans (the
    preemptions are counted by UTC day), the last :data:`MAX_WINDOW` of them at most."""
    midnight = datetime.combine(extent.end.date(), datetime.min.time(), UTC)
    end = midnight + timedelta(days=1)
    start = datetime.combine(extent.start.date(), datetime.min.time(), UTC)
    return Window(max(start, end - MAX_WINDOW), end)


def check_queue_path(path: str | None) -> str:
    """*path* when it can name a queue; else a :class:`ServiceError` naming ``queue``."""
    if path is None or path == "":
        raise ServiceError("queue", "name the queue (its full path, e.g. root.team)")
    problem = name_problem("queue path", path)
    if problem is None and path != "root" and not path.startswith("root."):
        problem = f"{path[:60]!r} is not a full queue path (it starts with 'root')"
    if problem is not None:
        raise ServiceError("queue", problem)
    return path


def queue_over_time(
    *,
    queue: str | None,
    partition: str | None,
    cluster: str | None = None,
    start: str | datetime | None = None,
    end: str | datetime | None = None,
    now: datetime | None = None,
) -> QueueOverTime:
    """The queue's usage against its limits over ``[start, end)``, and its preemptions.

    *start* and *end* are datetimes or ISO 8601 text (UTC when no offset is given).
    Without either, the window is the data's (:func:`data_window`); with one, end
    defaults to now, start to 30 days before end. The newest snapshot's figures hold
    until the data's end (:func:`data_extent`), whatever the window.

    Raises:
        ServiceError: naming ``queue``, ``partition``, ``cluster``, ``start`` or
            ``end``: an unknown partition or queue, end before start, an absurd
            window (see :func:`dashboard.services.history.overtime.check_window`).
    """
    now = now or utcnow()
    path = check_queue_path(queue)
    name = partition or "default"
    problem = name_problem("partition", name)
    if problem is not None:
        raise ServiceError("partition", problem)
    row = find_partition(name, cluster or None)
    if row is None:
        raise ServiceError("partition", f"there is no partition {name!r}")
    since = start if isinstance(start, datetime) or start is None else parse_instant(start, "start")
    until = end if isinstance(end, datetime) or end is None else parse_instant(end, "end")
    extent = data_extent(row, now)
    is_data_window = since is None and until is None and extent is not None
    window = (
        data_window(extent)
        if is_data_window and extent is not None
        else check_window(since, until, now)
    )
    # the newest snapshot's figures hold until the data's end, not until now
    data_end = min(now, extent.end) if extent is not None else now
    usage = queue_usage_over_time(row, path, window, data_end)
    days = preemptions_per_day(row, path, window)
    node_window, nodes = preemptions_per_node(row, path, min(window.end, now))
    return QueueOverTime(
        row, path, usage, tuple(days), node_window, tuple(nodes), extent, is_data_window
    )
