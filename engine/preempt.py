"""Inter-queue preemption for one ask: which victims let it run, on which node.

Owns engine.md section 3 (``preempt``: fence, priorities, eligible victims,
guarantee check, per-node victims, best node, additional victims, trimming
to the fewest victims that let the ask run).  A decision reads a
:class:`~engine.preempt_state.PreemptionState` (queue sums, node availability
and per-node victim indexes built once; one working usage with undo), which
:mod:`engine.rounds` evolves from ask to ask.

Speed (the reference scheduler copied every queue snapshot for every node):
besides the reusable state, nodes that cannot beat
the best one found so far are skipped on per-node upper bounds; additional
victims are produced lazily in cost order.  None of this changes an answer:
``prune=False`` runs the plain algorithm and a property test checks that both
agree.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

from engine import resources as res
from engine.answers import PreemptAnswer
from engine.model import Allocation, Ask, Cluster
from engine.preempt_state import PreemptionState, VictimKey, WorkingUsage
from engine.queues import (
    POLICY_DISABLED,
    POLICY_FENCE,
    remaining_at,
)
from engine.resources import Resource

REASON_NO_PREEMPT_OTHER = "the ask may not preempt other tasks"
REASON_DELAY = "the preemption delay of the ask's queue has not passed"
REASON_GUARANTEE = "the ask queue cannot stay within its guarantee"
REASON_NO_NODE = "no node can hold the ask"
REASON_NO_NODE_FREED = "no node can be freed for the ask"
REASON_EXTRA = "extra victims would push the ask queue over its guarantee"
REASON_NO_VICTIMS = "no victims found"
REASON_IN_PROGRESS = "the ask fits once the preemptions in progress finish"
REASON_NODE_NOT_FREED = "the victims do not free the node"


def reason_over_max(queue: str) -> str:
    """The 3.11 (b) reason naming the queue whose max the ask would break."""
    return f"the ask would exceed the max of {queue}"


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


# -- the algorithm -------------------------------------------------------------


def _fence_and_priorities(
    state: PreemptionState, askq: int, ask: Resource, priority: int
) -> tuple[int, dict[int, int]]:
    """Fence (engine.md 3.3) and ``prio`` of the ask path up to it (3.2)."""
    snap = state.snap
    chain = snap.chain[askq]
    # E(Q): cmin of the maxima of Q and all its ancestors, computed top-down
    eff: dict[int, dict[str, int] | None] = {}
    acc: dict[str, int] | None = None
    for x in chain:
        acc = res.cmin(acc, snap.max_by_index[x])
        eff[x] = acc
    prio: dict[int, int] = {}
    p = priority
    for x in reversed(chain):
        info = snap.info(x)
        p = info.priority_offset if info.priority_fence else p + info.priority_offset
        prio[x] = p
        allocated = state.allocated[x]
        m = snap.max_by_index[x]
        if (
            x == 0
            or info.preemption_policy == POLICY_FENCE
            # seed rule: usage already equals the max
            or (m is not None and res.equals(m, allocated))
            # projected rule: usage plus the ask would exceed the effective max
            or res.exceeds_any(eff[x], res.add(allocated, ask))
        ):
            return x, prio
    raise AssertionError("root ends every chain")  # pragma: no cover


def _queues_fit(state: PreemptionState, askq: int, ask: Resource) -> bool:
    """Every queue from the ask queue to root stays within its max with the ask (3.1 step 2)."""
    snap = state.snap
    for x in snap.chain[askq]:
        m = snap.max_by_index[x]
        if m is None:
            continue
        a = state.allocated[x]
        for t, q in ask.items():
            limit = m.get(t)
            if limit is not None and a.get(t, 0) + q > limit:
                return False
    return True


_ANY_PRIORITY = 2**40
"""Priority limit of a leaf under a priority-fenced queue: every priority is eligible."""


def _victim_leaves(
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


class _Eligible:
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


def _eligible_victims(
    state: PreemptionState, limits: Mapping[int, int], eligible: _Eligible
) -> list[Allocation]:
    """Every potential victim (3.4), leaf by leaf in path order."""
    return [a for q in sorted(limits) for a in state.leaf_candidates[q] if eligible(a)]


def _guarantee_check(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    victims: Callable[[], Sequence[Allocation]],
) -> bool:
    """engine.md 3.5: can the ask queue stay within its guarantee?  *victims* is lazy."""
    snap = state.snap
    r0 = remaining_at(snap, state.usage, askq, askq)
    if r0 is not None and res.fit_actual(r0, ask):
        return True
    potential = victims()
    if not potential:
        return False  # with no potential victims the loop cannot pass
    mark = len(work.log)
    work.apply(askq, ask, 1)
    # removals only raise remaining values: testing once after removing all is the same
    per_leaf: dict[int, dict[str, int]] = {}
    index = snap.index
    for v in potential:
        acc = per_leaf.setdefault(index[v.queue], {})
        for t, q in v.resources.items():
            acc[t] = acc.get(t, 0) + q
    for q, leaf_sum in per_leaf.items():
        work.apply(q, leaf_sum, -1)
    after = remaining_at(snap, work.usage, askq, askq)
    work.undo(mark)
    return after is not None and res.under_g(ask, after)


@dataclass(slots=True)
class _NodeResult:
    node: str
    index: int
    victims: list[Allocation]


def _victims_on_node(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    avail0: Mapping[str, int],
    ordered: Sequence[Allocation],
    bound: int | None,
    prune: bool,
) -> tuple[int, list[Allocation]] | None:
    """engine.md 3.7 for one node; ``bound``: give up once the index cannot be below it."""
    if res.fit_in(avail0, ask):
        return (-1, [])
    snap = state.snap
    usage = work.usage
    index = snap.index
    mark = len(work.log)
    # pass 1: head (victims that reduce the node's shortfall) then tail
    avail = dict(avail0)
    head: list[Allocation] = []
    tail: list[Allocation] = []
    for v in ordered:
        q = index[v.queue]
        vr = v.resources
        r = remaining_at(snap, usage, q, askq)
        if not (r is None or res.over_g(ask, r)):
            continue  # removing it would take its queue below its guarantee
        work.apply(q, vr, -1)
        ar = remaining_at(snap, usage, askq, askq)
        if ar is None or not res.fit_actual(ar, vr):
            work.apply(q, vr, 1)
            break  # the ask queue cannot absorb it: stops the pass
        work.apply(askq, vr, 1)
        after = res.add(avail, vr)
        if res.equals_or_empty(res.sub_clamp(ask, avail), res.sub_clamp(ask, after)):
            work.apply(askq, vr, -1)
            work.apply(q, vr, 1)
            tail.append(v)  # does not help the node: last resort
        else:
            avail = after
            head.append(v)
            if prune and bound == 1:
                # only index 0 can win, and pass 2 takes this first helping victim first
                # (every victim before it left the working usage as it found it): stop here
                break
    work.undo(mark)
    order = head + tail
    if not order:
        return None
    # pass 2: fresh working usage, the order is fixed
    avail = dict(avail0)
    found = -1
    result: list[Allocation] = []
    for v in order:
        q = index[v.queue]
        r = remaining_at(snap, usage, q, askq)
        if r is None or res.over_g(ask, r):
            work.apply(q, v.resources, -1)
            for t, n in v.resources.items():
                avail[t] = avail.get(t, 0) + n
            if found < 0 and res.fit_in(avail, ask):
                found = len(result)
            result.append(v)
            if prune:
                if found >= 0:
                    break  # victims after the index are never used (3.8 keeps res[0..index])
                if bound is not None and len(result) >= bound:
                    work.undo(mark)
                    return None  # the index would be >= bound: cannot beat the best node
    work.undo(mark)
    return None if found < 0 else (found, result)


def _top_sum_fits(
    avail0: Mapping[str, int], ask: Resource, victims: Sequence[Allocation], k: int
) -> bool:
    """Could some *k* victims free the node?  Upper bound: per type, the k largest values."""
    bound = dict(avail0)
    for t in ask:
        values = sorted((v.resources.get(t, 0) for v in victims), reverse=True)[:k]
        bound[t] = bound.get(t, 0) + sum(values)
    return res.fit_in(bound, ask)


def _best_node_plain(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    by_node: Mapping[str, Sequence[Allocation]],
    candidates: Sequence[str],
    nodes_tried: bool,
) -> _NodeResult | None:
    """engine.md 3.7-3.8 literally: every candidate node, then the smallest (index, node id)."""
    found: list[_NodeResult] = []
    for node in candidates:
        avail0 = state.node_avail[node]
        result = _victims_on_node(
            state, work, askq, ask, avail0, by_node.get(node, ()), None, prune=False
        )
        if result is None:
            continue
        index, victims = result
        if index < 0 and nodes_tried:
            continue  # only nodes were missing: a node that already fits is no answer
        found.append(_NodeResult(node, index, victims[: index + 1]))
    found.sort(key=lambda r: (r.index, r.node))
    return found[0] if found else None


def _best_node_pruned(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    eligible: _Eligible,
    candidates: Sequence[str],
    nodes_tried: bool,
    order_key: VictimKey,
) -> _NodeResult | None:
    """The same answer as :func:`_best_node_plain`, skipping nodes that cannot win.

    Nodes are visited in id order, so a later node wins only with a strictly
    smaller index; a node whose possible victims cannot free it with that few
    victims (per-type upper bounds) is skipped before its victims are filtered.
    """
    best: _NodeResult | None = None
    node_sum, node_max, node_avail = state.node_sum, state.node_max, state.node_avail
    for node in candidates:
        avail0 = node_avail[node]
        if res.fit_in(avail0, ask):
            if nodes_tried:
                continue
            return _NodeResult(node, -1, [])  # nothing sorts before (-1, smallest id)
        total = node_sum.get(node)
        if not total:
            continue  # no possible victim on the node
        if best is None:
            bound = {t: avail0.get(t, 0) + total.get(t, 0) for t in ask}
        else:
            limit = best.index
            if limit <= 0:
                continue
            largest = node_max[node]
            bound = {
                t: avail0.get(t, 0) + min(total.get(t, 0), limit * largest.get(t, 0)) for t in ask
            }
        if not res.fit_in(bound, ask):
            continue
        ordered = [a for a in state.sorted_on_node(node, order_key) if eligible(a)]
        if not ordered:
            continue
        k = len(ordered) if best is None else best.index
        if not _top_sum_fits(avail0, ask, ordered, k):
            continue
        bound_index = None if best is None else best.index
        result = _victims_on_node(state, work, askq, ask, avail0, ordered, bound_index, True)
        if result is None:
            continue
        index, victims = result
        if best is None or index < best.index:
            best = _NodeResult(node, index, victims[: index + 1])
    return best


def _additional_victims(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    node_victims: Sequence[Allocation],
    others: Iterable[Allocation],
) -> list[Allocation] | None:
    """engine.md 3.9; ``None`` when the extra victims would break the ask queue's guarantee."""
    snap = state.snap
    usage = work.usage
    index = snap.index
    mark = len(work.log)
    for v in node_victims:
        work.apply(index[v.queue], v.resources, -1)
    extra: list[Allocation] = []
    # remaining() only changes when the working usage does; cache it between changes
    cache: dict[int, dict[str, int] | None] = {}

    def rem(q: int) -> dict[str, int] | None:
        if q not in cache:
            cache[q] = remaining_at(snap, usage, q, askq)
        return cache[q]

    for v in others:
        q = index[v.queue]
        vr = v.resources
        r = rem(q)
        if not (r is None or res.over_g(ask, r)):
            continue
        work.apply(q, vr, -1)
        cache.clear()
        ar = remaining_at(snap, usage, askq, askq)
        if ar is None or not res.fit_actual(ar, vr):
            work.apply(q, vr, 1)
            break
        work.apply(askq, vr, 1)
        if res.equals_or_empty(ar, remaining_at(snap, usage, askq, askq)):
            work.apply(askq, vr, -1)
            work.apply(q, vr, 1)
        else:
            extra.append(v)
    final = remaining_at(snap, usage, askq, askq)
    work.undo(mark)
    if extra and not (final is not None and res.under_g(ask, final)):
        return None
    return extra


