"""A queue over time as the API and the page ask for it: request values checked, one answer.

Puts together :mod:`dashboard.services.history.overtime` (usage against guaranteed and max)
and :mod:`dashboard.services.history.overtime_preemptions` (preemptions per day, per node
over the last 48 hours) for one partition, queue and window, every bad value
refused naming its parameter.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dashboard import models
from dashboard.names import name_problem
from dashboard.plumbing.clock import utcnow
from dashboard.plumbing.errors import ServiceError
from dashboard.services.history.overtime import (
    UsageOverTime,
    Window,
    check_window,
    parse_instant,
    queue_usage_over_time,
)
from dashboard.services.history.overtime_preemptions import (
    DayPreemptions,
    NodePreemptions,
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

    *start* and *end* are datetimes or ISO 8601 text (UTC when no offset is given);
    end defaults to now, start to 30 days before end.

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
    window = check_window(
        start if isinstance(start, datetime) or start is None else parse_instant(start, "start"),
        end if isinstance(end, datetime) or end is None else parse_instant(end, "end"),
        now,
    )
    usage = queue_usage_over_time(row, path, window, now)
    days = preemptions_per_day(row, path, window)
    node_window, nodes = preemptions_per_node(row, path, min(window.end, now))
    return QueueOverTime(row, path, usage, tuple(days), node_window, tuple(nodes))
