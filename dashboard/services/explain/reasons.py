"""The engine's reasons for a preemption that cannot help, in words true of the ask's queue.

The engine answers ``not_possible`` with one sentence of its contract
(:mod:`engine.preempt_reasons`). Its guarantee rule ("the ask queue cannot stay
within its guarantee") is read by an administrator as a guarantee the queue has;
for a queue with none (engine.md 2.2: the remaining guarantee is then its
ancestors', or none at all), the pages, alerts, CSV and API say what is true
instead. The engine's answer itself (a run's ``result``) keeps the contract's text.
"""

from __future__ import annotations

from engine.preempt import REASON_GUARANTEE
from engine.queues import Snapshot as QueueSnapshot


def reason_words(snap: QueueSnapshot, queue: str, reason: str) -> str:
    """*reason* for an ask of *queue*, the guarantee rule naming the guarantee that holds.

    Reasons other than the guarantee rule, and the rule for a queue with a guarantee
    of its own, are returned unchanged. For ``root.a.x`` under a guaranteed
    ``root.a``: "queue root.a.x has no guarantee of its own and cannot stay within the
    guarantee of root.a"; with no guarantee on its path: "queue root.b has no
    guarantee, nor has any queue above it: ...".
    """
    if reason != REASON_GUARANTEE or queue not in snap or snap.guaranteed(queue) is not None:
        return reason
    above = [p for p in snap.ancestors(queue) if snap.guaranteed(p) is not None]
    if not above:
        return (
            f"queue {queue} has no guarantee, nor has any queue above it: preemption makes "
            "room only for a queue within a guarantee"
        )
    return (
        f"queue {queue} has no guarantee of its own and cannot stay within the guarantee "
        f"of {above[0]}"
    )