class _Blocked:
    """engine.md 3.11 ``blocked(sel)`` for one ask and chosen node, on a growing selection.

    Each added victim updates running sums of what is still missing (per ask
    type on the node, per ask type and limited queue on the ask path), so the
    shortest runnable prefix of 3.10 costs one pass over the candidates.
    """

    __slots__ = ("_failing", "_limited", "_node_short", "_on_path", "_snap")

    def __init__(
        self,
        state: PreemptionState,
        askq: int,
        ask: Resource,
        avail0: Mapping[str, int],
        roomy: bool,
    ) -> None:
        snap = state.snap
        self._snap = snap
        # (a) only when the node had no room: per ask type, how much is still missing
        self._node_short: dict[str, int] = (
            {} if roomy else {t: q - avail0.get(t, 0) for t, q in ask.items() if q > 0}
        )
        # (b) per queue on the ask path with a max: per shared type, U + ask - max
        self._limited: dict[int, dict[str, int]] = {}
        for x in snap.chain[askq]:
            m = snap.max_by_index[x]
            if m is None:
                continue
            u = state.usage[x]
            over = {t: u.get(t, 0) + q - m[t] for t, q in ask.items() if t in m}
            if over:
                self._limited[x] = over
        self._on_path = frozenset(snap.chain[askq])
        self._failing = sum(1 for v in self._node_short.values() if v > 0) + sum(
            1 for over in self._limited.values() for v in over.values() if v > 0
        )

    @property
    def runs(self) -> bool:
        """``blocked(selection so far)`` is None."""
        return self._failing == 0

    def add(self, victim: Allocation) -> None:
        """Release *victim* too (it frees its node, or the chosen one, and its queues)."""
        vr = victim.resources
        short = self._node_short
        if short:
            for t, q in vr.items():
                before = short.get(t)
                if before is not None:
                    short[t] = after = before - q
                    self._failing += (after > 0) - (before > 0)
        limited = self._limited
        if not limited:
            return
        snap = self._snap
        on_path = self._on_path
        for x in snap.chain[snap.index[victim.queue]]:
            if x not in on_path:
                break  # chains run from root down: the common ancestors come first
            over = limited.get(x)
            if over is None:
                continue
            for t, q in vr.items():
                before = over.get(t)
                if before is not None:
                    over[t] = after = before - q
                    self._failing += (after > 0) - (before > 0)

    def need(self, victim: Allocation) -> VictimNeed:
        """What releasing *victim* next covers of what the ask still lacks (before :meth:`add`)."""
        vr = victim.resources
        short = {t: q for t, q in self._node_short.items() if q > 0}
        node_freed = {t: min(q, short[t]) for t, q in vr.items() if t in short}
        snap = self._snap
        queues: list[QueueNeed] = []
        for x in snap.chain[snap.index[victim.queue]]:
            if x not in self._on_path:
                break
            over = {t: q for t, q in self._limited.get(x, {}).items() if q > 0}
            freed = {t: min(q, over[t]) for t, q in vr.items() if t in over}
            if freed:
                limit = snap.max_by_index[x] or {}
                queues.append(QueueNeed(snap.paths[x], {t: limit[t] for t in over}, over, freed))
        queues.reverse()  # from the ask queue up, like the reasons
        return VictimNeed(victim.key, victim.node, short, node_freed, tuple(queues))

    def reason(self, askq: int) -> str | None:
        """The first 3.11 reason that holds for the selection so far, or None."""
        if any(v > 0 for v in self._node_short.values()):
            return REASON_NODE_NOT_FREED
        snap = self._snap
        for x in reversed(snap.chain[askq]):  # from the ask queue up to root
            over = self._limited.get(x)
            if over is not None and any(v > 0 for v in over.values()):
                return reason_over_max(snap.paths[x])
        return None


