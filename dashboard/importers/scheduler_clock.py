"""The scheduler's own quota-preemption timers, read from what it reports (never the import time).

yunikorn-core sets a queue's quota-preemption timer when its max is lowered
below its usage (allocated - preempting): it fires at *change time + delay*.
The rules (``Queue.setPreemptionTime`` in ``pkg/scheduler/objects/queue.go``,
as summarised in the shared fixtures' README): lowering again keeps the first
start; raising or removing the max, or usage dropping below it, clears the timer;
a quota preemption that ran clears it; a restart loses it.

:func:`scheduler_timers` gives, for every queue of an imported snapshot whose
usage is above its max while quota preemption can fire there, when the
scheduler's timer fires and where that time comes from:

- ``quotaPreemptionStartTime`` when the queue answer carries it (newer
  schedulers; kept by the importer as ``quota_preemption_start``);
- else the QUEUE_MAX event that started the timer (the first decrease after the
  queue's last quota preemption or last raise, in the events batch) plus the
  queue's delay;
- else ``unknown``: the timer runs but the batch does not reach back to the
  change; its start must not be invented (a month-old state dump must not get a
  fresh timer).

Pure and framework-free: the inputs are the importer's results.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from dashboard.importers.events import EventsImport, QueueMaxChange

Source = Literal["quotaPreemptionStartTime", "QUEUE_MAX event", "unknown"]


@dataclass(frozen=True)
class SchedulerTimer:
    """A running quota-preemption timer of the scheduler, for one queue."""

    queue: str
    fires_at: float | None
    changed_at: float | None
    delay: float
    source: Source
    event_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """Where the time comes from, in words for a page."""
        if self.source == "quotaPreemptionStartTime":
            return "reported by the scheduler (quotaPreemptionStartTime)"
        if self.source == "QUEUE_MAX event":
            return f"the scheduler's max change at event {self.event_id} plus the queue's delay"
        return "unknown: the max change that started it is older than the events read"


def _queues(scenario: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    stack: list[tuple[str, Mapping[str, Any]]] = [("root", scenario["queues"])]
    while stack:
        path, q = stack.pop()
        yield path, q
        stack.extend((f"{path}.{c['name']}", c) for c in q.get("children") or [])


def _above(remaining: Mapping[str, int], maximum: Mapping[str, int] | None) -> bool:
    return bool(maximum) and any(remaining.get(t, 0) > q for t, q in (maximum or {}).items())


def _raised(old: Mapping[str, int] | None, new: Mapping[str, int] | None) -> bool:
    """Whether *new* lifts a limit of *old* (a raise or removal clears the timer)."""
    if old is None:
        return False
    if new is None:
        return True
    return any(t not in new or new[t] > q for t, q in old.items())


def _tighter(old: Mapping[str, int], new: Mapping[str, int] | None) -> bool:
    return new is not None and any(t not in old or q < old[t] for t, q in new.items())


def _start_event(queue: str, events: EventsImport) -> QueueMaxChange | None:
    """The QUEUE_MAX event that started the queue's running timer, if the batch has it."""
    fired_at = max((q.time for q in events.quota_preemptions if q.queue == queue), default=None)
    start: QueueMaxChange | None = None
    previous: dict[str, int] | None = None
    for change in events.queue_max_changes:
        if change.queue != queue:
            continue
        if fired_at is not None and change.time <= fired_at:
            previous = change.new_max
            continue
        if _raised(previous, change.new_max):
            start = None  # a raise or removal clears the timer
        if start is None and (previous is None or _tighter(previous, change.new_max)):
            start = change  # a decrease starts it; a later decrease keeps the first start
        previous = change.new_max
    return start


def scheduler_timers(
    scenario: Mapping[str, Any], events: EventsImport | None = None
) -> dict[str, SchedulerTimer]:
    """Queue path -> the scheduler's running quota-preemption timer.

    Args:
        scenario: an imported snapshot's scenario (with the importer's extra keys:
            ``remaining``, ``is_managed``, ``quota_preemption_start``).
        events: the parsed events batch of the same cluster, if any.
    """
    partition = scenario.get("partition") or {}
    if not partition.get("quota_preemption_enabled"):
        return {}
    out: dict[str, SchedulerTimer] = {}
    for path, q in _queues(scenario):
        delay = float(q.get("quota_preemption_delay") or 0.0)
        if delay <= 0 or q.get("is_managed") is False:
            continue
        start = q.get("quota_preemption_start")
        if start is not None:
            out[path] = SchedulerTimer(
                path, float(start), float(start) - delay, delay, "quotaPreemptionStartTime"
            )
            continue
        if not _above(q.get("remaining") or {}, q.get("max")):
            continue
        change = _start_event(path, events) if events is not None else None
        if change is not None:
            out[path] = SchedulerTimer(
                path, change.time + delay, change.time, delay, "QUEUE_MAX event", change.event_id
            )
        else:
            out[path] = SchedulerTimer(path, None, None, delay, "unknown")
    return out
