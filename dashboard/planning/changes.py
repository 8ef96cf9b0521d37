"""One queue's change in a plan: what the proposed config changes (max, guaranteed,
quota delay; added, removed, a timer already pending) and the timer decision of
:func:`engine.timers.timer_step` for it, with the reason in words; and a change
described in one line for people."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from dashboard.display import deadline_reason_words
from dashboard.importers.config import QueueSpec
from dashboard.importers.quantities import format_quantity, short_duration
from dashboard.planning.answer import PlannedChange, QueueInForce, TimerDecisionView
from dashboard.planning.chain import ChainedCluster
from engine import timers
from engine.resources import Resource


def instant_text(seconds: float) -> str:
    """An instant for people: ``2026-09-01 10:05:00 UTC``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _text(r: Resource | None) -> str:
    if r is None:
        return "not set"
    parts = []
    for t in sorted(r):
        q = r[t]
        parts.append(f"{t} {format_quantity(q, t) if q >= 0 else '-' + format_quantity(-q, t)}")
    return "{" + ", ".join(parts) + "}"


def _above(limit: Resource | None) -> dict[str, int]:
    # unknown usage: assume the max is exceeded, as the live scheduling does
    return {t: q + 1 for t, q in (limit or {}).items()}


def _below_guarantee(
    new_max: Resource | None, guaranteed: Resource | None
) -> dict[str, dict[str, int]]:
    if not new_max or not guaranteed:
        return {}
    return {
        t: {"new_max": new_max[t], "guaranteed": guaranteed[t]}
        for t in sorted(new_max)
        if t in guaranteed and new_max[t] < guaranteed[t]
    }


def _is_tighter(old: Resource | None, new: Resource | None) -> bool:
    return not timers.is_purely_looser(old, new)


def _timer_view(
    step: timers.TimerDecision, delay: float, rules: timers.RuleSet
) -> TimerDecisionView:
    reason = step.note
    deadline = step.state.deadline
    if step.state.is_waiting and deadline is not None:
        reason = (
            f"usage exceeds the new max: the timer fires at {instant_text(deadline)} "
            f"(delay {short_duration(delay)}"
        )
        words = deadline_reason_words(step.reason.to_dict() if step.reason else None, rules)
        reason += f"; {words})" if words else ")"
        if step.action == "reset":
            reason += "; a timer was already waiting: it restarts from this change"
    return TimerDecisionView(step.state.is_waiting, step.action, reason)


@dataclass(slots=True)
class Entry:
    """A change being planned (mutable until the firings are simulated)."""

    change: PlannedChange
    deadline: float | None


