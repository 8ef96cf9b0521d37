"""Typed, validated queue and partition specs, and a partition's queue tree for the engine."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from engine.model import QueueConfig

MAX_CONFIG_BYTES = 2 * 1024 * 1024
"""Largest queue config (or ConfigMap) accepted, checked before any parsing."""


QUOTA_DELAY = "quota.preemption.delay"


PREEMPTION_DELAY = "preemption.delay"


ROOT = "root"


DEFAULT_PARTITION = "default"


SHORT_DELAY_SECONDS = 60.0


@dataclass(frozen=True)
class QueueSpec:
    """One configured queue (names lower-cased as the scheduler does).

    ``guaranteed``/``max`` are in the scheduler's units (vcore millicores,
    memory bytes); ``None`` means not set, including an all-zero resource the
    scheduler ignores.  ``properties`` are the queue's own; ``quota_preemption_delay``
    is the effective delay in seconds (own value, else inherited; 0 when unset,
    unparsable or not positive).
    """

    name: str
    path: str
    parent: bool | None
    guaranteed: dict[str, int] | None
    max: dict[str, int] | None
    properties: dict[str, str]
    quota_preemption_delay: float
    max_applications: int | None
    child_template: dict[str, Any] | None
    is_leaf: bool
    children: tuple[QueueSpec, ...]
    raw: dict[str, Any]
    line: int | None = field(default=None, compare=False)

    def walk(self) -> Iterator[QueueSpec]:
        """This queue and every queue below it, parents first, in config order."""
        stack = [self]
        while stack:
            q = stack.pop()
            yield q
            stack.extend(reversed(q.children))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (children nested)."""
        return {
            "name": self.name,
            "path": self.path,
            "parent": self.parent,
            "guaranteed": self.guaranteed,
            "max": self.max,
            "properties": dict(self.properties),
            "quota_preemption_delay": self.quota_preemption_delay,
            "max_applications": self.max_applications,
            "child_template": self.child_template,
            "is_leaf": self.is_leaf,
            "children": [c.to_dict() for c in self.children],
            "raw": self.raw,
        }


@dataclass(frozen=True)
class PartitionSpec:
    """One partition: its flags, placement rules and queue tree."""

    name: str
    quota_preemption_enabled: bool
    preemption_enabled: bool
    root: QueueSpec
    placement_rules: list[dict[str, Any]]
    raw: dict[str, Any]

    def queues(self) -> Iterator[QueueSpec]:
        """Every queue of the partition, parents first."""
        return self.root.walk()

    def queue(self, path: str) -> QueueSpec | None:
        """The queue with this full path (case-insensitive), or ``None``."""
        wanted = path.lower()
        for q in self.queues():
            if q.path == wanted:
                return q
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "quota_preemption_enabled": self.quota_preemption_enabled,
            "preemption_enabled": self.preemption_enabled,
            "root": self.root.to_dict(),
            "placement_rules": self.placement_rules,
            "raw": self.raw,
        }


def to_queue_config(partition: PartitionSpec | QueueSpec) -> QueueConfig:
    """The engine's queue tree for a partition (children sorted by name).

    Properties are the queue's own (the engine applies YuniKorn's inheritance);
    the quota preemption delay is the effective one, so an unparsable own value
    stays 0 instead of inheriting.
    """
    spec = partition.root if isinstance(partition, PartitionSpec) else partition
    return QueueConfig(
        name=spec.name,
        guaranteed=None if spec.guaranteed is None else dict(spec.guaranteed),
        max=None if spec.max is None else dict(spec.max),
        properties=dict(spec.properties),
        quota_preemption_delay=spec.quota_preemption_delay,
        children=tuple(sorted((to_queue_config(c) for c in spec.children), key=lambda c: c.name)),
    )
