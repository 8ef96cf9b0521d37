"""Quota preemption delay timers: a pure per-queue state machine (engine.md section 5).

A lowered max is enforced only after the queue's ``quota_preemption_delay``.
This module decides, event by event, what a queue's timer does; it stores
nothing and never reads the clock.  The dashboard keeps one
:class:`TimerState` per queue in its database and, for every event:

1. reads the queue's state row under a row lock (``SELECT ... FOR UPDATE``);
2. calls :func:`timer_step` with the state, the event and ``now``;
3. writes ``decision.state`` back (``TimerState.to_dict()`` is JSON) and, when
   ``decision.action`` is ``"start_preemption"``, runs
   :func:`engine.quota.plan_quota_change` with ``decision.plan_max`` and the
   running descendants (:func:`running_descendants`) after the commit.

Every step depends only on its arguments, so replaying an event gives the same
state, and stale or duplicate events are harmless: a completion for a queue
that is not running, or a tick before the deadline, changes nothing.

Two rule sets, chosen per partition with ``rules=``: ``scheduler`` (the
default, yunikorn-core's own rules, engine.md 5.1, in
:mod:`engine.timers_scheduler`: a further decrease keeps the first start, a
delay change shifts the deadline by new - old, a raise keeps the timer, no timer
while usage is within the new max, a queue that recovered usage over its max
re-armed at a restart, a config applied alike whatever the partition flag, and
the check once a second walking the tree top down: :func:`tick_queues`) and
``seed`` (below).  Every waiting state says why its deadline is
what it is (``TimerState.reason``, a :class:`DeadlineReason`).

The ``seed`` rules (engine.md 5, following the quota seed where Go differs, 8.7/8.8):

- a change of max or delay restarts the timer from the change ("reset from t",
  never adjusted from the old deadline); a purely looser max cancels it;
- a change while the queue's preemption runs is ignored and re-checked at
  completion (a running preemption is neither reverted nor doubled);
- due queues fire deepest first, then by path, never while an ancestor runs;
- dynamic queues (child templates, placement) and limits set by annotations
  have no delay, so they never get a timer: a lowered max there only applies
  to new requests;
- after a *scheduler* restart YuniKorn restarts its timers from the moment
  allocations are recovered (:func:`rearm_after_restart`); the
  dashboard's own timers survive its restarts because their deadlines are
  stored (a deadline that passed meanwhile fires at the next tick).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.errors import ScenarioError
from engine.timer_state import (
    DEADLINE_RULES,
    DEFAULT_RULES,
    RULE_SETS,
    TIMER_KINDS,
    Completed,
    ConfigChanged,
    DeadlineReason,
    DeadlineRule,
    QueueFacts,
    RuleSet,
    Tick,
    TimerAction,
    TimerDecision,
    TimerEvent,
    TimerKind,
    TimerState,
    UsageRose,
    arm,
    exceeds_max,
    fires_at,
    is_purely_looser,
    not_applicable,
    same_max,
    start_preemption,
)
from engine.timer_state import idle as _idle
from engine.timer_state import same as _same
from engine.timers_scheduler import scheduler_rearm, scheduler_step, scheduler_tick, walk_order

__all__ = [
    "DEADLINE_RULES",
    "DEFAULT_RULES",
    "RULE_SETS",
    "SCHEDULER_TICK_SECONDS",
    "TIMER_KINDS",
    "Completed",
    "ConfigChanged",
    "DeadlineReason",
    "DeadlineRule",
    "QueueFacts",
    "RuleSet",
    "Tick",
    "TimerAction",
    "TimerDecision",
    "TimerEvent",
    "TimerKind",
    "TimerState",
    "UsageRose",
    "ancestor_paths",
    "arm",
    "due_queues",
    "exceeds_max",
    "fires_at",
    "is_purely_looser",
    "predict_after_scheduler_restart",
    "rearm_after_restart",
    "running_descendants",
    "same_max",
    "scheduler_tick",
    "tick_queues",
    "timer_step",
    "walk_order",
]


def _config_changed(state: TimerState, ev: ConfigChanged, now: float) -> TimerDecision:
    if state.is_running:
        return _same(
            state,
            "skipped_running",
            "a quota preemption is running for this queue: the change is re-checked "
            "when it completes",
        )
    off = not_applicable(state, ev)
    if off is not None:
        return off
    max_changed = not same_max(ev.old_max, ev.max)
    if not max_changed and ev.old_delay == ev.delay:
        return _same(state, "none", "neither the max nor the delay changed")
    if max_changed and is_purely_looser(ev.old_max, ev.max):
        if state.is_waiting:
            return _idle(
                state,
                "cancelled_by_increase",
                "the max was only raised: the pending decrease is cancelled",
            )
        return _same(state, "none", "the max was only raised")
    if not exceeds_max(ev.usage, ev.max):
        if state.is_waiting:
            return _idle(state, "cancelled", "usage is within the new max: nothing to enforce")
        return _same(state, "none", "usage is within the new max: nothing to enforce")
    deadline = fires_at(now, ev.delay)
    if state.is_waiting:
        return TimerDecision(
            arm(now, ev.delay, "reset"),
            "reset",
            f"the timer restarts from this change and fires at {deadline:g}",
        )
    return TimerDecision(
        arm(now, ev.delay, "started"),
        "start_wait",
        f"usage exceeds the new max: preemption starts at {deadline:g}",
    )


def _usage_rose(state: TimerState, ev: UsageRose, now: float) -> TimerDecision:
    if state.is_running:
        return _same(state, "skipped_running", "a quota preemption is running for this queue")
    if state.is_waiting:
        return _same(state, "none", "the timer is already waiting: its deadline is not moved")
    off = not_applicable(state, ev)
    if off is not None:
        return off
    if not exceeds_max(ev.usage, ev.max):
        return _same(state, "none", "usage is within the max")
    deadline = fires_at(now, ev.delay)
    return TimerDecision(
        arm(now, ev.delay, "usage_rose"),
        "start_wait",
        f"usage rose above the max: preemption starts at {deadline:g}",
    )


def _tick(state: TimerState, ev: Tick, now: float) -> TimerDecision:
    if not state.is_due(now):
        return _same(state, "none", "no timer is due")
    off = not_applicable(state, ev)
    if off is not None:
        return off
    if ev.ancestor_running:
        return _same(
            state,
            "skipped_ancestor_running",
            "an ancestor's quota preemption is running: this queue waits for it",
        )
    if not exceeds_max(ev.usage, ev.max):
        return _idle(state, "cancelled", "usage is already within the max: nothing to enforce")
    return start_preemption(ev.max, now)


def _completed(state: TimerState, ev: Completed, now: float) -> TimerDecision:
    if not state.is_running:
        return _same(state, "none", "no quota preemption was running")
    off = not_applicable(state, ev)
    if off is not None:
        return TimerDecision(TimerState.idle(), "completed", f"preemption completed; {off.note}")
    changed = not same_max(state.enforced_max, ev.max)
    # the change ignored while running is judged now, as a change from the enforced max:
    # a purely looser one cancels like any increase (the seed's Q -> Q/3 -> Q/2 example)
    if (
        changed
        and not is_purely_looser(state.enforced_max, ev.max)
        and exceeds_max(ev.usage, ev.max)
    ):
        deadline = fires_at(now, ev.delay)
        return TimerDecision(
            arm(now, ev.delay, "rewait"),
            "rewait",
            f"the max was lowered while preemption ran and is still exceeded: "
            f"the timer restarts and fires at {deadline:g}",
        )
    return TimerDecision(TimerState.idle(), "completed", "quota preemption completed")


def timer_step(
    state: TimerState, event: TimerEvent, now: float, *, rules: RuleSet = DEFAULT_RULES
) -> TimerDecision:
    """Apply one event to one queue's timer: the one place every deadline comes from.

    Args:
        state: the queue's persisted state.
        event: what happened, with the queue's facts at that moment.
        now: the time of the event (seconds since the epoch).
        rules: ``scheduler`` (yunikorn-core's rules, engine.md 5.1, the default)
            or ``seed`` (engine.md 5).

    Returns:
        The new state, the action taken and a note; with ``start_preemption``
        the caller runs the quota plan with ``plan_max``.

    >>> facts = dict(usage={"memory": 80}, delay=60.0, enabled=True)
    >>> d = timer_step(TimerState.idle(),
    ...                ConfigChanged(old_max={"memory": 100}, max={"memory": 50},
    ...                              old_delay=60.0, **facts), now=1000.0)
    >>> d.action, d.state.deadline
    ('start_wait', 1060.0)
    >>> d = timer_step(d.state, Tick(max={"memory": 50}, **facts), now=1060.0)
    >>> d.action, d.plan_max
    ('start_preemption', {'memory': 50})
    """
    if rules == "scheduler":
        return scheduler_step(state, event, now)
    if rules != "seed":
        raise ScenarioError("rules", f"unknown timer rule set {rules!r}: scheduler or seed")
    if isinstance(event, ConfigChanged):
        return _config_changed(state, event, now)
    if isinstance(event, UsageRose):
        return _usage_rose(state, event, now)
    if isinstance(event, Tick):
        return _tick(state, event, now)
    return _completed(state, event, now)


# -- many queues --------------------------------------------------------------------


#: The scheduler checks every queue's timer once a second, walking the tree top down
#: (engine.md 5.1 "Order"): deadlines less than this apart may meet in one walk.
SCHEDULER_TICK_SECONDS = 1.0


def ancestor_paths(path: str) -> Iterable[str]:
    """The proper ancestors of *path*, nearest first (``root.a.b`` -> ``root.a``, ``root``)."""
    # queue names contain no dot, so each dotted prefix is a real ancestor
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:i])


def due_queues(states: Mapping[str, TimerState], now: float) -> list[str]:
    """The queues whose timer fires at *now*, in firing order (engine.md 5, "Tick").

    Waiting queues with ``deadline <= now``, deepest first (a leaf before its
    parent), then by path; a queue with a running ancestor is skipped (it stays
    waiting and fires at a later tick).  A queue that starts during the tick can
    never be an ancestor of a later one, so the list stays valid while the
    caller starts them in order.

    >>> s = {"root.a": TimerState.waiting(5.0), "root.a.b": TimerState.waiting(9.0),
    ...      "root.c": TimerState.running(1.0, None), "root.c.d": TimerState.waiting(1.0)}
    >>> due_queues(s, 10.0)
    ['root.a.b', 'root.a']
    """
    running = {p for p, s in states.items() if s.is_running}
    due = [
        p
        for p, s in states.items()
        if s.is_due(now) and not any(a in running for a in ancestor_paths(p))
    ]
    due.sort(key=lambda p: (-p.count("."), p))
    return due


def tick_queues(
    states: Mapping[str, TimerState],
    facts: Mapping[str, QueueFacts],
    now: float,
    *,
    rules: RuleSet = DEFAULT_RULES,
) -> list[tuple[str, TimerDecision]]:
    """One check of every queue's timer at *now*, in the rule set's order: the one walk
    the dashboard's sweep, its predictions and the differential test drive.

    ``scheduler``: :func:`scheduler_tick` (top down, a running queue hides its
    subtree, a waiting queue within its max is cleared due or not).  ``seed``: the
    due queues deepest first (:func:`due_queues`), each stepped with a ``Tick``; a
    queue with no facts is left as it is.

    Returns:
        ``(path, decision)`` in the order to apply them.
    """
    if rules == "scheduler":
        return scheduler_tick(states, facts, now)
    if rules != "seed":
        raise ScenarioError("rules", f"unknown timer rule set {rules!r}: scheduler or seed")
    out: list[tuple[str, TimerDecision]] = []
    running = {p for p, s in states.items() if s.is_running}
    for path in due_queues(states, now):
        f = facts.get(path)
        if f is None:
            continue
        event = Tick(
            max=f.max,
            usage=f.usage,
            delay=f.delay,
            enabled=f.enabled,
            dynamic=f.dynamic,
            ancestor_running=any(a in running for a in ancestor_paths(path)),
        )
        decision = _tick(states[path], event, now)
        if decision.state.is_running:
            running.add(path)
        out.append((path, decision))
    return out


def running_descendants(states: Mapping[str, TimerState], queue: str) -> frozenset[str]:
    """Queues strictly below *queue* whose quota preemption runs: the plan's ``running``.

    >>> running_descendants({"root.a.b": TimerState.running(1.0, None),
    ...                      "root.ab": TimerState.running(1.0, None)}, "root.a")
    frozenset({'root.a.b'})
    """
    prefix = queue + "."
    return frozenset(p for p, s in states.items() if s.is_running and p.startswith(prefix))


def predict_after_scheduler_restart(
    state: TimerState, recovered_at: float, facts: QueueFacts
) -> TimerDecision:
    """What YuniKorn's own timer does after a scheduler restart (engine.md 5, "Restart").

    YuniKorn keeps no timers across a restart: it starts them again from the
    moment the allocations are recovered, so enforcement is postponed by the
    downtime ("restart from zero", the seed's "Impact of Restart").  A running
    preemption is lost with the restart; if usage still exceeds the max, the
    timer starts again from zero.  Use this to predict the scheduler; the
    dashboard's own persisted timers keep their deadlines.

    >>> f = QueueFacts(max={"memory": 50}, usage={"memory": 80}, delay=60.0, enabled=True)
    >>> d = predict_after_scheduler_restart(TimerState.waiting(1060.0), 1030.0, f)
    >>> d.state.deadline, d.note
    (1090.0, 'YuniKorn restarts the timer at 1030 and fires at 1090, 30s later than planned')
    """
    off = not_applicable(state, facts)
    if off is not None:
        return off
    if state.is_idle or not exceeds_max(facts.usage, facts.max):
        if state.is_idle:
            return _same(state, "none", "no timer was pending")
        return _idle(state, "cancelled", "usage is within the max after the restart")
    deadline = fires_at(recovered_at, facts.delay)
    if state.is_waiting and state.deadline is not None:
        late = deadline - state.deadline
        note = (
            f"YuniKorn restarts the timer at {recovered_at:g} and fires at {deadline:g}, "
            f"{late:g}s later than planned"
        )
    else:
        note = (
            f"the running preemption is lost with the restart; YuniKorn restarts the timer "
            f"at {recovered_at:g} and fires at {deadline:g}"
        )
    return TimerDecision(arm(recovered_at, facts.delay, "rearmed"), "restarted", note)


def rearm_after_restart(
    state: TimerState, restarted_at: float, facts: QueueFacts, *, rules: RuleSet = DEFAULT_RULES
) -> TimerDecision:
    """A queue's timer after the scheduler restarted at *restarted_at*.

    ``scheduler`` (engine.md 5.1, "Restart"): the queues are rebuilt with no timer and
    every recovered allocation is added through the usage-rise rule, so a managed
    queue that recovered usage (its own or below) and is then over its max, with a
    delay and the flag on, waits until *restarted_at* + delay, with or without a timer
    before; every other queue is idle (an empty one whatever its max).
    ``seed`` (engine.md 5, "Restart"): a pending or running timer restarts from
    zero at *restarted_at*; an idle queue stays idle.

    >>> f = QueueFacts(max={"memory": 50}, usage={"memory": 80}, delay=60.0, enabled=True)
    >>> rearm_after_restart(TimerState.idle(), 1030.0, f).state.deadline
    1090.0
    >>> rearm_after_restart(TimerState.idle(), 1030.0, f, rules="seed").state.is_idle
    True
    """
    if rules == "scheduler":
        return scheduler_rearm(state, restarted_at, facts)
    if rules != "seed":
        raise ScenarioError("rules", f"unknown timer rule set {rules!r}: scheduler or seed")
    return predict_after_scheduler_restart(state, restarted_at, facts)
