"""The plan of a whole proposed config: what applying it now would change, start and preempt.

Given the config in force (per queue: max, guaranteed, effective quota
preemption delay, and any timer already pending), the proposed config's text,
the partition, the latest snapshot's cluster and ``now``, :func:`plan_config`
answers:

- the proposed config refused exactly as the importer refuses it (reason and
  line), or its warnings: the importer's pitfalls, the quota-change seed's
  "max above guaranteed when a delay is set" (a dashboard rule the scheduler does
  not enforce, so a warning here), the partition flag off while maxes are lowered;
- every queue whose max, guaranteed or quota delay changes, or that is added or
  removed, and for each change of max or delay the timer decision of
  :func:`engine.timers.timer_step` (the live timers' rules: reset from the change
  time, an increase cancels, flag off or delay 0 start nothing) with the reason;
- the firings in order (:func:`engine.timers.due_queues`: by deadline, and on
  equal deadlines deepest first, a leaf before its parent), each one's tick
  re-checked with :func:`engine.timers.timer_step` and its quota preemption
  planned by :func:`engine.quota.plan_quota_change` on *one evolving cluster*:
  the victims of earlier firings are already preempted (:class:`ChainedCluster`),
  and the applied config's guaranteed and max are in force throughout;
- per queue and cluster-wide totals of what would be preempted.

Nothing is stored: the caller (a service, the ``plan_config`` command, the API)
decides what to keep.  Framework-free: nothing here imports Django.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from dashboard.display import deadline_reason_words
from dashboard.importers.config import ConfigImport, PartitionSpec, QueueSpec, parse_config
from dashboard.importers.config.specs import DEFAULT_PARTITION
from dashboard.importers.errors import ImportFailure
from dashboard.importers.export import scenario_json
from dashboard.importers.quantities import format_quantity, short_duration
from dashboard.planning.chain import ChainedCluster, overlay_limits
from engine import timers
from engine.model import Cluster, Partition
from engine.quota import QuotaAnswer, plan_quota_change
from engine.resources import Resource
from engine.scenario import cluster_to_dict

ChangeKind = Literal["changed", "added", "removed", "pending"]
"""``pending``: a timer already waiting in force, untouched by the proposed config."""

_LINE = re.compile(r"\bline (\d+)\b")


# -- inputs ---------------------------------------------------------------------------


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


# -- answer ---------------------------------------------------------------------------


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


def _when(seconds: float) -> str:
    """An instant for people: ``2026-09-01 10:05:00 UTC``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _line_of(location: str) -> int | None:
    m = _LINE.search(location)
    return int(m.group(1)) if m else None


def refusal_of(exc: ImportFailure, filename: str) -> Refusal:
    """The importer's refusal as reason, line and location."""
    location = exc.location or filename
    return Refusal(exc.message, _line_of(location), location)


# -- the plan ---------------------------------------------------------------------------


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
            f"usage exceeds the new max: the timer fires at {_when(deadline)} "
            f"(delay {short_duration(delay)}"
        )
        words = deadline_reason_words(step.reason.to_dict() if step.reason else None, rules)
        reason += f"; {words})" if words else ")"
        if step.action == "reset":
            reason += "; a timer was already waiting: it restarts from this change"
    return TimerDecisionView(step.state.is_waiting, step.action, reason)


@dataclass(slots=True)
class _Entry:
    """A change being planned (mutable until the firings are simulated)."""

    change: PlannedChange
    deadline: float | None


