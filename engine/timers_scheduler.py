"""Rule set ``scheduler``: yunikorn-core's own quota preemption timers (engine.md 5.1).

The rules of ``Queue.setPreemptionTime`` (a config applied), ``IncAllocatedResource``
(usage added without limit checks, every recovered allocation included),
``tryAcquirePreemption`` with ``TryQuotaPreemption`` (the check once a second, top
down from the root: :func:`scheduler_tick`) and ``setQuotaPreemptionState``
(completion) in ``pkg/scheduler/objects/queue.go``, restated over this package's
frozen states.

The partition's quota preemption flag is read where the scheduler reads it: by the
usage-rise rule and by the tick.  A config applied while the flag is off arms, keeps
and shifts timers as when it is on; turning the flag off neither clears nor moves a
timer, nothing fires while it is off, and a waiting timer fires once it is on again.

"Within" is the scheduler's test :func:`go_within` on the *allocated* usage (which
still holds allocations being preempted), "lowered" and "raised" its
:func:`go_strictly_greater` in each direction; both differ from the seed's
"exceeds" and "purely looser" on missing types and zeros.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from engine.resources import Resource
from engine.timer_state import (
    Completed,
    ConfigChanged,
    DeadlineReason,
    DeadlineRule,
    QueueFacts,
    Tick,
    TimerDecision,
    TimerEvent,
    TimerState,
    UsageRose,
    arm,
    idle,
    normal_max,
    not_applicable,
    same,
    start_preemption,
)


def go_within(max_: Resource | None, usage: Resource | None) -> bool:
    """The scheduler's "usage within the max" (``StrictlyGreaterThanOrEqualsOnlyExisting``).

    Every type both name has usage <= max; types only the usage names do not
    count.  With no usage at all, a max is "within" only when all its values are
    positive; a max and a usage naming no common type are "within".

    >>> go_within({"memory": 50}, {"memory": 50, "vcore": 999})
    True
    >>> go_within({"memory": 50}, {"memory": 51}), go_within({"gpu": 0}, {})
    (False, False)
    """
    m = dict(max_ or {})
    u = dict(usage or {})
    if not u:
        return bool(m) and all(q > 0 for q in m.values())
    common = [t for t in m if t in u]
    if common:
        return all(u[t] <= m[t] for t in common)
    return bool(m)


def go_strictly_greater(larger: Resource | None, smaller: Resource | None) -> bool:
    """The scheduler's ``StrictlyGreaterThan``: >= in every type of either (missing = 0), not equal.

    >>> go_strictly_greater({"memory": 100}, {"memory": 50})
    True
    >>> go_strictly_greater({"memory": 100}, {"memory": 50, "vcore": 1})
    False
    >>> go_strictly_greater({"memory": 50}, None)  # a newly set max counts as raised
    True
    """
    a = dict(larger or {})
    b = dict(smaller or {})
    types = set(a) | set(b)
    if any(a.get(t, 0) < b.get(t, 0) for t in types):
        return False
    return any(a.get(t, 0) != b.get(t, 0) for t in types)


def go_equal(a: Resource | None, b: Resource | None) -> bool:
    """The scheduler's ``Equals`` for a set max: the same value in every type (missing = 0)."""
    x = dict(a or {})
    y = dict(b or {})
    return all(x.get(t, 0) == y.get(t, 0) for t in set(x) | set(y))


def is_zero_max(max_: Resource | None) -> bool:
    """No max: unset, empty or all zero (the scheduler's ``IsZero``)."""
    return not any((normal_max(max_) or {}).values())


def _fresh(now: float, delay: float, rule: DeadlineRule, note: str) -> TimerDecision:
    return TimerDecision(arm(now, delay, rule), "start_wait", note)


def _shift_or_keep(
    state: TimerState, ev: ConfigChanged, now: float, kept: DeadlineReason, note: str
) -> TimerDecision:
    """A waiting timer stays: shifted by new - old delay when the delay changed."""
    assert state.deadline is not None  # waiting
    since = state.since
    if ev.delay != ev.old_delay:
        deadline = state.deadline + (ev.delay - ev.old_delay)
        return TimerDecision(
            TimerState.waiting(deadline, DeadlineReason("shifted", now, since)),
            "shifted",
            f"the delay changed from {ev.old_delay:g}s to {ev.delay:g}s: the deadline moves "
            f"by {ev.delay - ev.old_delay:g}s to {deadline:g}",
        )
    keep = DeadlineReason(kept.rule, kept.at, since)
    if kept.rule == "kept_across_raise":
        return TimerDecision(TimerState.waiting(state.deadline, keep), "kept_across_raise", note)
    return TimerDecision(TimerState.waiting(state.deadline, keep), "kept", note)


