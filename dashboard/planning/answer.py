"""What a config plan is made of: the config in force it is planned against
(:class:`QueueInForce`) and the answer (:class:`ConfigPlan` with its
:class:`PlannedChange` per queue, :class:`Refusal`, :class:`Victim`, :class:`Totals`),
each with the JSON the API answers (``to_dict``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from dashboard.importers.config import ConfigImport, PartitionSpec
from dashboard.importers.errors import ImportFailure
from engine import timers
from engine.model import Cluster
from engine.quota import QuotaAnswer
from engine.resources import Resource

ChangeKind = Literal["changed", "added", "removed", "pending"]
"""``pending``: a timer already waiting in force, untouched by the proposed config."""


_LINE = re.compile(r"\bline (\d+)\b")


@dataclass(frozen=True, slots=True)
class QueueInForce:
    """What one queue is configured with right now (the config, then later changes)."""

    max: Resource | None
    guaranteed: Resource | None
    delay: float
    """Effective quota preemption delay in seconds."""
    is_dynamic: bool = False
    """Created from a template or by placement: not in the config in force."""
    timer: timers.TimerState = field(default_factory=timers.TimerState.idle)
    """The queue's quota preemption timer as the dashboard keeps it."""


def in_force_from_spec(spec: PartitionSpec) -> dict[str, QueueInForce]:
    """The config in force when it is exactly *spec* (no later changes, no pending timer)."""
    return {
        q.path: QueueInForce(q.max, q.guaranteed, q.quota_preemption_delay) for q in spec.queues()
    }


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the scheduler (or the importer) refuses the proposed config."""

    reason: str
    line: int | None
    location: str

    def to_dict(self) -> dict[str, object]:
        return {"reason": self.reason, "line": self.line, "location": self.location}


@dataclass(frozen=True, slots=True)
class Victim:
    key: str
    app: str
    queue: str
    node: str
    resources: Mapping[str, int]

    def to_dict(self) -> dict[str, object]:
        return {
            "key": self.key,
            "app": self.app,
            "queue": self.queue,
            "node": self.node,
            "resources": dict(self.resources),
        }


@dataclass(frozen=True, slots=True)
class Totals:
    """What a set of victims adds up to: allocations, distinct applications, resources."""

    allocations: int = 0
    applications: int = 0
    resources: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, victims: Sequence[Victim]) -> Totals:
        summed: dict[str, int] = {}
        for v in victims:
            for t, q in v.resources.items():
                summed[t] = summed.get(t, 0) + q
        return cls(len(victims), len({v.app for v in victims if v.app}), summed)

    def to_dict(self) -> dict[str, object]:
        return {
            "allocations": self.allocations,
            "applications": self.applications,
            "resources": dict(self.resources),
        }


@dataclass(frozen=True, slots=True)
class TimerDecisionView:
    starts: bool
    action: str
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {"starts": self.starts, "action": self.action, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """One queue's change and, when its timer fires, the quota preemption it runs."""

    queue: str
    kind: ChangeKind
    line: int | None
    old_max: Resource | None
    new_max: Resource | None
    old_guaranteed: Resource | None
    new_guaranteed: Resource | None
    old_delay_seconds: float | None
    delay_seconds: float | None
    is_decrease: bool
    usage: Resource | None
    """U(Q) when the config is applied (before any firing); ``None`` when unknown."""
    timer: TimerDecisionView
    fires_at: float | None = None
    order: int | None = None
    status: str = "no_timer"
    """The quota preemption's status when it fires (enforced, best_effort,
    does_not_help, not_needed), ``no_timer`` when no timer starts."""
    fire_reason: str = ""
    """At the firing: why it preempts or why not (usage already within the max)."""
    usage_at_firing: Resource | None = None
    preemptable: Mapping[str, int] = field(default_factory=dict)
    claimed: Mapping[str, int] = field(default_factory=dict)
    missed: Mapping[str, int] = field(default_factory=dict)
    victims: tuple[Victim, ...] = ()
    leaves: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    alerts: tuple[str, ...] = ()
    below_guarantee: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Types whose new max is below the guarantee: type -> {new_max, guaranteed}."""
    answer: QuotaAnswer | None = field(default=None, compare=False)
    """The engine's answer at the firing (``None`` when nothing ran)."""
    taken_before: tuple[str, ...] = field(default=(), compare=False, repr=False)
    """Victims of the firings before this one: preempted in the cluster it runs on."""

    @property
    def totals(self) -> Totals:
        return Totals.of(self.victims)

    def to_dict(self) -> dict[str, object]:
        return {
            "queue": self.queue,
            "kind": self.kind,
            "line": self.line,
            "old_max": _res(self.old_max),
            "new_max": _res(self.new_max),
            "old_guaranteed": _res(self.old_guaranteed),
            "new_guaranteed": _res(self.new_guaranteed),
            "old_delay_seconds": self.old_delay_seconds,
            "delay_seconds": self.delay_seconds,
            "is_decrease": self.is_decrease,
            "usage": _res(self.usage),
            "timer": self.timer.to_dict(),
            "fires_at": self.fires_at,
            "fires_at_iso": _iso(self.fires_at),
            "order": self.order,
            "status": self.status,
            "fire_reason": self.fire_reason,
            "usage_at_firing": _res(self.usage_at_firing),
            "preemptable": dict(self.preemptable),
            "claimed": dict(self.claimed),
            "missed": dict(self.missed),
            "victims": [v.key for v in self.victims],
            "victim_details": [v.to_dict() for v in self.victims],
            "leaves": {leaf: list(keys) for leaf, keys in self.leaves.items()},
            "alerts": list(self.alerts),
            "below_guarantee": {t: dict(v) for t, v in self.below_guarantee.items()},
            "totals": self.totals.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ConfigPlan:
    """The whole plan (see the module docstring); ``to_dict`` is the API's JSON."""

    partition: str
    now: float
    refusals: tuple[Refusal, ...]
    warnings: tuple[str, ...]
    changes: tuple[PlannedChange, ...]
    pending: tuple[PlannedChange, ...]
    """Timers already waiting in force that the proposed config leaves alone; they
    fire in the same chain."""
    quota_preemption_enabled: bool | None
    has_snapshot: bool
    parsed: ConfigImport | None = field(default=None, compare=False)
    timer_rules: timers.RuleSet = timers.DEFAULT_RULES
    """The partition's timer rule set every deadline of the plan follows."""
    cluster: Cluster | None = field(default=None, compare=False, repr=False)
    """The snapshot's cluster with the proposed config's limits applied (before any firing)."""
    usage: Mapping[str, Resource] = field(default_factory=dict, compare=False, repr=False)
    """U(Q) of every queue of the snapshot when the config is applied (before any firing)."""

    @property
    def is_refused(self) -> bool:
        return bool(self.refusals)

    @property
    def firings(self) -> tuple[PlannedChange, ...]:
        """Every change (and pending timer) that fires, in firing order."""
        fired = [c for c in (*self.changes, *self.pending) if c.order is not None]
        return tuple(sorted(fired, key=lambda c: c.order or 0))

    def totals_by_queue(self) -> dict[str, Totals]:
        return {c.queue: c.totals for c in self.firings if c.victims}

    def totals(self) -> Totals:
        return Totals.of([v for c in self.firings for v in c.victims])

    def to_dict(self) -> dict[str, object]:
        by_leaf: dict[str, list[Victim]] = {}
        for c in self.firings:
            for v in c.victims:
                by_leaf.setdefault(v.queue, []).append(v)
        return {
            "partition": self.partition,
            "now": self.now,
            "now_iso": _iso(self.now),
            "quota_preemption_enabled": self.quota_preemption_enabled,
            "timer_rules": self.timer_rules,
            "has_snapshot": self.has_snapshot,
            "refused": self.is_refused,
            "refusals": [r.to_dict() for r in self.refusals],
            "warnings": list(self.warnings),
            "changes": [c.to_dict() for c in self.changes],
            "pending": [c.to_dict() for c in self.pending],
            "firings": [c.queue for c in self.firings],
            "totals": {
                **self.totals().to_dict(),
                "firings": len(self.firings),
                "by_queue": {q: t.to_dict() for q, t in self.totals_by_queue().items()},
                "by_leaf": {leaf: Totals.of(vs).to_dict() for leaf, vs in sorted(by_leaf.items())},
            },
        }


def _res(r: Resource | None) -> dict[str, int] | None:
    return None if r is None else dict(r)


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat()


def _line_of(location: str) -> int | None:
    m = _LINE.search(location)
    return int(m.group(1)) if m else None


def refusal_of(exc: ImportFailure, filename: str) -> Refusal:
    """The importer's refusal as reason, line and location."""
    location = exc.location or filename
    return Refusal(exc.message, _line_of(location), location)