def plan_config(
    proposed: bytes | str,
    *,
    in_force: Mapping[str, QueueInForce],
    cluster: Cluster | None,
    now: float,
    partition: str = DEFAULT_PARTITION,
    filename: str = "queues.yaml",
    miss: float | None = None,
    in_force_enabled: bool | None = None,
    rules: timers.RuleSet = timers.DEFAULT_RULES,
) -> ConfigPlan:
    """Plan applying *proposed* now (see the module docstring).

    Args:
        proposed: the proposed config (queues.yaml or its ConfigMap).
        in_force: queue path -> what is in force (config, later changes, timers);
            queues the config in force does not define but the snapshot has are
            marked ``is_dynamic``.
        cluster: the latest snapshot's cluster (usage, allocations); ``None`` when
            the partition has no snapshot (timers assume usage above the new max, as
            the live scheduling does, and no victim can be planned).
        now: when the config would be applied (seconds since the epoch).
        partition: the partition planned.
        filename: for messages.
        miss: the partition's best-effort tolerance (default: the cluster's).
        in_force_enabled: the partition flag in force, to warn when the config flips it.
        rules: the partition's timer rule set (``scheduler`` or ``seed``).

    Returns:
        The plan; a refused config gives a plan with ``refusals`` and no change.
    """
    try:
        parsed = parse_config(proposed, filename=filename)
    except ImportFailure as exc:
        return _refused(partition, now, (refusal_of(exc, filename),), cluster)
    try:
        spec = parsed.partition(partition)
    except KeyError:
        names = ", ".join(p.name for p in parsed.partitions)
        refusal = Refusal(
            f"the config has no partition {partition!r} (it defines: {names})", None, "partition"
        )
        return _refused(partition, now, (refusal,), cluster, parsed=parsed)

    enabled = spec.quota_preemption_enabled
    warnings = list(parsed.warnings)
    new_queues = {q.path: q for q in spec.queues()}

    base_miss = cluster.partition.miss if cluster is not None else 0.0
    planned: Cluster | None = None
    if cluster is not None:
        limits = {
            path: (q.guaranteed, q.max, q.quota_preemption_delay) for path, q in new_queues.items()
        }
        planned = dataclasses.replace(
            cluster,
            root=overlay_limits(cluster.root, limits),
            partition=Partition(enabled, base_miss if miss is None else miss),
        )
    chain = ChainedCluster(planned) if planned is not None else None
    usage = {} if chain is None else {q.path: dict(q.usage) for q in chain.snapshot}

    entries: list[_Entry] = []
    pending: list[_Entry] = []
    for path in sorted(set(new_queues) | set(in_force)):
        entry = _plan_queue(
            path, new_queues.get(path), in_force.get(path), chain, enabled, now, rules
        )
        if entry is not None:
            entries.append(entry)
        elif path in new_queues and path in in_force:
            before = in_force[path]
            if before.timer.is_waiting and before.timer.deadline is not None:
                pending.append(_pending_entry(path, new_queues[path], before, chain, now))

    decreases = [e for e in entries if e.change.is_decrease and e.change.kind == "changed"]
    if not enabled and decreases:
        names = ", ".join(e.change.queue for e in decreases)
        warnings.append(
            f"quota preemption is disabled on partition {spec.name} "
            "(preemption.quotapreemptionenabled is not true): the lowered max of "
            f"{names} only applies to new requests; nothing is preempted"
        )
    if in_force_enabled is not None and in_force_enabled != enabled:
        warnings.append(
            f"this config turns quota preemption {'on' if enabled else 'off'} on partition "
            f"{spec.name}" + ("" if enabled else ": pending quota preemption timers stop firing")
        )
    if chain is None:
        warnings.append(
            f"partition {spec.name} has no cluster snapshot: usage is unknown, so the timers "
            "are shown as if every lowered max were exceeded and no victim can be planned"
        )
    for e in pending:
        warnings.append(
            f"{e.change.queue}: a quota preemption timer already waits (fires at "
            f"{_when(e.deadline or 0.0)}); this config leaves it alone and it fires in the "
            "same chain"
        )

    _simulate([*entries, *pending], chain, enabled, rules)
    entries_sorted = sorted(
        entries,
        key=lambda e: (e.change.order is None, e.change.order or 0, e.change.queue),
    )
    return ConfigPlan(
        partition=spec.name,
        now=now,
        refusals=(),
        warnings=tuple(warnings),
        changes=tuple(e.change for e in entries_sorted),
        pending=tuple(e.change for e in sorted(pending, key=lambda e: e.change.order or 0)),
        quota_preemption_enabled=enabled,
        has_snapshot=chain is not None,
        parsed=parsed,
        timer_rules=rules,
        cluster=planned,
        usage=usage,
    )


def _refused(
    partition: str,
    now: float,
    refusals: tuple[Refusal, ...],
    cluster: Cluster | None,
    *,
    parsed: ConfigImport | None = None,
) -> ConfigPlan:
    return ConfigPlan(
        partition=partition,
        now=now,
        refusals=refusals,
        warnings=() if parsed is None else parsed.warnings,
        changes=(),
        pending=(),
        quota_preemption_enabled=None,
        has_snapshot=cluster is not None,
        parsed=parsed,
    )


