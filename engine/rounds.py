"""Periodic preemption rounds (engine.md section 6, the ``round`` request).

Several asks, highest priority first, each answered by :mod:`engine.preempt`
against the state the asks before it left (victims preempted, placed asks
running), with a pace cap on what one round may preempt.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine import resources as res
from engine.answers import PreemptAnswer, RoundAnswer
from engine.errors import ScenarioError
from engine.model import Ask, Cluster
from engine.preempt import preempt_in_state, victim_order_key
from engine.preempt_state import PreemptionState, VictimKey
from engine.resources import Resource

REASON_CAP = "the round's preemption cap is reached"


def _round_order(ask: Ask) -> tuple[int, float, str]:
    # engine.md 6.1: higher priority first, then older, then by key
    return (-ask.priority, ask.created, ask.key)


def run_round(
    cluster: Cluster | PreemptionState,
    asks: Sequence[Ask],
    max_preempted: Resource | None,
    now: float,
    *,
    order_key: VictimKey = victim_order_key,
    prune: bool = True,
) -> RoundAnswer:
    """One periodic preemption round over several asks (engine.md section 6).

    Each ask sees the state left by the asks before it: victims already chosen
    are preempted (still on their node, preempting for their queues) and a
    placed ask is usage of its queue and load on its node.  Once the pace cap
    *max_preempted* would be exceeded the round takes no further victims.
    """
    seen: set[str] = set()
    for i, a in enumerate(asks):
        if a.key in seen:
            raise ScenarioError(f"request.asks[{i}].key", f"duplicate ask key {a.key!r}")
        seen.add(a.key)
    # a round changes its state: never the caller's
    state = cluster.fork() if isinstance(cluster, PreemptionState) else PreemptionState(cluster)
    for i, a in enumerate(asks):
        state.queue_index(a.queue, f"request.asks[{i}].queue")
    cap = max_preempted or None
    total: dict[str, int] = {}
    capped = False
    results: list[PreemptAnswer] = []
    for ask in sorted(asks, key=_round_order):
        answer, victims = preempt_in_state(state, ask, now, order_key=order_key, prune=prune)
        if answer.status == "preempted":
            freed = res.total(v.resources for v in victims)
            after = res.add(total, freed)
            if capped or (
                cap is not None and any(after.get(t, 0) > limit for t, limit in cap.items())
            ):
                capped = True
                answer = PreemptAnswer("not_possible", answer.fence, None, (), REASON_CAP, ask.key)
            else:
                total = after
                state.mark_preempted(victims)
        if answer.status != "not_possible" and answer.node is not None:
            state.place(ask, answer.node)
        results.append(answer)
    return RoundAnswer(tuple(results), {t: q for t, q in total.items() if q != 0}, capped)
