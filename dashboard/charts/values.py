"""What the figures draw: plain input values (queues, nodes, runs, usage points)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Resource = Mapping[str, int]


FigureDict = dict[str, object]


QueueState = Literal["within", "above", "at_max", "over_max"]


@dataclass(frozen=True, slots=True)
class QueueRow:
    """One queue as the pages draw it.

    ``used`` is the engine's usage (allocated minus preempting).  ``lowered_max``
    is a pending scheduled max that is lower than the current one, if any.
    """

    path: str
    guaranteed: Resource | None = None
    max: Resource | None = None
    used: Resource = field(default_factory=dict)
    preemptable: Resource | None = None
    preempting: Resource = field(default_factory=dict)
    lowered_max: Resource | None = None

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""


@dataclass(frozen=True, slots=True)
class NodeRow:
    """A node: capacity and the sum of allocations on it (preempted ones included)."""

    id: str
    capacity: Resource
    allocated: Resource = field(default_factory=dict)
    schedulable: bool = True


@dataclass(frozen=True, slots=True)
class RunRow:
    """One preemption run for the history timeline."""

    id: int
    started: datetime
    queue: str
    trigger: str
    outcome: str
    victims: int = 0
    finished: datetime | None = None
    nature: str = ""
    """what-if, predicted (the dashboard's timers) or observed (the scheduler's)."""


@dataclass(frozen=True, slots=True)
class UsagePoint:
    """A queue's limits and usage as stored in one snapshot."""

    at: datetime
    used: Resource
    guaranteed: Resource | None = None
    max: Resource | None = None


def resource_types(rows: Iterable[QueueRow]) -> list[str]:
    """Every resource type named by any queue, vcore and memory first."""
    seen: set[str] = set()
    for row in rows:
        for res in (row.guaranteed, row.max, row.used, row.preemptable, row.lowered_max):
            if res:
                seen.update(res)
    return sorted(seen, key=type_order)


def type_order(rtype: str) -> tuple[int, str]:
    return ({"vcore": 0, "memory": 1}.get(rtype, 2), rtype)
