"""Quota preemption delay timers: the state, the events and the decisions both rule sets share.

:mod:`engine.timers` applies the seed's rules (engine.md 5, rule set ``seed``)
and :mod:`engine.timers_scheduler` yunikorn-core's (engine.md 5.1, rule set
``scheduler``) to these types.  A waiting state carries the reason its
deadline is what it is (:class:`DeadlineReason`), for the pages to say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from engine import resources as res
from engine.errors import ScenarioError
from engine.resources import Resource

RuleSet = Literal["scheduler", "seed"]
RULE_SETS: tuple[RuleSet, ...] = ("scheduler", "seed")
DEFAULT_RULES: RuleSet = "scheduler"
"""Every partition predicts its cluster with yunikorn-core's rules unless set to ``seed``."""

DeadlineRule = Literal[
    "started", "usage_rose", "kept", "shifted", "kept_across_raise", "rearmed", "reset", "rewait"
]
DEADLINE_RULES: tuple[DeadlineRule, ...] = (
    "started",
    "usage_rose",
    "kept",
    "shifted",
    "kept_across_raise",
    "rearmed",
    "reset",
    "rewait",
)


@dataclass(frozen=True, slots=True)
class DeadlineReason:
    """Which rule set a waiting timer's deadline, and when.

    ``started``: a decrease (or a delay newly set) at *at* started it;
    ``usage_rose``: usage rose above the max at *at*; ``kept``: a further
    decrease at *at* kept the timer started at *since*; ``shifted``: the delay
    change at *at* shifted it by new - old; ``kept_across_raise``: the raise at
    *at* kept it; ``rearmed``: the scheduler's restart at *at* re-armed it;
    ``reset`` (seed): a change at *at* restarted it; ``rewait`` (seed): the
    completion at *at* found a max lowered meanwhile.
    """

    rule: DeadlineRule
    at: float
    since: float | None = None
    """When the timer first started (the first decrease), where it differs from *at*."""

    def to_dict(self) -> dict[str, object]:
        return {"rule": self.rule, "at": self.at, "since": self.since}

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> DeadlineReason:
        """Rebuild a reason stored with :meth:`to_dict`; bad data raises ScenarioError."""
        rule = data.get("rule")
        if rule not in DEADLINE_RULES:
            raise ScenarioError("reason.rule", f"unknown deadline rule {rule!r}")
        at = opt_number(data, "at")
        if at is None:
            raise ScenarioError("reason.at", "a deadline reason needs its time")
        return cls(rule, at, opt_number(data, "since"))


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
    "kept",
    "shifted",
    "kept_across_raise",
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
scheduler restart moved the deadline; ``kept`` (rule set ``scheduler``): a further
decrease kept the first start; ``shifted``: a delay change shifted the deadline
by new - old; ``kept_across_raise``: a raise kept the timer.
"""


def normal_max(m: Resource | None) -> dict[str, int] | None:
    # a missing or empty max means "not set" (engine.md 0.1); zeros stay limits
    return dict(m) if m else None


def opt_number(data: Mapping[str, object], name: str) -> float | None:
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
    reason: DeadlineReason | None = field(default=None, compare=False)
    """Why a waiting timer's deadline is what it is (an annotation: not part of equality)."""

    @classmethod
    def idle(cls) -> TimerState:
        return cls()

    @classmethod
    def waiting(cls, deadline: float, reason: DeadlineReason | None = None) -> TimerState:
        return cls(kind="waiting", deadline=deadline, reason=reason)

    @property
    def since(self) -> float | None:
        """When a waiting timer first started, where its reason says."""
        if self.reason is None:
            return None
        return self.reason.since if self.reason.since is not None else self.reason.at

    @classmethod
    def running(cls, started: float, enforced_max: Resource | None) -> TimerState:
        return cls(kind="running", started=started, enforced_max=normal_max(enforced_max))

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
            "reason": None if self.reason is None else self.reason.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> TimerState:
        """Rebuild a state stored with :meth:`to_dict`; bad data raises ScenarioError."""
        kind = data.get("kind")
        if kind == "idle":
            return cls.idle()
        if kind == "waiting":
            deadline = opt_number(data, "deadline")
            if deadline is None:
                raise ScenarioError("deadline", "a waiting timer needs a deadline")
            raw_reason = data.get("reason")
            if raw_reason is not None and not isinstance(raw_reason, Mapping):
                raise ScenarioError("reason", "must be an object or null")
            reason = None if raw_reason is None else DeadlineReason.from_dict(raw_reason)
            return cls.waiting(deadline, reason)
        if kind == "running":
            started = opt_number(data, "started")
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
    """Periodic check; *ancestor_running* says whether an ancestor's preemption runs
    (under rule set ``scheduler``: the walk of :func:`engine.timers.scheduler_tick` did not
    reach the queue this second)."""

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

    @property
    def reason(self) -> DeadlineReason | None:
        """Why the waiting deadline is what it is (None unless waiting)."""
        return self.state.reason if self.state.is_waiting else None


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
    old = normal_max(old_max)
    new = normal_max(new_max)
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
    return normal_max(a) == normal_max(b)


def exceeds_max(usage: Resource | None, max_: Resource | None) -> bool:
    """Usage is above the max in some type the max defines (undefined = unlimited)."""
    return res.exceeds_any(normal_max(max_), usage)


def fires_at(start: float, delay: float) -> float:
    """When a timer started at *start* with *delay* fires: the one "start + delay"."""
    return start + delay


def arm(start: float, delay: float, rule: DeadlineRule = "started") -> TimerState:
    """A timer started at *start*: waiting until *start* + *delay* (the only place a
    deadline is computed from a start; both rule sets and the dashboard call it).

    >>> arm(1000.0, 60.0).deadline
    1060.0
    """
    return TimerState.waiting(fires_at(start, delay), DeadlineReason(rule, start))


def same(state: TimerState, action: TimerAction, note: str) -> TimerDecision:
    return TimerDecision(state, action, note)


def idle(state: TimerState, action: TimerAction, note: str) -> TimerDecision:
    return TimerDecision(TimerState.idle(), action, note)


def start_preemption(max_: Resource | None, now: float) -> TimerDecision:
    """The delay has passed and usage exceeds *max_*: quota preemption starts, toward it
    (the same decision under both rule sets)."""
    enforced = normal_max(max_)
    return TimerDecision(
        TimerState.running(now, enforced),
        "start_preemption",
        "the delay has passed and usage exceeds the max: quota preemption starts",
        plan_max=enforced,
    )


def not_applicable(state: TimerState, facts: QueueFacts) -> TimerDecision | None:
    """Dynamic queue, flag off or delay 0: no timer at all."""
    if facts.dynamic:
        return idle(
            state,
            "no_timer",
            "dynamic queues have no quota preemption timer: a lowered max only applies "
            "to new requests",
        )
    if not facts.enabled:
        return idle(state, "disabled", "quota preemption is disabled on the partition")
    if facts.delay <= 0:
        return idle(
            state,
            "disabled",
            "the quota preemption delay is 0: YuniKorn never enforces a lowered max",
        )
    return None
