"""Frozen input dataclasses of a scenario (scenario-format.md, "Input").

These are the engine's library types: the dashboard builds them directly
(no JSON round trip) and ``engine.scenario`` builds them from JSON.
Resources are plain ``dict[str, int]`` treated as immutable; zero entries of
allocation and ask resources are already dropped (engine.md 0.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from engine.resources import Resource


@dataclass(frozen=True, slots=True)
class Partition:
    quota_preemption_enabled: bool = False
    miss: float = 0.0


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """One queue of the configured tree; ``children`` sorted by name."""

    name: str
    guaranteed: Resource | None = None
    max: Resource | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    quota_preemption_delay: float | None = None
    children: tuple[QueueConfig, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    capacity: Resource
    schedulable: bool = True


@dataclass(frozen=True, slots=True)
class Allocation:
    key: str
    queue: str
    node: str
    resources: Resource
    app: str = ""
    priority: int = 0
    originator: bool = False
    allow_preemption: bool = True
    created: float = 0.0
    required_node: bool = False
    preempted: bool = False


@dataclass(frozen=True, slots=True)
class Ask:
    key: str
    queue: str
    resources: Resource
    app: str = ""
    priority: int = 0
    allow_preempt_other: bool = True
    created: float = 0.0


@dataclass(frozen=True, slots=True)
class PreemptRequest:
    ask: Ask
    type: Literal["preempt"] = "preempt"


@dataclass(frozen=True, slots=True)
class QuotaChangeRequest:
    queue: str
    new_max: Resource | None
    type: Literal["quota_change"] = "quota_change"


@dataclass(frozen=True, slots=True)
class ResourcesRequest:
    queue: str
    type: Literal["resources"] = "resources"


@dataclass(frozen=True, slots=True)
class RoundRequest:
    asks: tuple[Ask, ...]
    max_preempted: Resource | None = None
    type: Literal["round"] = "round"


Request = PreemptRequest | QuotaChangeRequest | ResourcesRequest | RoundRequest


@dataclass(frozen=True, slots=True)
class Cluster:
    """The cluster state of a scenario, without the request."""

    root: QueueConfig
    nodes: tuple[Node, ...] = ()
    allocations: tuple[Allocation, ...] = ()
    partition: Partition = Partition()


@dataclass(frozen=True, slots=True)
class Scenario:
    cluster: Cluster
    request: Request
    now: float
