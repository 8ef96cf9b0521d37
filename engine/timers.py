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

The rules (engine.md 5, following the quota seed where Go differs, 8.7/8.8):

- a change of max or delay restarts the timer from the change ("reset from t",
  never adjusted from the old deadline); a purely looser max cancels it;
- a change while the queue's preemption runs is ignored and re-checked at
  completion (a running preemption is neither reverted nor doubled);
- due queues fire deepest first, then by path, never while an ancestor runs;
- dynamic queues (child templates, placement) and limits set by annotations
  have no delay, so they never get a timer: a lowered max there only applies
  to new requests;
- after a *scheduler* restart YuniKorn restarts its timers from the moment
  allocations are recovered (:func:`predict_after_scheduler_restart`); the
  dashboard's own timers survive its restarts because their deadlines are
  stored (a deadline that passed meanwhile fires at the next tick).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from engine import resources as res
from engine.errors import ScenarioError
from engine.resources import Resource

TimerKind = Literal["idle", "waiting", "running"]
TIMER_KINDS: tuple[TimerKind, ...] = ("idle", "waiting", "running")

TimerAction = Literal[
    "none",
    "start_wait",
    "reset",
    "cancelled_by_increase",
    "cancelled",
    "skipped_running",
    "start_preemption",
    "skipped_ancestor_running",
    "completed",
    "rewait",
    "no_timer",
    "disabled",
    "restarted",
]
"""What a step did.

``none``: nothing changed; ``start_wait``: idle -> waiting; ``reset``: a new
deadline from the change time; ``cancelled_by_increase``: a purely looser max
cancelled a pending decrease; ``cancelled``: usage is within the max, nothing to
enforce; ``skipped_running``: ignored because the queue's preemption runs;
``start_preemption``: run the plan now; ``skipped_ancestor_running``: due, but an
ancestor's preemption runs; ``completed``: back to idle; ``rewait``: the max
changed while running and is still exceeded; ``no_timer``: dynamic queue;
``disabled``: the partition flag is off or the delay is 0; ``restarted``: a
scheduler restart moved the deadline.
"""


def _normal_max(m: Resource | None) -> dict[str, int] | None:
    # a missing or empty max means "not set" (engine.md 0.1); zeros stay limits
    return dict(m) if m else None


