"""Why preemption cannot help one ask: the ``reason`` of a ``not_possible`` answer (engine.md 3).

One short sentence each, part of the answer's contract; :mod:`engine.preempt`
re-exports them.
"""

from __future__ import annotations

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
