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
    """One queue as the pages draw it, named as YuniKorn names it.

    ``used`` is the engine's usage: what remains of allocated once the part being
    preempted (``preempting``) is released; it drops types whose whole amount is
    being preempted. ``allocated`` is ``allocatedResource`` as the scheduler
    reports it (``None``: not reported, then used + preempting). ``lowered_max``
    is a pending scheduled max that is lower than the current one, if any;
    ``lowered_planned`` says it is only planned in the dashboard (not yet in the
    cluster's config: a prediction).
    ``status`` (Active, Draining, Stopped), ``dynamic`` (made from a child
    template), ``max_applications`` (``None``: unlimited) and ``running_apps``
    (``None``: not reported) are the scheduler's facts about the queue.
    """

    path: str
    guaranteed: Resource | None = None
    max: Resource | None = None
    used: Resource = field(default_factory=dict)
    preemptable: Resource | None = None
    preempting: Resource = field(default_factory=dict)
    lowered_max: Resource | None = None
    lowered_planned: bool = False
    allocated: Resource | None = None
    status: str = "Active"
    dynamic: bool = False
    max_applications: int | None = None
    running_apps: int | None = None

    @property
    def held(self) -> dict[str, int]:
        """Allocated as reported (preempting included), else used + preempting.

        >>> QueueRow("root.a", used={"vcore": 1}, preempting={"memory": 8}).held
        {'vcore': 1, 'memory': 8}
        """
        if self.allocated is not None:
            return dict(self.allocated)
        out = dict(self.used)
        for t, q in self.preempting.items():
            out[t] = out.get(t, 0) + q
        return out

    @property
    def remaining(self) -> dict[str, int]:
        """held - preempting over every held type: 0 where all of it is being preempted.

        >>> QueueRow("root.a", preempting={"vcore": 2}, allocated={"vcore": 2}).remaining
        {'vcore': 0}
        """
        return {t: q - self.preempting.get(t, 0) for t, q in self.held.items()}

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        return self.path.rsplit(".", 1)[0] if "." in self.path else ""


@dataclass(frozen=True, slots=True)
class NodeRow:
    """A node: capacity and the sum of allocations on it (preempted ones included).

    ``capacity`` is what YuniKorn can allocate: ``reported_capacity`` (the node's
    capacity as reported; ``None``: not known, then ``capacity``) minus
    ``occupied`` (what pods not scheduled by YuniKorn hold).
    """

    id: str
    capacity: Resource
    allocated: Resource = field(default_factory=dict)
    schedulable: bool = True
    reported_capacity: Resource | None = None
    occupied: Resource = field(default_factory=dict)

    @property
    def reported(self) -> Resource:
        return self.capacity if self.reported_capacity is None else self.reported_capacity


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
    """A queue's limits and usage as stored in one snapshot.

    ``used`` is the engine's usage (allocated - preempting); ``allocated`` is as
    YuniKorn reports it (``None``: not known, then ``used``).
    """

    at: datetime
    used: Resource
    guaranteed: Resource | None = None
    max: Resource | None = None
    allocated: Resource | None = None

    @property
    def held(self) -> Resource:
        return self.used if self.allocated is None else self.allocated


def resource_types(rows: Iterable[QueueRow]) -> list[str]:
    """Every resource type named by any queue, vcore and memory first."""
    seen: set[str] = set()
    for row in rows:
        held = (row.allocated, row.preempting)
        for res in (row.guaranteed, row.max, row.used, row.preemptable, row.lowered_max, *held):
            if res:
                seen.update(res)
    return sorted(seen, key=type_order)


def type_order(rtype: str) -> tuple[int, str]:
    return ({"vcore": 0, "memory": 1}.get(rtype, 2), rtype)
