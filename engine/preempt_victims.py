"""Potential victims of one ask and their order (engine.md 3.4, 3.6).

Which leaves below the fence may give up tasks and at what priority
(:func:`victim_leaves`), which allocations are potential victims
(:class:`Eligible`), the one replaceable cost function
(:func:`victim_order_key`), and the additional-victim candidates produced
lazily in that order (:func:`lazy_in_order`, :func:`youngest_first`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain
from operator import attrgetter

from engine import resources as res
from engine.model import Allocation
from engine.preempt_state import PreemptionState, VictimKey
from engine.queues import POLICY_DISABLED, remaining_at
from engine.resources import Resource


def victim_order_key(alloc: Allocation) -> tuple[bool, bool, float, str]:
    """Order of potential victims on a node and of additional victims (engine.md 3.6).

    Opted-in before opted-out, non-originators before originators, youngest
    first; the key makes the order total.  This is the one replaceable cost
    function of the seed: pass another as ``order_key`` to change it.  A
    replacement must also be total (end with the allocation key, engine.md 0.2).

    >>> old = Allocation("old", "root.a", "n", {"vcore": 1}, created=1.0)
    >>> young = Allocation("young", "root.a", "n", {"vcore": 1}, created=2.0)
    >>> out = Allocation("out", "root.a", "n", {"vcore": 1}, created=3.0, allow_preemption=False)
    >>> [a.key for a in sorted([out, old, young], key=victim_order_key)]
    ['young', 'old', 'out']
    """
    return (not alloc.allow_preemption, alloc.originator, -alloc.created, alloc.key)


_ANY_PRIORITY = 2**40
"""Priority limit of a leaf under a priority-fenced queue: every priority is eligible."""


def victim_leaves(
    state: PreemptionState, askq: int, fence: int, prio: Mapping[int, int]
) -> dict[int, int]:
    """Leaves below the fence whose tasks may be victims, with their priority limit (3.4)."""
    snap = state.snap
    on_path = set(snap.chain[askq])
    limits: dict[int, int] = {}
    stack: list[tuple[int, int, bool]] = [(fence, prio[fence], False)]
    while stack:
        q, p, fenced = stack.pop()
        if q == askq:
            continue
        if snap.is_leaf[q]:
            if snap.info(q).preemption_policy == POLICY_DISABLED:
                continue
            r = remaining_at(snap, state.usage, q, askq)
            if r is not None and res.no_negative(r):
                continue  # the queue is within its guarantee
            limits[q] = _ANY_PRIORITY if fenced else p
            continue
        for c in reversed(snap.children[q]):
            if c in on_path:
                stack.append((c, prio[c], fenced))
                continue
            child = snap.info(c)
            if child.priority_fence:
                if child.priority_offset > p:
                    continue
                stack.append((c, p, True))
            else:
                stack.append((c, p - child.priority_offset, fenced))
    return limits


class Eligible:
    """Is an allocation a potential victim of this ask (3.4)?  Callable, for lazy filtering."""

    __slots__ = ("ask", "index", "limits", "preempted")

    def __init__(self, state: PreemptionState, limits: Mapping[int, int], ask: Resource) -> None:
        self.index = state.snap.index
        self.limits = limits
        self.ask = ask
        self.preempted = state.preempted

    def __call__(self, a: Allocation) -> bool:
        limit = self.limits.get(self.index[a.queue])
        return (
            limit is not None
            and a.priority <= limit
            and a.key not in self.preempted
            and any(t in a.resources for t in self.ask)  # match_any: values ignored
        )


def eligible_victims(
    state: PreemptionState, limits: Mapping[int, int], eligible: Eligible
) -> list[Allocation]:
    """Every potential victim (3.4), leaf by leaf in path order."""
    return [a for q in sorted(limits) for a in state.leaf_candidates[q] if eligible(a)]


def lazy_in_order(
    state: PreemptionState,
    limits: Mapping[int, int],
    eligible: Eligible,
    chosen: set[str],
    order_key: VictimKey,
) -> Iterator[Allocation]:
    """Potential victims outside *chosen* in *order_key* order, produced lazily (3.9).

    The additional-victims loop usually stops after a few victims, so nothing
    is sorted up front: a state serving its first decision takes the smallest
    in growing batches (for the default order without calling the key on every
    allocation, :func:`youngest_first`; for another order with
    ``heapq.nsmallest``); a state reused for more decisions (a round, a
    dashboard what-if) sorts every possible victim once and filters that list
    as it goes.  Keys are unique (the order key ends with the allocation key),
    so a batch resumes right after the previous one.
    """
    leaves = sorted(limits)
    in_fence = sum(len(state.leaf_candidates[q]) for q in leaves)
    if in_fence * 4 >= state.candidate_total:
        cached = state.sorted_candidates(order_key)
        if cached is not None:
            yield from (a for a in cached if a.key not in chosen and eligible(a))
            return

    excluded = chosen | state.preempted
    cands = state.leaf_candidates
    if order_key is victim_order_key:
        yield from youngest_first(
            [cands[q] for q in leaves], lambda a: a.key not in excluded and eligible(a)
        )
        return
    ask_types = frozenset(eligible.ask)
    # eligible() inlined as one comprehension: this is the one full scan of a first decision
    pool = [
        a
        for q in leaves
        for limit in (limits[q],)
        for a in cands[q]
        if a.priority <= limit
        and a.key not in excluded
        and not ask_types.isdisjoint(a.resources)  # match_any
    ]
    batch = 32
    produced = 0
    while True:
        head = heapq.nsmallest(produced + batch, pool, key=order_key)
        yield from head[produced:]
        if len(head) < produced + batch:
            return  # every potential victim has been produced
        produced = len(head)
        batch *= 4


_CREATED = attrgetter("created")


def youngest_first(
    groups: Sequence[Sequence[Allocation]], keep: Callable[[Allocation], bool], batch: int = 32
) -> Iterator[Allocation]:
    """The allocations of *groups* that *keep* accepts, in :func:`victim_order_key` order.

    Exactly ``sorted(filter(keep, chain(*groups)), key=victim_order_key)``,
    produced lazily and without calling the key (or *keep*) on every
    allocation: opted-in non-originators come first, youngest first, so they
    are taken in bands of ``created`` from the top.  A band holds the next
    *batch* (growing) youngest allocations of every kind, found with C-level
    passes over the ``created`` values; only the band is filtered and sorted.
    The rare opted-out or originator allocations follow, sorted at once.
    """
    pool = list(chain.from_iterable(groups))
    created = list(map(_CREATED, pool))
    n = len(pool)
    total = sum(created)
    if total != total:  # a NaN (or inf - inf): bands need a total order of created
        yield from sorted(filter(keep, pool), key=victim_order_key)
        return
    taken = 0  # allocations with created >= the current band's lower bound
    upper: float | None = None
    while taken < n:
        m = min(n, taken + batch)
        if m * 8 < n:
            lower = heapq.nlargest(m, created)[-1]
        else:
            lower = sorted(created, reverse=True)[m - 1]
        if upper is None:
            band = [a for a in pool if a.created >= lower]
        else:
            band = [a for a in pool if lower <= a.created < upper]
        taken += len(band)
        firsts = [a for a in band if a.allow_preemption and not a.originator and keep(a)]
        firsts.sort(key=victim_order_key)
        yield from firsts
        upper = lower
        batch *= 4
    rest = [a for a in pool if (a.originator or not a.allow_preemption) and keep(a)]
    rest.sort(key=victim_order_key)
    yield from rest
