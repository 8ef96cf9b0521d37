"""The node an ask runs on and its victims there, then the additional victims (engine.md 3.7-3.9).

:func:`best_node_plain` follows the document literally; :func:`best_node_pruned`
gives the same answer while skipping nodes that cannot beat the best one found
so far (per-node upper bounds).  :func:`additional_victims` takes victims from
other nodes while the ask queue stays within its guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from engine import resources as res
from engine.model import Allocation
from engine.preempt_state import PreemptionState, VictimKey, WorkingUsage
from engine.preempt_victims import Eligible
from engine.queues import remaining_at
from engine.resources import Resource


@dataclass(slots=True)
class NodeResult:
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


def best_node_plain(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    by_node: Mapping[str, Sequence[Allocation]],
    candidates: Sequence[str],
    nodes_tried: bool,
) -> NodeResult | None:
    """engine.md 3.7-3.8 literally: every candidate node, then the smallest (index, node id)."""
    found: list[NodeResult] = []
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
        found.append(NodeResult(node, index, victims[: index + 1]))
    found.sort(key=lambda r: (r.index, r.node))
    return found[0] if found else None


def best_node_pruned(
    state: PreemptionState,
    work: WorkingUsage,
    askq: int,
    ask: Resource,
    eligible: Eligible,
    candidates: Sequence[str],
    nodes_tried: bool,
    order_key: VictimKey,
) -> NodeResult | None:
    """The same answer as :func:`best_node_plain`, skipping nodes that cannot win.

    Nodes are visited in id order, so a later node wins only with a strictly
    smaller index; a node whose possible victims cannot free it with that few
    victims (per-type upper bounds) is skipped before its victims are filtered.
    """
    best: NodeResult | None = None
    node_sum, node_max, node_avail = state.node_sum, state.node_max, state.node_avail
    for node in candidates:
        avail0 = node_avail[node]
        if res.fit_in(avail0, ask):
            if nodes_tried:
                continue
            return NodeResult(node, -1, [])  # nothing sorts before (-1, smallest id)
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
            best = NodeResult(node, index, victims[: index + 1])
    return best


def additional_victims(
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