def _plan_queue(
    path: str,
    new: QueueSpec | None,
    before: QueueInForce | None,
    chain: ChainedCluster | None,
    enabled: bool,
    now: float,
    rules: timers.RuleSet,
) -> _Entry | None:
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
        return _Entry(change, None)
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
        step = timers.timer_step(
            before.timer,
            timers.ConfigChanged(
                old_max=before.max,
                old_delay=before.delay,
                max=new.max,
                usage=usage if usage is not None else _above(new.max),
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
    return _Entry(change, deadline)


def _pending_entry(
    path: str, spec: QueueSpec, before: QueueInForce, chain: ChainedCluster | None, now: float
) -> _Entry:
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
    return _Entry(change, deadline)


def _simulate(
    entries: Sequence[_Entry],
    chain: ChainedCluster | None,
    enabled: bool,
    rules: timers.RuleSet,
) -> None:
    """Fire the waiting timers in order on one evolving cluster (engine.md 5, "Tick")."""
    by_path = {e.change.queue: e for e in entries if e.deadline is not None}
    states = {p: timers.TimerState.waiting(e.deadline or 0.0) for p, e in by_path.items()}
    order = 0
    for t in sorted({e.deadline for e in by_path.values() if e.deadline is not None}):
        for path in timers.due_queues(states, t):
            e = by_path[path]
            order += 1
            c = e.change
            changes: dict[str, Any] = {"order": order}
            if chain is None:
                changes.update(
                    status="unknown",
                    fire_reason="no cluster snapshot: what this firing preempts is unknown",
                )
                e.change = dataclasses.replace(c, **changes)
                states[path] = timers.TimerState.idle()
                continue
            usage = chain.usage(path)
            changes["usage_at_firing"] = usage
            changes["taken_before"] = tuple(chain.taken)
            step = timers.timer_step(
                states[path],
                timers.Tick(
                    max=c.new_max,
                    usage=usage,
                    delay=c.delay_seconds or 0.0,
                    enabled=enabled,
                ),
                t,
                rules=rules,
            )
            if step.action != "start_preemption":
                changes.update(status="not_needed", fire_reason=step.note)
            else:
                answer = plan_quota_change(
                    chain.base, path, step.plan_max, t, snapshot=chain.snapshot
                )
                victims = _victims(chain, answer)
                chain.take({leaf: plan.victims for leaf, plan in answer.leaves.items()})
                changes.update(
                    status=answer.status,
                    fire_reason=step.note,
                    preemptable=dict(answer.preemptable),
                    claimed=dict(answer.claimed),
                    missed=dict(answer.missed),
                    victims=victims,
                    leaves={leaf: plan.victims for leaf, plan in answer.leaves.items()},
                    alerts=answer.alerts,
                    answer=answer,
                )
            e.change = dataclasses.replace(c, **changes)
            states[path] = timers.TimerState.idle()


def _victims(chain: ChainedCluster, answer: QuotaAnswer) -> tuple[Victim, ...]:
    snap = chain.snapshot
    out: list[Victim] = []
    for leaf, plan in answer.leaves.items():
        wanted = set(plan.victims)
        found = {a.key: a for a in snap.queue(leaf).allocations if a.key in wanted}
        for key in plan.victims:
            a = found[key]
            out.append(Victim(a.key, a.app, a.queue, a.node, dict(a.resources)))
    return tuple(out)


# -- exporting a firing -----------------------------------------------------------------


def firing_scenario(plan: ConfigPlan, change: PlannedChange) -> dict[str, Any]:
    """The scenario ``python -m engine`` answers with this firing's quota preemption.

    The cluster as it stands at the firing (the applied config's limits, the
    victims of every earlier firing preempted) plus the ``quota_change`` request
    for the queue's max, at ``now`` = the firing time.

    Raises:
        ValueError: the change does not fire, or the plan has no cluster.
    """
    if plan.cluster is None or change.fires_at is None or change.order is None:
        raise ValueError(f"{change.queue} does not fire in this plan")
    gone = set(change.taken_before)
    cluster = plan.cluster
    if gone:
        cluster = dataclasses.replace(
            cluster,
            allocations=tuple(
                dataclasses.replace(a, preempted=True) if a.key in gone else a
                for a in cluster.allocations
            ),
        )
    doc = cluster_to_dict(cluster)
    doc["now"] = change.fires_at
    request = {
        "type": "quota_change",
        "queue": change.queue,
        "new_max": None if change.new_max is None else dict(change.new_max),
    }
    return scenario_json(doc, request)


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


__all__ = [
    "ChangeKind",
    "ConfigPlan",
    "PlannedChange",
    "QueueInForce",
    "Refusal",
    "Totals",
    "Victim",
    "describe_change",
    "firing_scenario",
    "in_force_from_spec",
    "plan_config",
    "refusal_of",
]