def _trim(
    state: PreemptionState,
    askq: int,
    ask: Resource,
    node: str,
    every: Sequence[Allocation],
) -> list[Allocation] | str:
    """engine.md 3.10: the shortest non-empty runnable prefix, or a not_possible reason."""
    avail0 = state.node_avail[node]
    roomy = res.fit_in(avail0, ask)
    blocked = _Blocked(state, askq, ask, avail0, roomy)
    if blocked.runs:
        return REASON_IN_PROGRESS
    final: list[Allocation] = []
    for v in every:
        if not roomy and v.node != node:
            continue  # the node had no room: only its own victims can make it
        final.append(v)
        blocked.add(v)
        if blocked.runs:
            return final
    reason = blocked.reason(askq)
    assert reason is not None  # runs is False: some reason holds
    return reason


@dataclass(frozen=True, slots=True)
class QueueNeed:
    """A queue on the ask path whose max the ask would still exceed, and a victim's part."""

    queue: str
    max: Resource
    """The queue's max in the types the ask would exceed."""
    over: Resource
    """By how much the ask would exceed it before this victim leaves (positive types only)."""
    freed: Resource
    """The part of *over* this victim frees."""


@dataclass(frozen=True, slots=True)
class VictimNeed:
    """Why one victim of a ``preempted`` answer is released (engine.md 3.10, 3.11).

    Victims are released in order; each covers part of what the ask still
    lacks after the ones before it: room on the chosen node (when it had none)
    and room under the max of queues on the ask path.  The last victim always
    covers something (no victim is unnecessary); an earlier one may cover
    nothing and only precede a victim that does (trimming keeps a prefix).
    """

    key: str
    node: str
    node_short: Resource
    """What the chosen node still lacked for the ask before this victim (positive types)."""
    node_freed: Resource
    """The part of *node_short* this victim frees."""
    queues: tuple[QueueNeed, ...]
    """Queues whose max this victim helps the ask stay within, from the ask queue up."""


