"""The seed's quota-decrease rules, each on its own (engine.md 4.2-4.5).

The victim order (:func:`quota_victim_key`, the one replaceable cost
function), the guarantee floor of a leaf (:class:`GuaranteeFloor`), the target
of a lowered max (:func:`quota_target`), what a child can release
(:func:`releasable`) and the split of a target over children
(:func:`split_target`), plus the resource text of alerts.  The plan
(:mod:`engine.quota`) and the victim explanation (:mod:`engine.explain`) both
use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from engine.model import Allocation
from engine.queues import Snapshot
from engine.resources import Resource

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison


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


def format_types(types: Iterable[str]) -> str:
    return ", ".join(sorted(types))