def _opt_number(data: Mapping[str, object], name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(name, "must be a number or null")
    return float(value)


@dataclass(frozen=True, slots=True)
class TimerState:
    """One queue's timer: ``idle``, ``waiting(deadline)`` or ``running(started, enforced_max)``.

    Build states with :meth:`idle`, :meth:`waiting` and :meth:`running`.
    """

    kind: TimerKind = "idle"
    deadline: float | None = None
    """When a waiting timer fires (seconds since the epoch)."""
    started: float | None = None
    """When the running preemption started."""
    enforced_max: Resource | None = None
    """The max the running preemption enforces (compared at completion)."""

    @classmethod
    def idle(cls) -> TimerState:
        return cls()

    @classmethod
    def waiting(cls, deadline: float) -> TimerState:
        return cls(kind="waiting", deadline=deadline)

    @classmethod
    def running(cls, started: float, enforced_max: Resource | None) -> TimerState:
        return cls(kind="running", started=started, enforced_max=_normal_max(enforced_max))

    @property
    def is_idle(self) -> bool:
        return self.kind == "idle"

    @property
    def is_waiting(self) -> bool:
        return self.kind == "waiting"

    @property
    def is_running(self) -> bool:
        return self.kind == "running"

    def is_due(self, now: float) -> bool:
        """True when waiting and the deadline has passed (``deadline <= now``)."""
        return self.kind == "waiting" and self.deadline is not None and self.deadline <= now

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "deadline": self.deadline,
            "started": self.started,
            "enforced_max": None if self.enforced_max is None else dict(self.enforced_max),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TimerState:
        """Rebuild a state stored with :meth:`to_dict`; bad data raises ScenarioError."""
        kind = data.get("kind")
        if kind == "idle":
            return cls.idle()
        if kind == "waiting":
            deadline = _opt_number(data, "deadline")
            if deadline is None:
                raise ScenarioError("deadline", "a waiting timer needs a deadline")
            return cls.waiting(deadline)
        if kind == "running":
            started = _opt_number(data, "started")
            if started is None:
                raise ScenarioError("started", "a running timer needs its start time")
            raw = data.get("enforced_max")
            enforced: dict[str, int] | None = None
            if raw is not None:
                if not isinstance(raw, Mapping):
                    raise ScenarioError("enforced_max", "must be an object or null")
                enforced = {}
                for t, q in raw.items():
                    if not isinstance(t, str) or isinstance(q, bool) or not isinstance(q, int):
                        raise ScenarioError(f"enforced_max.{t}", "must be an integer quantity")
                    enforced[t] = q
            return cls.running(started, enforced)
        raise ScenarioError("kind", f"unknown timer state {kind!r}")


# -- events -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueFacts:
    """What the caller knows about the queue when the event happens."""

    max: Resource | None
    """The queue's current max (after a config change: the new one)."""
    usage: Resource | None
    """U(Q): the queue's usage, preempted allocations excluded."""
    delay: float
    """The effective ``quota_preemption_delay`` in seconds (after a change: the new one)."""
    enabled: bool
    """The partition's ``quota_preemption_enabled`` flag."""
    dynamic: bool = False
    """Created from a child template or by placement, or limited through annotations."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChanged(QueueFacts):
    """The queue's max or delay was observed to change (a saved config map)."""

    old_max: Resource | None
    old_delay: float


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRose(QueueFacts):
    """The queue's usage grew (for example an allocation grew or was recovered)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tick(QueueFacts):
    """Periodic check; *ancestor_running* says whether an ancestor's preemption runs."""

    ancestor_running: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Completed(QueueFacts):
    """The queue's running preemption finished: all its victims were released."""


TimerEvent = ConfigChanged | UsageRose | Tick | Completed


@dataclass(frozen=True, slots=True)
class TimerDecision:
    """The outcome of one :func:`timer_step`."""

    state: TimerState
    action: TimerAction
    note: str
    """One sentence for the administrator."""
    plan_max: Resource | None = None
    """With ``start_preemption``: the max to enforce with ``plan_quota_change``."""


# -- the rules --------------------------------------------------------------------


def is_purely_looser(old_max: Resource | None, new_max: Resource | None) -> bool:
    """True when *new_max* only relaxes *old_max* (engine.md 5, "purely looser").

    No type gets a lower limit, no type gains a limit, and the max is not newly
    set.  Removing a type's limit, or the whole max, is looser.  An unchanged max
    is trivially looser.

    >>> is_purely_looser({"memory": 50}, {"memory": 80})
    True
    >>> is_purely_looser({"memory": 50}, {"memory": 80, "vcore": 100})
    False
    >>> is_purely_looser(None, {"memory": 50}), is_purely_looser({"memory": 50}, None)
    (False, True)
    """
    old = _normal_max(old_max)
    new = _normal_max(new_max)
    if new is None:
        return True
    if old is None:
        return False
    return all(t in old and q >= old[t] for t, q in new.items())


def same_max(a: Resource | None, b: Resource | None) -> bool:
    """The same limits: same types and values (a 0 limit differs from no limit).

    >>> same_max({"gpu": 0}, {}), same_max({}, None), same_max({"m": 1}, {"m": 1})
    (False, True, True)
    """
    return _normal_max(a) == _normal_max(b)


def exceeds_max(usage: Resource | None, max_: Resource | None) -> bool:
    """Usage is above the max in some type the max defines (undefined = unlimited)."""
    return res.exceeds_any(_normal_max(max_), usage)


def _same(state: TimerState, action: TimerAction, note: str) -> TimerDecision:
    return TimerDecision(state, action, note)


def _idle(state: TimerState, action: TimerAction, note: str) -> TimerDecision:
    return TimerDecision(TimerState.idle(), action, note)


def _not_applicable(state: TimerState, facts: QueueFacts) -> TimerDecision | None:
    """Dynamic queue, flag off or delay 0: no timer at all."""
    if facts.dynamic:
        return _idle(
            state,
            "no_timer",
            "dynamic queues have no quota preemption timer: a lowered max only applies "
            "to new requests",
        )
    if not facts.enabled:
        return _idle(state, "disabled", "quota preemption is disabled on the partition")
    if facts.delay <= 0:
        return _idle(
            state,
            "disabled",
            "the quota preemption delay is 0: YuniKorn never enforces a lowered max",
        )
    return None


def _config_changed(state: TimerState, ev: ConfigChanged, now: float) -> TimerDecision:
    if state.is_running:
        return _same(
            state,
            "skipped_running",
            "a quota preemption is running for this queue: the change is re-checked "
            "when it completes",
        )
    off = _not_applicable(state, ev)
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
    deadline = now + ev.delay
    if state.is_waiting:
        return TimerDecision(
            TimerState.waiting(deadline),
            "reset",
            f"the timer restarts from this change and fires at {deadline:g}",
        )
    return TimerDecision(
        TimerState.waiting(deadline),
        "start_wait",
        f"usage exceeds the new max: preemption starts at {deadline:g}",
    )


def _usage_rose(state: TimerState, ev: UsageRose, now: float) -> TimerDecision:
    if state.is_running:
        return _same(state, "skipped_running", "a quota preemption is running for this queue")
    if state.is_waiting:
        return _same(state, "none", "the timer is already waiting: its deadline is not moved")
    off = _not_applicable(state, ev)
    if off is not None:
        return off
    if not exceeds_max(ev.usage, ev.max):
        return _same(state, "none", "usage is within the max")
    deadline = now + ev.delay
    return TimerDecision(
        TimerState.waiting(deadline),
        "start_wait",
        f"usage rose above the max: preemption starts at {deadline:g}",
    )


def _tick(state: TimerState, ev: Tick, now: float) -> TimerDecision:
    if not state.is_due(now):
        return _same(state, "none", "no timer is due")
    off = _not_applicable(state, ev)
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
    enforced = _normal_max(ev.max)
    return TimerDecision(
        TimerState.running(now, enforced),
        "start_preemption",
        "the delay has passed and usage exceeds the max: quota preemption starts",
        plan_max=enforced,
    )


def _completed(state: TimerState, ev: Completed, now: float) -> TimerDecision:
    if not state.is_running:
        return _same(state, "none", "no quota preemption was running")
    off = _not_applicable(state, ev)
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
        deadline = now + ev.delay
        return TimerDecision(
            TimerState.waiting(deadline),
            "rewait",
            f"the max was lowered while preemption ran and is still exceeded: "
            f"the timer restarts and fires at {deadline:g}",
        )
    return TimerDecision(TimerState.idle(), "completed", "quota preemption completed")


def timer_step(state: TimerState, event: TimerEvent, now: float) -> TimerDecision:
    """Apply one event to one queue's timer (engine.md section 5).

    Args:
        state: the queue's persisted state.
        event: what happened, with the queue's facts at that moment.
        now: the time of the event (seconds since the epoch).

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
    if isinstance(event, ConfigChanged):
        return _config_changed(state, event, now)
    if isinstance(event, UsageRose):
        return _usage_rose(state, event, now)
    if isinstance(event, Tick):
        return _tick(state, event, now)
    return _completed(state, event, now)


# -- many queues --------------------------------------------------------------------


def _ancestors(path: str) -> Iterable[str]:
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
        if s.is_due(now) and not any(a in running for a in _ancestors(p))
    ]
    due.sort(key=lambda p: (-p.count("."), p))
    return due


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
    off = _not_applicable(state, facts)
    if off is not None:
        return off
    if state.is_idle or not exceeds_max(facts.usage, facts.max):
        if state.is_idle:
            return _same(state, "none", "no timer was pending")
        return _idle(state, "cancelled", "usage is within the max after the restart")
    deadline = recovered_at + facts.delay
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
    return TimerDecision(TimerState.waiting(deadline), "restarted", note)
