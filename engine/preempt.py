"""Inter-queue preemption for one ask: which victims let it run, on which node.

Owns engine.md section 3 (``preempt``): the fits check, the fence and the
priorities of the ask path, the preconditions and the guarantee check are
here, and the steps after them each have a module:

- :mod:`engine.preempt_victims`: potential victims (3.4) and their order (3.6);
- :mod:`engine.preempt_nodes`: per-node victims, the best node (3.7, 3.8) and
  additional victims (3.9);
- :mod:`engine.preempt_trim`: trimming to the fewest victims that let the ask
  run (3.10, 3.11) and what each victim frees (:func:`victim_needs`);
- :mod:`engine.preempt_reasons`: the ``not_possible`` reasons.

A decision reads a :class:`~engine.preempt_state.PreemptionState` (queue sums,
node availability and per-node victim indexes built once; one working usage
with undo), which :mod:`engine.rounds` evolves from ask to ask.

Speed (the reference scheduler copied every queue snapshot for every node):
besides the reusable state, nodes that cannot beat
the best one found so far are skipped on per-node upper bounds; additional
victims are produced lazily in cost order.  None of this changes an answer:
``prune=False`` runs the plain algorithm and a property test checks that both
agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from engine import resources as res
from engine.answers import PreemptAnswer
from engine.model import Allocation, Ask, Cluster
from engine.preempt_nodes import additional_victims, best_node_plain, best_node_pruned
from engine.preempt_reasons import (
    REASON_DELAY,
    REASON_EXTRA,
    REASON_GUARANTEE,
    REASON_IN_PROGRESS,
    REASON_NO_NODE,
    REASON_NO_NODE_FREED,
    REASON_NO_PREEMPT_OTHER,
    REASON_NO_VICTIMS,
    REASON_NODE_NOT_FREED,
    reason_over_max,
)
from engine.preempt_state import PreemptionState, VictimKey, WorkingUsage
from engine.preempt_trim import QueueNeed, VictimNeed, trim, victim_needs
from engine.preempt_victims import (
    Eligible,
    eligible_victims,
    lazy_in_order,
    victim_leaves,
    victim_order_key,
    youngest_first,
)
from engine.queues import POLICY_FENCE, remaining_at
from engine.resources import Resource

__all__ = [
    "REASON_DELAY",
    "REASON_EXTRA",
    "REASON_GUARANTEE",
    "REASON_IN_PROGRESS",
    "REASON_NODE_NOT_FREED",
    "REASON_NO_NODE",
    "REASON_NO_NODE_FREED",
    "REASON_NO_PREEMPT_OTHER",
    "REASON_NO_VICTIMS",
    "QueueNeed",
    "VictimNeed",
    "preempt",
    "preempt_in_state",
    "reason_over_max",
    "victim_needs",
    "victim_order_key",
    "youngest_first",
]


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
    limits = victim_leaves(state, askq, fence, prio)
    eligible = Eligible(state, limits, ask_res)
    potential_cache: list[list[Allocation]] = []

    def potential() -> list[Allocation]:
        if not potential_cache:
            potential_cache.append(eligible_victims(state, limits, eligible))
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
        best = best_node_pruned(
            state, work, askq, ask_res, eligible, candidates, nodes_tried, order_key
        )
        if best is None:
            return not_possible(REASON_NO_NODE_FREED)
        chosen = {v.key for v in best.victims}
        others = lazy_in_order(state, limits, eligible, chosen, order_key)
    else:
        by_node: dict[str, list[Allocation]] = {}
        for v in potential():
            by_node.setdefault(v.node, []).append(v)
        for lst in by_node.values():
            lst.sort(key=order_key)
        best = best_node_plain(state, work, askq, ask_res, by_node, candidates, nodes_tried)
        if best is None:
            return not_possible(REASON_NO_NODE_FREED)
        chosen = {v.key for v in best.victims}
        others = sorted((v for v in potential() if v.key not in chosen), key=order_key)
    extra = additional_victims(state, work, askq, ask_res, best.victims, others)
    if extra is None:
        return not_possible(REASON_EXTRA)
    # trimming to the fewest victims that let the ask run (3.10, 3.11)
    every = best.victims + extra
    if not every:
        return not_possible(REASON_NO_VICTIMS)
    final = trim(state, askq, ask_res, best.node, every)
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