def _config_changed(state: TimerState, ev: ConfigChanged, now: float) -> TimerDecision:
    if state.is_running:
        return same(
            state,
            "skipped_running",
            "a quota preemption is running for this queue: the scheduler ignores the change",
        )
    # the flag is not read here: a config applied while it is off arms, keeps and
    # shifts timers as when it is on (they fire once the flag is on again)
    off = not_applicable(state, dataclasses.replace(ev, enabled=True))
    if off is not None:
        return off
    if is_zero_max(ev.max):
        return idle(state, "cancelled" if state.is_waiting else "none", "the queue has no max")
    if go_within(ev.max, ev.usage):
        note = "usage is within the new max: nothing to enforce"
        return idle(state, "cancelled", note) if state.is_waiting else same(state, "none", note)
    if go_equal(ev.old_max, ev.max):
        if state.is_waiting:
            if ev.delay == ev.old_delay:
                return same(state, "none", "neither the max nor the delay changed")
            return _shift_or_keep(state, ev, now, DeadlineReason("kept", now), "")
        if ev.old_delay == 0 and ev.delay > 0:
            return _fresh(
                now, ev.delay, "started", "a delay was set on a queue above its max: timer started"
            )
        return same(state, "none", "the max is unchanged and no timer runs")
    if go_strictly_greater(ev.old_max, ev.max):  # lowered
        if state.is_waiting:
            return _shift_or_keep(
                state,
                ev,
                now,
                DeadlineReason("kept", state.since if state.since is not None else now),
                "a further decrease keeps the first start of the timer",
            )
        return _fresh(now, ev.delay, "started", "usage exceeds the lowered max: timer started")
    if go_strictly_greater(ev.max, ev.old_max):  # raised
        if state.is_waiting:
            return _shift_or_keep(
                state,
                ev,
                now,
                DeadlineReason("kept_across_raise", now),
                "the max was raised: the timer is kept and fires only if usage still "
                "exceeds the raised max then",
            )
        if is_zero_max(ev.old_max):
            return same(
                state,
                "none",
                "a max is set where there was none: the scheduler counts it as a raise, and "
                "no timer starts",
            )
        return same(state, "none", "the max was raised: no timer starts")
    return same(
        state, "none", "some types went up and others down: the timer stays as it is, none starts"
    )


def _usage_rose(state: TimerState, ev: UsageRose, now: float) -> TimerDecision:
    if not state.is_idle:
        return same(state, "none", "a timer is already set: its deadline is not moved")
    off = not_applicable(state, ev)
    if off is not None:
        return off
    if is_zero_max(ev.max) or go_within(ev.max, ev.usage):
        return same(state, "none", "usage is within the max")
    return _fresh(now, ev.delay, "usage_rose", "usage rose above the max: timer started")


def _tick(state: TimerState, ev: Tick, now: float) -> TimerDecision:
    """One queue's ``tryAcquirePreemption``: the walk (:func:`scheduler_tick`) decides
    which queues it reaches; ``ev.ancestor_running`` says the walk did not."""
    if state.is_running:
        return same(state, "none", "its quota preemption is running")
    if ev.dynamic:
        return same(
            state,
            "no_timer",
            "dynamic queues have no quota preemption timer: a lowered max only applies "
            "to new requests",
        )
    if not ev.enabled:
        # the scheduler does not walk the queues at all while the flag is off: a timer
        # is neither fired nor cleared, and fires once the flag is on again
        if state.is_waiting:
            return same(
                state,
                "disabled",
                "quota preemption is off on the partition: the timer waits, unchecked, "
                "until it is on again",
            )
        return same(state, "none", "quota preemption is off on the partition")
    if ev.ancestor_running:
        return same(
            state,
            "skipped_ancestor_running",
            "an ancestor's quota preemption is running: the scheduler does not visit this queue",
        )
    # the scheduler clears the timer as soon as usage is within the max, due or not
    if is_zero_max(ev.max) or go_within(ev.max, ev.usage):
        if state.is_waiting:
            return idle(state, "cancelled", "usage is within the max: the timer is cleared")
        return same(state, "none", "usage is within the max")
    if not state.is_waiting:
        return same(state, "none", "no timer is set")
    if not state.is_due(now):
        return same(state, "none", "the timer is not due yet")
    return start_preemption(ev.max, now)


def _completed(state: TimerState, ev: Completed, now: float) -> TimerDecision:
    if not state.is_running:
        return same(state, "none", "no quota preemption was running")
    return TimerDecision(
        TimerState.idle(),
        "completed",
        "quota preemption completed: the timer is cleared (a later change starts a new one)",
    )


