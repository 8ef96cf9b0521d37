"""Quota-decrease preemption: target, parent distribution, leaf victims (engine.md section 4).

When an administrator lowers a queue's ``max`` below its usage, this module
plans which allocations to preempt so that the new max comes into effect:

- the *target* (the seed's "preemptable resources", 4.2): per type of the new
  max, how much usage must shrink;
- for a parent queue, the target is split over its children in proportion to
  their *releasable* resources (usage above guaranteed), exactly and with the
  largest-remainder rule, recursively down to the leaves (4.5);
- in each leaf, candidates are taken in the seed's order (non-originators,
  lower priority, opted-in, youngest: :func:`quota_victim_key`) until the
  leaf's share is met, never taking the leaf or any ancestor below its
  guaranteed amount in a type the victim uses (4.3, 4.4);
- the answer says whether the target was met (``enforced``), missed within
  the partition's ``miss`` tolerance (``best_effort``) or by more
  (``does_not_help``), with one human-readable alert per problem (4.6).

The module owns the victim ordering key and the guarantee-floor check; the
victim explanation (``engine.explain``) reuses both.  *When* a plan runs (the
delay timers) is ``engine.timers``' business: :func:`plan_quota_change`
computes the plan regardless of the delay and only reports it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from engine.errors import ScenarioError
from engine.model import Allocation, Cluster
from engine.queues import Snapshot, build_snapshot
from engine.resources import Resource

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

QuotaStatus = Literal["enforced", "best_effort", "does_not_help", "not_needed"]
QUOTA_STATUSES: tuple[QuotaStatus, ...] = ("enforced", "best_effort", "does_not_help", "not_needed")

OrderKey = Callable[[Allocation], "SupportsRichComparison"]
"""A victim ordering (cost) function: smaller keys are preempted first."""


# -- the seed's cost function and the guarantee floor ---------------------------


def quota_victim_key(alloc: Allocation) -> tuple[bool, int, bool, float, str]:
    """Sort key of quota-decrease victims (engine.md 4.3, the seed's preference rules).

    Non-originators first, then lower priority, then opted-in (``allow_preemption``)
    before opted-out, then the youngest (largest ``created``); the allocation key
    makes the order total.  This is the one place the order is defined: swap it
    for a cost model by passing another function as ``order_key``.

    >>> a = Allocation("a", "root.q", "n", {"vcore": 1}, created=10.0)
    >>> b = Allocation("b", "root.q", "n", {"vcore": 1}, created=20.0)
    >>> sorted([a, b], key=quota_victim_key)[0].key
    'b'
    """
    return (alloc.originator, alloc.priority, not alloc.allow_preemption, -alloc.created, alloc.key)


class GuaranteeFloor:
    """The guarantee floor of one leaf (engine.md 4.4, "the floor is absolute").

    Taking an allocation must not bring the leaf or any ancestor up to root below
    its guaranteed amount in a type the allocation uses.  The floor reads a
    per-queue usage vector: a plan's working usage (which the plan lowers as it
    takes victims, see :meth:`take`) or, for an explanation, the snapshot's usage.

    Only the queues of the chain that have a guarantee are kept, nearest first,
    so a leaf without guaranteed ancestors costs nothing per allocation.
    """

    __slots__ = ("_guarded",)

    def __init__(self, snap: Snapshot, usage: Sequence[Mapping[str, int]], leaf: int) -> None:
        guaranteed = snap.guaranteed_by_index
        self._guarded: tuple[tuple[int, Mapping[str, int], tuple[tuple[str, int], ...]], ...] = (
            tuple(
                (x, usage[x], tuple(g.items()))
                for x in reversed(snap.chain[leaf])
                if (g := guaranteed[x])
            )
        )

    @property
    def queues(self) -> tuple[int, ...]:
        """Indices of the guaranteed queues on the chain, nearest to the leaf first."""
        return tuple(x for x, _, _ in self._guarded)

    def blocker(self, resources: Resource) -> int:
        """Index of the nearest queue whose guarantee forbids taking *resources*, or -1."""
        for x, u, g in self._guarded:
            for t, gq in g:
                v = resources.get(t, 0)
                if v > 0 and u.get(t, 0) - v < gq:
                    return x
        return -1


# -- target and distribution ----------------------------------------------------


def quota_target(usage: Resource | None, new_max: Resource | None) -> dict[str, int]:
    """The seed's "preemptable resources" of a queue for a new max (engine.md 4.2).

    Only the new max's types, and of those only the ones whose usage exceeds the
    new limit; the current max plays no part.

    >>> quota_target({"memory": 80, "vcore": 100}, {"memory": 50})
    {'memory': 30}
    >>> quota_target({"memory": 100, "vcore": 80}, {"memory": 200, "vcore": 50})
    {'vcore': 30}
    """
    if not new_max:
        return {}
    used = usage or {}
    return {t: used.get(t, 0) - m for t, m in new_max.items() if used.get(t, 0) > m}


def releasable(usage: Resource | None, guaranteed: Resource | None) -> dict[str, int]:
    """What a child queue can give up without going below its guarantee (engine.md 4.5).

    Usage above guaranteed where the guarantee defines the type; all of the usage
    where it does not ("child queues that don't have guaranteed resources set
    completely, all used resources can be considered as releasable").  Only
    positive entries are kept.

    >>> releasable({"memory": 40, "vcore": 8}, {"memory": 20})
    {'memory': 20, 'vcore': 8}
    >>> releasable({"memory": 10}, {"memory": 20})
    {}
    """
    g = guaranteed or {}
    out: dict[str, int] = {}
    for t, u in (usage or {}).items():
        r = u - g[t] if t in g else u
        if r > 0:
            out[t] = r
    return out


def split_target(
    target: Resource, releasable_by_child: Mapping[str, Resource]
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Split *target* over children in proportion to what they can release (engine.md 4.5).

    For each type t, child c gets ``floor(rel(c)[t] * T[t] / total)`` in exact
    integer arithmetic; the remainder goes one unit each to the children with the
    largest ``(rel(c)[t] * T[t]) mod total``, ties by path.  The shares of every
    releasable type sum exactly to the target.

    Returns ``(shares, unreleasable)``: shares per child path (children that get
    nothing in a type have no entry for it; children that get nothing at all are
    absent) and the target types no child can release, in type order.

    >>> split_target({"memory": 30}, {"root.a.b": {"memory": 40}, "root.a.c": {"memory": 20}})
    ({'root.a.b': {'memory': 20}, 'root.a.c': {'memory': 10}}, [])
    >>> split_target({"vcore": 10}, {"x": {"vcore": 1}, "y": {"vcore": 1}, "z": {"vcore": 1}})
    ({'x': {'vcore': 4}, 'y': {'vcore': 3}, 'z': {'vcore': 3}}, [])
    """
    children = sorted(releasable_by_child)
    shares: dict[str, dict[str, int]] = {}
    unreleasable: list[str] = []
    for t in sorted(target):
        want = target[t]
        if want <= 0:
            continue
        holders = [(c, releasable_by_child[c].get(t, 0)) for c in children]
        holders = [(c, r) for c, r in holders if r > 0]
        total = sum(r for _, r in holders)
        if total == 0:
            unreleasable.append(t)
            continue
        floors: dict[str, int] = {}
        remainders: list[tuple[int, str]] = []
        for c, r in holders:
            quotient, remainder = divmod(r * want, total)
            floors[c] = quotient
            remainders.append((-remainder, c))
        left = want - sum(floors.values())
        remainders.sort()  # largest remainder first, ties by path
        for _, c in remainders[:left]:
            floors[c] += 1
        for c, share in floors.items():
            if share > 0:
                shares.setdefault(c, {})[t] = share
    return {c: shares[c] for c in children if c in shares}, unreleasable


# -- answer ---------------------------------------------------------------------


def _resource_from(data: object, field_name: str) -> dict[str, int]:
    if not isinstance(data, Mapping):
        raise ScenarioError(field_name, "must be an object of type -> integer")
    out: dict[str, int] = {}
    for t, q in data.items():
        if not isinstance(t, str) or isinstance(q, bool) or not isinstance(q, int):
            raise ScenarioError(f"{field_name}.{t}", "must be an integer quantity")
        out[t] = q
    return out


def _strings_from(data: object, field_name: str) -> tuple[str, ...]:
    if not isinstance(data, list | tuple) or not all(isinstance(s, str) for s in data):
        raise ScenarioError(field_name, "must be a list of strings")
    return tuple(cast("Sequence[str]", data))


def _mapping_from(data: object, field_name: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise ScenarioError(field_name, "must be an object")
    return cast("Mapping[str, object]", data)


def _field(data: Mapping[str, object], name: str, prefix: str) -> object:
    if name not in data:
        raise ScenarioError(f"{prefix}{name}", "is missing")
    return data[name]


@dataclass(frozen=True, slots=True)
class LeafPlan:
    """One leaf's part in a quota plan: its share of the target and its victims."""

    preemptable: Mapping[str, int]
    """The leaf's share of the target (the whole target when the changed queue is a leaf)."""
    claimed: Mapping[str, int]
    """Per share type, what the leaf's victims freed (may exceed the share)."""
    victims: tuple[str, ...]
    """Allocation keys in the order they were taken."""

    def to_dict(self) -> dict[str, object]:
        return {
            "preemptable": dict(self.preemptable),
            "claimed": dict(self.claimed),
            "victims": list(self.victims),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], prefix: str = "") -> LeafPlan:
        return cls(
            preemptable=_resource_from(_field(data, "preemptable", prefix), f"{prefix}preemptable"),
            claimed=_resource_from(_field(data, "claimed", prefix), f"{prefix}claimed"),
            victims=_strings_from(_field(data, "victims", prefix), f"{prefix}victims"),
        )


@dataclass(frozen=True, slots=True)
class QuotaAnswer:
    """Answer of a ``quota_change`` request (scenario-format.md section 2, engine.md 4.6).

    ``to_dict`` gives exactly the contract's keys (``status``, ``queue``,
    ``preemptable``, ``claimed``, ``leaves``, ``victims``, ``alerts``) plus the
    extras ``delay``, ``start_at``, ``missed`` and ``shares``.
    """

    status: QuotaStatus
    queue: str
    preemptable: Mapping[str, int]
    """The changed queue's target: only the types that must shrink."""
    claimed: Mapping[str, int]
    """Per target type, the sum over all victims (a victim counts in every target type)."""
    leaves: Mapping[str, LeafPlan]
    """Each leaf that took part, in processing (path) order."""
    victims: tuple[str, ...]
    """Every victim, leaf by leaf in processing order."""
    alerts: tuple[str, ...]
    delay: float
    """Effective ``quota_preemption_delay`` of the queue, in seconds."""
    start_at: float | None
    """``now + delay``; ``None`` when the delay is 0 (YuniKorn would never enforce)."""
    missed: Mapping[str, int] = field(default_factory=dict)
    """Per target type, how much of the target was not claimed (only positive entries)."""
    shares: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    """Per distributed parent queue, each participating child's share of its target."""

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "queue": self.queue,
            "preemptable": dict(self.preemptable),
            "claimed": dict(self.claimed),
            "leaves": {path: leaf.to_dict() for path, leaf in self.leaves.items()},
            "victims": list(self.victims),
            "alerts": list(self.alerts),
            "delay": self.delay,
            "start_at": self.start_at,
            "missed": dict(self.missed),
            "shares": {
                parent: {child: dict(share) for child, share in kids.items()}
                for parent, kids in self.shares.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> QuotaAnswer:
        """Rebuild an answer from :meth:`to_dict` output; bad data raises ScenarioError."""
        status = _field(data, "status", "")
        if status not in QUOTA_STATUSES:
            raise ScenarioError("status", f"unknown quota status {status!r}")
        queue = _field(data, "queue", "")
        if not isinstance(queue, str):
            raise ScenarioError("queue", "must be a string")
        leaves_data = _mapping_from(_field(data, "leaves", ""), "leaves")
        leaves = {
            path: LeafPlan.from_dict(
                _mapping_from(leaf, f"leaves.{path}"), prefix=f"leaves.{path}."
            )
            for path, leaf in leaves_data.items()
        }
        delay = data.get("delay", 0.0)
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise ScenarioError("delay", "must be a number")
        start_at = data.get("start_at")
        if start_at is not None and (
            isinstance(start_at, bool) or not isinstance(start_at, int | float)
        ):
            raise ScenarioError("start_at", "must be a number or null")
        shares_data = _mapping_from(data.get("shares", {}), "shares")
        shares = {
            parent: {
                child: _resource_from(share, f"shares.{parent}.{child}")
                for child, share in _mapping_from(kids, f"shares.{parent}").items()
            }
            for parent, kids in shares_data.items()
        }
        return cls(
            status=status,
            queue=queue,
            preemptable=_resource_from(_field(data, "preemptable", ""), "preemptable"),
            claimed=_resource_from(_field(data, "claimed", ""), "claimed"),
            leaves=leaves,
            victims=_strings_from(_field(data, "victims", ""), "victims"),
            alerts=_strings_from(_field(data, "alerts", ""), "alerts"),
            delay=float(delay),
            start_at=None if start_at is None else float(start_at),
            missed=_resource_from(data.get("missed", {}), "missed"),
            shares=shares,
        )


# -- human-readable text ----------------------------------------------------------


def format_resource(r: Resource | None) -> str:
    """A resource for alert text, types in name order.

    >>> format_resource({"vcore": 2000, "memory": 30})
    '{memory: 30, vcore: 2000}'
    >>> format_resource(None)
    'nil'
    """
    if r is None:
        return "nil"
    return "{" + ", ".join(f"{t}: {r[t]}" for t in sorted(r)) + "}"


def _format_types(types: Iterable[str]) -> str:
    return ", ".join(sorted(types))


# -- the plan ---------------------------------------------------------------------


@dataclass(slots=True)
class _LeafRun:
    """Mutable bookkeeping of one leaf while its victims are taken."""

    path: str
    share: dict[str, int]
    need: dict[str, int]
    victims: list[Allocation]
    blockers: set[int]
    uncovered: list[str] = field(default_factory=list)
    freed: dict[str, int] = field(default_factory=dict)
    """Everything the leaf's victims free, all types."""


def _in_order(
    cands: list[tuple[SupportsRichComparison, int, Allocation]],
    share: Mapping[str, int],
    usage: Mapping[str, int],
) -> Iterator[Allocation]:
    """The candidates in key order, without sorting them all when few will be needed.

    When the share is a small part of the leaf's usage the plan stops early, so a
    heap (linear to build, one pop per candidate looked at) beats a full sort;
    when much of the leaf goes, a sort is cheaper per candidate.
    """
    small = all(q * 4 <= usage.get(t, 0) for t, q in share.items())
    if not small:
        for entry in sorted(cands):
            yield entry[2]
        return
    heap = list(cands)
    heapq.heapify(heap)
    while heap:
        yield heapq.heappop(heap)[2]


def _take_leaf_victims(
    snap: Snapshot,
    work: list[dict[str, int]],
    leaf: int,
    share: Mapping[str, int],
    order_key: OrderKey,
) -> _LeafRun:
    """Engine.md 4.3 and 4.4 for one leaf, lowering the shared working usage *work*.

    Only the guaranteed queues' entries of *work* are kept up to date: the floor
    is their only reader.
    """
    share_types = frozenset(share)
    cands = [
        (order_key(a), i, a)
        for i, a in enumerate(snap.info(leaf).allocations)
        if not a.required_node and not a.preempted and not share_types.isdisjoint(a.resources)
    ]
    need = dict(share)
    unmet = sum(1 for n in need.values() if n > 0)
    run = _LeafRun(path=snap.paths[leaf], share=dict(share), need=need, victims=[], blockers=set())
    floor = GuaranteeFloor(snap, work, leaf)
    guarded = [work[x] for x in floor.queues]
    freed = run.freed
    for v in _in_order(cands, share, snap.usage_by_index[leaf]):
        if not unmet:
            break  # target reached
        vr = v.resources
        for t, q in vr.items():
            if q > 0 and need.get(t, 0) > 0:
                break
        else:
            continue  # helps no unmet type
        if guarded:
            blocker = floor.blocker(vr)
            if blocker >= 0:
                run.blockers.add(blocker)
                continue
            for u in guarded:
                for t, q in vr.items():
                    u[t] = u.get(t, 0) - q
        for t, q in vr.items():
            freed[t] = freed.get(t, 0) + q
            n = need.get(t)
            if n is not None:
                if n > 0 >= n - q:
                    unmet -= 1
                need[t] = n - q
        run.victims.append(v)
    if unmet:
        # a share type that no candidate uses at all: the leaf cannot help there
        covered = {t for _, _, a in cands for t, q in a.resources.items() if q > 0 and t in need}
        run.uncovered = sorted(t for t, n in need.items() if n > 0 and t not in covered)
    return run


def _distribute(
    snap: Snapshot,
    queue: int,
    target: Mapping[str, int],
    running: frozenset[str],
    leaf_shares: dict[int, dict[str, int]],
    shares_out: dict[str, dict[str, dict[str, int]]],
    alerts: list[str],
) -> None:
    """Engine.md 4.5: split *target* of parent *queue* over its children, down to the leaves.

    Depth first in path order with an explicit stack, so that absurdly deep trees
    cannot hit the recursion limit.
    """
    stack: list[tuple[int, Mapping[str, int]]] = [(queue, target)]
    while stack:
        q, want = stack.pop()
        path = snap.paths[q]
        kids = [
            c for c in snap.children[q] if snap.usage_by_index[c] and snap.paths[c] not in running
        ]
        rel = {
            snap.paths[c]: releasable(snap.usage_by_index[c], snap.guaranteed_by_index[c])
            for c in kids
        }
        shares, unreleasable = split_target(want, rel)
        if unreleasable:
            alerts.append(
                f"no child of {path} can release {_format_types(unreleasable)}: every child "
                "is empty, already running a quota preemption, or within its guarantee there"
            )
        if shares:
            shares_out[path] = shares
        parents: list[tuple[int, Mapping[str, int]]] = []
        for child_path, share in shares.items():
            c = snap.index[child_path]
            if snap.is_leaf[c]:
                leaf_shares[c] = share
            else:
                parents.append((c, share))
        stack.extend(reversed(parents))  # the first child in path order is popped first


def _effective_delay(snap: Snapshot, queue: int) -> float:
    return float(snap.info(queue).quota_preemption_delay)


def _status(
    target: Mapping[str, int], claimed: Mapping[str, int], miss: float
) -> tuple[QuotaStatus, dict[str, int]]:
    missed = {t: target[t] - claimed.get(t, 0) for t in target if claimed.get(t, 0) < target[t]}
    if not missed:
        return "enforced", missed
    # float division on purpose: it rounds exactly like the ``miss`` fraction read from
    # JSON, so a miss written as 15/55 or 3/11 compares equal to a 15-of-55 shortfall
    worst = max(missed[t] / target[t] for t in missed)
    return ("best_effort" if worst <= miss else "does_not_help"), missed


def plan_quota_change(
    cluster: Cluster,
    queue: str,
    new_max: Resource | None,
    now: float,
    running: frozenset[str] = frozenset(),
    *,
    order_key: OrderKey = quota_victim_key,
    snapshot: Snapshot | None = None,
) -> QuotaAnswer:
    """Plan the preemption that enforces *new_max* on *queue* (engine.md section 4).

    Args:
        cluster: the cluster state.
        queue: path of the queue whose max is lowered (leaf or parent).
        new_max: the new max; ``None`` or ``{}`` means "not set" (nothing to enforce).
        now: seconds since the epoch; only used for ``start_at``.
        running: paths of queues already running a quota preemption; they and
            their subtrees take no part in a parent's distribution (4.5 step 1).
        order_key: the victim cost function (default: the seed's order, 4.3).
        snapshot: a snapshot of *cluster* already built by the caller, to save time.

    Returns:
        The plan; ``not_needed`` (no victims) when the partition flag is off,
        the new max is not set, or usage is within it.

    Raises:
        ScenarioError: *queue* is not in the tree.
    """
    snap = build_snapshot(cluster) if snapshot is None else snapshot
    if queue not in snap:
        raise ScenarioError("request.queue", f"unknown queue {queue!r}")
    qi = snap.index[queue]
    limit = dict(new_max) if new_max else None
    delay = _effective_delay(snap, qi)
    start_at = now + delay if delay > 0 else None
    target = quota_target(snap.usage_by_index[qi], limit)
    enabled = cluster.partition.quota_preemption_enabled

    alerts: list[str] = []
    if target and not enabled:
        alerts.append(
            f"quota preemption is disabled on the partition: the lowered max of {queue} "
            f"only applies to new requests; {format_resource(target)} stays over it"
        )
    if target and delay <= 0:
        alerts.append(
            f"the quota preemption delay of {queue} is 0: YuniKorn never enforces a "
            "lowered max when the delay is 0 (set a delay to enforce this plan)"
        )
    guaranteed = snap.guaranteed_by_index[qi]
    if limit and guaranteed:
        below = {t: m for t, m in limit.items() if t in guaranteed and m < guaranteed[t]}
        if below:
            alerts.append(
                f"new max below guaranteed on {queue}: new max {format_resource(below)}, "
                f"guaranteed {format_resource({t: guaranteed[t] for t in below})}; "
                "the guarantee limits what can be claimed"
            )

    if not target or not enabled:
        return QuotaAnswer(
            status="not_needed",
            queue=queue,
            preemptable=target,
            claimed=dict.fromkeys(target, 0),
            leaves={},
            victims=(),
            alerts=tuple(alerts),
            delay=delay,
            start_at=start_at,
        )

    leaf_shares: dict[int, dict[str, int]] = {}
    shares_out: dict[str, dict[str, dict[str, int]]] = {}
    if snap.is_leaf[qi]:
        leaf_shares[qi] = dict(target)
    else:
        _distribute(snap, qi, target, running, leaf_shares, shares_out, alerts)

    # one working usage for all leaves, so shared ancestors' floors see earlier victims
    work = [dict(u) for u in snap.usage_by_index]
    runs = [
        _take_leaf_victims(snap, work, leaf, leaf_shares[leaf], order_key)
        for leaf in sorted(leaf_shares, key=lambda i: snap.paths[i])  # path order
    ]

    victims: list[Allocation] = [v for run in runs for v in run.victims]
    claimed = dict.fromkeys(target, 0)
    for run in runs:  # a victim counts in every target type it frees (4.6)
        for t in target:
            claimed[t] += run.freed.get(t, 0)
    status, missed = _status(target, claimed, cluster.partition.miss)

    # alerts of the leaves, then of the guarantees that stopped victims, then the outcome
    unmet_by_blocker: dict[int, dict[str, int]] = {}
    for run in runs:
        if run.uncovered:
            alerts.append(
                f"leaf {run.path} has no allocation that can be preempted for "
                f"{_format_types(run.uncovered)} (share {format_resource(run.share)})"
            )
        unmet = {t: n for t, n in run.need.items() if n > 0}
        if unmet:
            for b in run.blockers:
                acc = unmet_by_blocker.setdefault(b, {})
                for t, n in unmet.items():
                    acc[t] = acc.get(t, 0) + n
    for b in sorted(unmet_by_blocker, key=lambda i: snap.paths[i]):
        alerts.append(
            f"the guarantee of {snap.paths[b]} {format_resource(snap.guaranteed_by_index[b])} "
            f"stopped preemption: {format_resource(unmet_by_blocker[b])} of the target "
            "remains unmet"
        )
    miss = cluster.partition.miss
    if status == "best_effort":
        alerts.append(
            f"best effort on {queue}: {format_resource(missed)} of the target "
            f"{format_resource(target)} was not claimed, within the partition's miss of {miss:g}"
        )
    elif status == "does_not_help":
        alerts.append(
            f"preemption does not help on {queue}: {format_resource(missed)} of the target "
            f"{format_resource(target)} was not claimed, more than the partition's miss "
            f"of {miss:g}; the victims found are still listed"
        )

    leaves = {
        run.path: LeafPlan(
            preemptable=run.share,
            claimed={t: run.share[t] - run.need[t] for t in run.share},
            victims=tuple(v.key for v in run.victims),
        )
        for run in runs
    }
    return QuotaAnswer(
        status=status,
        queue=queue,
        preemptable=target,
        claimed=claimed,
        leaves=leaves,
        victims=tuple(v.key for v in victims),
        alerts=tuple(alerts),
        delay=delay,
        start_at=start_at,
        missed=missed,
        shares=shares_out,
    )
