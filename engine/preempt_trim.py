"""Trimming to the fewest victims that let the ask run, and what each frees (engine.md 3.10-3.11).

:class:`Blocked` keeps running sums of what the ask still lacks (room on the
chosen node, room under the max of queues on the ask path) as victims are
added; :func:`trim` keeps the shortest runnable prefix and
:func:`victim_needs` explains every victim of an answer in those terms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from engine import resources as res
from engine.model import Allocation, Ask
from engine.preempt_reasons import REASON_IN_PROGRESS, REASON_NODE_NOT_FREED, reason_over_max
from engine.preempt_state import PreemptionState
from engine.resources import Resource


class Blocked:
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


def trim(
    state: PreemptionState,
    askq: int,
    ask: Resource,
    node: str,
    every: Sequence[Allocation],
) -> list[Allocation] | str:
    """engine.md 3.10: the shortest non-empty runnable prefix, or a not_possible reason."""
    avail0 = state.node_avail[node]
    roomy = res.fit_in(avail0, ask)
    blocked = Blocked(state, askq, ask, avail0, roomy)
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
    blocked = Blocked(state, askq, ask.resources, avail0, res.fit_in(avail0, ask.resources))
    out: list[VictimNeed] = []
    for v in victims:
        out.append(blocked.need(v))
        blocked.add(v)
    return tuple(out)