def plan_queue(
    path: str,
    new: QueueSpec | None,
    before: QueueInForce | None,
    chain: ChainedCluster | None,
    enabled: bool,
    now: float,
    rules: timers.RuleSet,
) -> Entry | None:
    """The change of one queue, with its timer decision; ``None`` when nothing changes."""
    usage = chain.usage(path) if chain is not None else None
    if new is None:
        if before is None or before.is_dynamic:
            return None  # a dynamic queue the config never defined: nothing to remove
        change = PlannedChange(
            queue=path,
            kind="removed",
            line=None,
            old_max=before.max,
            new_max=None,
            old_guaranteed=before.guaranteed,
            new_guaranteed=None,
            old_delay_seconds=before.delay,
            delay_seconds=None,
            is_decrease=False,
            usage=usage,
            timer=TimerDecisionView(
                False,
                "removed",
                "the queue is removed from the config: no quota preemption timer; its "
                "running applications finish and the scheduler deletes it once it is empty",
            ),
        )
        return Entry(change, None)
    added = before is None or before.is_dynamic
    old_max = None if before is None else before.max
    old_g = None if before is None else before.guaranteed
    old_delay = None if before is None else before.delay
    if (
        not added
        and before is not None
        and before.max == new.max
        and before.guaranteed == new.guaranteed
        and before.delay == new.quota_preemption_delay
    ):
        return None
    max_or_delay = (
        before is None or before.max != new.max or before.delay != new.quota_preemption_delay
    )
    below = _below_guarantee(new.max, new.guaranteed)
    deadline: float | None = None
    if before is None:
        view = TimerDecisionView(
            False,
            "none",
            "a new queue: no max was in force to lower, so no quota preemption timer",
        )
    elif added and not max_or_delay:
        view = TimerDecisionView(
            False,
            "none",
            "a queue the scheduler made (not in the config in force) is added with the max "
            "and delay it already runs with: no max is lowered, so no quota preemption timer",
        )
    elif not max_or_delay:
        view = TimerDecisionView(
            False, "none", "only the guaranteed changes: no quota preemption timer"
        )
    else:
        timer_usage = chain.timer_usage(path, rules) if chain is not None else None
        step = timers.timer_step(
            before.timer,
            timers.ConfigChanged(
                old_max=before.max,
                old_delay=before.delay,
                max=new.max,
                usage=timer_usage if timer_usage is not None else _above(new.max),
                delay=new.quota_preemption_delay,
                enabled=enabled,
                dynamic=before.is_dynamic,
            ),
            now,
            rules=rules,
        )
        view = _timer_view(step, new.quota_preemption_delay, rules)
        deadline = step.state.deadline if view.starts else None
    change = PlannedChange(
        queue=path,
        kind="added" if added else "changed",
        line=new.line,
        old_max=old_max,
        new_max=new.max,
        old_guaranteed=old_g,
        new_guaranteed=new.guaranteed,
        old_delay_seconds=old_delay,
        delay_seconds=new.quota_preemption_delay,
        is_decrease=before is not None and _is_tighter(old_max, new.max) and new.max is not None,
        usage=usage,
        timer=view,
        fires_at=deadline,
        below_guarantee=below,
    )
    return Entry(change, deadline)


def pending_entry(
    path: str, spec: QueueSpec, before: QueueInForce, chain: ChainedCluster | None, now: float
) -> Entry:
    # a deadline that already passed fires at the next sweep, that is now
    deadline = max(before.timer.deadline or now, now)
    change = PlannedChange(
        queue=path,
        kind="pending",
        line=spec.line,
        old_max=before.max,
        new_max=before.max,
        old_guaranteed=before.guaranteed,
        new_guaranteed=spec.guaranteed,
        old_delay_seconds=before.delay,
        delay_seconds=before.delay,
        is_decrease=False,
        usage=chain.usage(path) if chain is not None else None,
        timer=TimerDecisionView(
            True, "waiting", "a timer already waits in force for this queue's lowered max"
        ),
        fires_at=deadline,
        below_guarantee=_below_guarantee(before.max, spec.guaranteed),
    )
    return Entry(change, deadline)


def describe_change(change: PlannedChange) -> str:
    """One line for people: ``root.batch: max {vcore 10} -> {vcore 8}; delay 5m``."""
    parts: list[str] = []
    if change.kind in ("added", "removed"):
        parts.append(f"queue {change.kind}")
    if change.old_max != change.new_max and change.kind == "changed":
        parts.append(f"max {_text(change.old_max)} -> {_text(change.new_max)}")
    if change.old_guaranteed != change.new_guaranteed and change.kind == "changed":
        parts.append(f"guaranteed {_text(change.old_guaranteed)} -> {_text(change.new_guaranteed)}")
    if change.old_delay_seconds != change.delay_seconds and change.kind == "changed":
        old = short_duration(change.old_delay_seconds or 0.0)
        new = short_duration(change.delay_seconds or 0.0)
        parts.append(f"quota delay {old} -> {new}")
    if change.kind == "pending":
        parts.append(f"pending lowered max {_text(change.new_max)}")
    return f"{change.queue}: " + "; ".join(parts)