def victim_needs(
    state: PreemptionState, ask: Ask, node: str, victims: Sequence[Allocation]
) -> tuple[VictimNeed, ...]:
    """What each of *victims*, released in order on *node*, frees for *ask* (3.11 terms).

    *state* is the one the answer was computed against (for a round, the state the
    asks before this one left).  Victims need not be an engine answer: each is
    measured against what is still missing after the ones before it.

    Raises:
        ScenarioError: the ask queue is unknown or not a leaf.
    """
    askq = state.queue_index(ask.queue, "ask.queue")
    avail0 = state.node_avail.get(node, {})
    blocked = _Blocked(state, askq, ask.resources, avail0, res.fit_in(avail0, ask.resources))
    out: list[VictimNeed] = []
    for v in victims:
        out.append(blocked.need(v))
        blocked.add(v)
    return tuple(out)


def _lazy_in_order(
    state: PreemptionState,
    limits: Mapping[int, int],
    eligible: _Eligible,
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


def preempt_in_state(
    state: PreemptionState,
    ask: Ask,
    now: float,
    *,
    order_key: VictimKey = victim_order_key,
    prune: bool = True,
) -> tuple[PreemptAnswer, list[Allocation]]:
    """engine.md section 3 against *state* (unchanged); the answer and the victim objects."""
    askq = state.queue_index(ask.queue, "request.ask.queue")
    snap = state.snap
    ask_res = ask.resources
    fence, prio = _fence_and_priorities(state, askq, ask_res, ask.priority)
    fence_path = snap.paths[fence]

    def not_possible(reason: str) -> tuple[PreemptAnswer, list[Allocation]]:
        return PreemptAnswer("not_possible", fence_path, None, (), reason, ask.key), []

    # fits check (3.1 step 2)
    queues_ok = _queues_fit(state, askq, ask_res)
    if queues_ok:
        for node in state.node_ids:
            if state.node_schedulable[node] and res.fit_in(state.node_avail[node], ask_res):
                return PreemptAnswer("fits", fence_path, node, (), None, ask.key), []
    nodes_tried = queues_ok
    # preconditions (3.1 step 3)
    if not ask.allow_preempt_other:
        return not_possible(REASON_NO_PREEMPT_OTHER)
    if now < ask.created + snap.info(askq).preemption_delay:
        return not_possible(REASON_DELAY)
    limits = _victim_leaves(state, askq, fence, prio)
    eligible = _Eligible(state, limits, ask_res)
    potential_cache: list[list[Allocation]] = []

    def potential() -> list[Allocation]:
        if not potential_cache:
            potential_cache.append(_eligible_victims(state, limits, eligible))
        return potential_cache[0]

    work = WorkingUsage(snap.chain, state.usage)
    if not _guarantee_check(state, work, askq, ask_res, potential):
        return not_possible(REASON_GUARANTEE)
    candidates = [
        n
        for n in state.node_ids
        if state.node_schedulable[n] and res.fit_in(state.node_capacity[n], ask_res)
    ]
    if not candidates:
        return not_possible(REASON_NO_NODE)
    others: Iterable[Allocation]
    if prune:
        best = _best_node_pruned(
            state, work, askq, ask_res, eligible, candidates, nodes_tried, order_key
        )
        if best is None:
            return not_possible(REASON_NO_NODE_FREED)
        chosen = {v.key for v in best.victims}
        others = _lazy_in_order(state, limits, eligible, chosen, order_key)
    else:
        by_node: dict[str, list[Allocation]] = {}
        for v in potential():
            by_node.setdefault(v.node, []).append(v)
        for lst in by_node.values():
            lst.sort(key=order_key)
        best = _best_node_plain(state, work, askq, ask_res, by_node, candidates, nodes_tried)
        if best is None:
            return not_possible(REASON_NO_NODE_FREED)
        chosen = {v.key for v in best.victims}
        others = sorted((v for v in potential() if v.key not in chosen), key=order_key)
    extra = _additional_victims(state, work, askq, ask_res, best.victims, others)
    if extra is None:
        return not_possible(REASON_EXTRA)
    # trimming to the fewest victims that let the ask run (3.10, 3.11)
    every = best.victims + extra
    if not every:
        return not_possible(REASON_NO_VICTIMS)
    final = _trim(state, askq, ask_res, best.node, every)
    if isinstance(final, str):
        return not_possible(final)
    answer = PreemptAnswer(
        "preempted", fence_path, best.node, tuple(v.key for v in final), None, ask.key
    )
    return answer, final


def preempt(
    cluster: Cluster | PreemptionState,
    ask: Ask,
    now: float,
    *,
    order_key: VictimKey = victim_order_key,
    prune: bool = True,
) -> PreemptAnswer:
    """Pick allocations whose release lets *ask* run on one node (engine.md section 3).

    Args:
        cluster: the cluster state (not changed), or a :class:`PreemptionState` built from
            it once and reused for many asks.
        ask: the pending ask; its queue must be a leaf.
        now: seconds since the epoch, for the preemption delay.
        order_key: the victim cost function (3.6).
        prune: skip nodes that cannot beat the best one (same answer; False for checking).

    Returns:
        ``fits``, ``preempted`` (node and victims) or ``not_possible`` with a reason.

    Raises:
        ScenarioError: the ask queue is unknown or not a leaf.
    """
    state = cluster if isinstance(cluster, PreemptionState) else PreemptionState(cluster)
    return preempt_in_state(state, ask, now, order_key=order_key, prune=prune)[0]