def scheduler_step(state: TimerState, event: TimerEvent, now: float) -> TimerDecision:
    """One event under rule set ``scheduler`` (engine.md 5.1)."""
    if isinstance(event, ConfigChanged):
        return _config_changed(state, event, now)
    if isinstance(event, UsageRose):
        return _usage_rose(state, event, now)
    if isinstance(event, Tick):
        return _tick(state, event, now)
    return _completed(state, event, now)


def scheduler_rearm(state: TimerState, restarted_at: float, facts: QueueFacts) -> TimerDecision:
    """After a scheduler restart at *restarted_at*.

    The scheduler rebuilds its queues from the config with no timer (a running
    preemption is lost too), then adds every recovered allocation through the
    usage-rise rule.  So a queue waits until *restarted_at* + delay only if it (or a
    queue below it) recovered usage, the flag is on, it is managed, has a delay and a
    max, and that usage is not within the max; every other queue is idle, whatever
    it did before (an empty queue with a ``gpu: 0`` max included).
    """
    was = "the restart lost the timer" if not state.is_idle else "no timer"
    off = not_applicable(state, facts)
    if off is not None:
        return TimerDecision(TimerState.idle(), off.action, f"{was}; {off.note}")
    if not facts.usage:
        return TimerDecision(
            TimerState.idle(),
            "cancelled" if not state.is_idle else "none",
            f"{was}; the queue recovered no allocation, so none re-arms it",
        )
    if is_zero_max(facts.max) or go_within(facts.max, facts.usage):
        if state.is_idle:
            return same(state, "none", "usage is within the max after the restart")
        return idle(state, "cancelled", "the restart lost the timer; usage is within the max")
    rearmed = arm(restarted_at, facts.delay, "rearmed")
    return TimerDecision(
        rearmed,
        "restarted",
        f"the scheduler restarted at {restarted_at:g}: the queue is above its max and "
        f"waits until {rearmed.deadline:g}",
    )


# -- the walk -------------------------------------------------------------------------


def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def walk_order(paths: Iterable[str]) -> list[str]:
    """*paths* and their ancestors top down from the root, children in name order
    (the order of ``TryQuotaPreemption``; siblings never affect each other).

    >>> walk_order(["root.b", "root.a.x", "root.a"])
    ['root', 'root.a', 'root.a.x', 'root.b']
    """
    every: set[tuple[str, ...]] = set()
    for p in paths:
        parts = _parts(p)
        for i in range(1, len(parts) + 1):
            every.add(parts[:i])
    return [".".join(p) for p in sorted(every)]


def scheduler_tick(
    states: Mapping[str, TimerState], facts: Mapping[str, QueueFacts], now: float
) -> list[tuple[str, TimerDecision]]:
    """The scheduler's check at *now* over a partition's queues (engine.md 5.1, "Tick").

    Top down from the root, children in name order: a queue whose quota preemption
    runs (before this check, or started by it) hides its whole subtree, neither fired
    nor cleared; a waiting queue within its max is cleared, due or not; a due one
    over its max starts (``start_preemption``).  So when a parent and its child are
    due in the same second the parent runs and the child waits.  With the flag off
    (``facts.enabled``) nothing is checked.

    Args:
        states: each queue's timer; a queue missing here is idle.
        facts: each queue's max, allocated usage, delay, flag, dynamic; a queue
            missing here (an ancestor named only by its path) is not checked.
        now: the check's time (the scheduler checks once a second).

    Returns:
        One ``(path, decision)`` per queue with a state or facts, in walk order;
        apply the decisions in that order (``start_preemption``: plan the quota
        preemption of ``plan_max`` with the running descendants excluded).

    >>> f = QueueFacts(max={"gpu": 4}, usage={"gpu": 8}, delay=30.0, enabled=True)
    >>> s = {"root.p": TimerState.waiting(10.0), "root.p.l": TimerState.waiting(10.0)}
    >>> [(p, d.action) for p, d in scheduler_tick(s, {"root.p": f, "root.p.l": f}, 10.0)]
    [('root.p', 'start_preemption'), ('root.p.l', 'skipped_ancestor_running')]
    """
    out: list[tuple[str, TimerDecision]] = []
    hidden: list[tuple[str, ...]] = []
    for path in walk_order(list(states) + list(facts)):
        if path not in states and path not in facts:
            continue
        state = states.get(path, TimerState.idle())
        parts = _parts(path)
        under = any(parts[: len(h)] == h for h in hidden)
        f = facts.get(path)
        if f is None:
            decision = same(state, "none", "nothing is known of this queue")
        else:
            event = Tick(
                max=f.max,
                usage=f.usage,
                delay=f.delay,
                enabled=f.enabled,
                dynamic=f.dynamic,
                ancestor_running=under,
            )
            decision = _tick(state, event, now)
        out.append((path, decision))
        if not under and decision.state.is_running:
            hidden.append(parts)
    return out
