"""The scheduler's own quota-preemption timers, read from what it reports (never the import time).

yunikorn-core sets a queue's quota-preemption timer when its max is lowered
below its usage (allocated - preempting): it fires at *change time + delay*.
The rules are the partition's timer rule set (``engine.timers``: ``scheduler``,
yunikorn-core's ``Queue.setPreemptionTime``, engine.md 5.1, by default; or
``seed``): the batch's QUEUE_MAX events of the queue since its last quota
preemption are replayed through :func:`engine.timers.timer_step` (the usage
at each event taken as the snapshot's; the max before the first event read,
unknown, taken as higher); a quota preemption that ran clears the timer; a
restart loses it.

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
from engine import timers

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
    reason: dict[str, object] | None = None
    """The engine's reason for *fires_at* (``DeadlineReason.to_dict()``)."""

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


def _replay(
    queue: str,
    events: EventsImport,
    usage: Mapping[str, int],
    delay: float,
    rules: timers.RuleSet,
) -> tuple[QueueMaxChange, timers.TimerState] | None:
    """The QUEUE_MAX event that started the queue's running timer and the timer, if the
    batch has it (the events since the queue's last quota preemption, replayed)."""
    fired_at = max((q.time for q in events.quota_preemptions if q.queue == queue), default=None)
    state = timers.TimerState.idle()
    start: QueueMaxChange | None = None
    previous: dict[str, int] | None = None
    known = False  # whether *previous* is the max before the event (else taken as higher)
    for change in events.queue_max_changes:
        if change.queue != queue:
            continue
        if fired_at is not None and change.time <= fired_at:
            previous, known = change.new_max, True
            continue
        old = previous if known else {t: q + 1 for t, q in (change.new_max or {}).items()}
        step = timers.timer_step(
            state,
            timers.ConfigChanged(
                old_max=old,
                max=change.new_max,
                usage=usage,
                old_delay=delay,
                delay=delay,
                enabled=True,
            ),
            change.time,
            rules=rules,
        )
        if step.action == "start_wait":
            start = change
        state = step.state
        if not state.is_waiting:
            start = None
        previous, known = change.new_max, True
    return (start, state) if start is not None and state.is_waiting else None


def scheduler_timers(
    scenario: Mapping[str, Any],
    events: EventsImport | None = None,
    rules: timers.RuleSet = timers.DEFAULT_RULES,
) -> dict[str, SchedulerTimer]:
    """Queue path -> the scheduler's running quota-preemption timer.

    Args:
        scenario: an imported snapshot's scenario (with the importer's extra keys:
            ``remaining``, ``is_managed``, ``quota_preemption_start``).
        events: the parsed events batch of the same cluster, if any.
        rules: the partition's timer rule set.
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
        found = (
            _replay(path, events, q.get("remaining") or {}, delay, rules)
            if events is not None
            else None
        )
        if found is not None:
            change, state = found
            out[path] = SchedulerTimer(
                path,
                state.deadline,
                change.time,
                delay,
                "QUEUE_MAX event",
                change.event_id,
                None if state.reason is None else state.reason.to_dict(),
            )
        else:
            out[path] = SchedulerTimer(path, None, None, delay, "unknown")
    return out
