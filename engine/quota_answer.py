"""The answer of a ``quota_change`` request and its JSON (scenario-format.md 2, engine.md 4.6).

:class:`QuotaAnswer` (with one :class:`LeafPlan` per leaf that took part) is
written by :func:`engine.quota.plan_quota_change`; ``from_dict`` reads a stored
answer back, naming the bad field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

from engine.errors import ScenarioError

if TYPE_CHECKING:
    pass


QuotaStatus = Literal["enforced", "best_effort", "does_not_help", "not_needed"]
QUOTA_STATUSES: tuple[QuotaStatus, ...] = ("enforced", "best_effort", "does_not_help", "not_needed")


def _resource_from(data: object, field_name: str) -> dict[str, int]:
    if not isinstance(data, Mapping):
        raise ScenarioError(field_name, "must be an object of type -> integer")
    out: dict[str, int] = {}
    for t, q in data.items():
        if not isinstance(t, str) or isinstance(q, bool) or not isinstance(q, int):
            raise ScenarioError(f"{field_name}.{t}", "must be an integer quantity")
        out[t] = q
    return out


def _strings_from(data: object, field_name: str) -> tuple[str, ...]:
    if not isinstance(data, list | tuple) or not all(isinstance(s, str) for s in data):
        raise ScenarioError(field_name, "must be a list of strings")
    return tuple(cast("Sequence[str]", data))


def _mapping_from(data: object, field_name: str) -> Mapping[str, object]:
    if not isinstance(data, Mapping):
        raise ScenarioError(field_name, "must be an object")
    return cast("Mapping[str, object]", data)


def _field(data: Mapping[str, object], name: str, prefix: str) -> object:
    if name not in data:
        raise ScenarioError(f"{prefix}{name}", "is missing")
    return data[name]


@dataclass(frozen=True, slots=True)
class LeafPlan:
    """One leaf's part in a quota plan: its share of the target and its victims."""

    preemptable: Mapping[str, int]
    """The leaf's share of the target (the whole target when the changed queue is a leaf)."""
    claimed: Mapping[str, int]
    """Per share type, what the leaf's victims freed (may exceed the share)."""
    victims: tuple[str, ...]
    """Allocation keys in the order they were taken."""

    def to_dict(self) -> dict[str, object]:
        return {
            "preemptable": dict(self.preemptable),
            "claimed": dict(self.claimed),
            "victims": list(self.victims),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object], prefix: str = "") -> LeafPlan:
        return cls(
            preemptable=_resource_from(_field(data, "preemptable", prefix), f"{prefix}preemptable"),
            claimed=_resource_from(_field(data, "claimed", prefix), f"{prefix}claimed"),
            victims=_strings_from(_field(data, "victims", prefix), f"{prefix}victims"),
        )


@dataclass(frozen=True, slots=True)
class QuotaAnswer:
    """Answer of a ``quota_change`` request (scenario-format.md section 2, engine.md 4.6).

    ``to_dict`` gives exactly the contract's keys (``status``, ``queue``,
    ``preemptable``, ``claimed``, ``leaves``, ``victims``, ``alerts``) plus the
    extras ``delay``, ``start_at``, ``missed`` and ``shares``.
    """

    status: QuotaStatus
    queue: str
    preemptable: Mapping[str, int]
    """The changed queue's target: only the types that must shrink."""
    claimed: Mapping[str, int]
    """Per target type, the sum over all victims (a victim counts in every target type)."""
    leaves: Mapping[str, LeafPlan]
    """Each leaf that took part, in processing (path) order."""
    victims: tuple[str, ...]
    """Every victim, leaf by leaf in processing order."""
    alerts: tuple[str, ...]
    delay: float
    """Effective ``quota_preemption_delay`` of the queue, in seconds."""
    start_at: float | None
    """``now + delay``; ``None`` when the delay is 0 (YuniKorn would never enforce)."""
    missed: Mapping[str, int] = field(default_factory=dict)
    """Per target type, how much of the target was not claimed (only positive entries)."""
    shares: Mapping[str, Mapping[str, Mapping[str, int]]] = field(default_factory=dict)
    """Per distributed parent queue, each participating child's share of its target."""

    def to_dict(self) -> dict[str, object]:
        return {
            "status": self.status,
            "queue": self.queue,
            "preemptable": dict(self.preemptable),
            "claimed": dict(self.claimed),
            "leaves": {path: leaf.to_dict() for path, leaf in self.leaves.items()},
            "victims": list(self.victims),
            "alerts": list(self.alerts),
            "delay": self.delay,
            "start_at": self.start_at,
            "missed": dict(self.missed),
            "shares": {
                parent: {child: dict(share) for child, share in kids.items()}
                for parent, kids in self.shares.items()
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> QuotaAnswer:
        """Rebuild an answer from :meth:`to_dict` output; bad data raises ScenarioError."""
        status = _field(data, "status", "")
        if status not in QUOTA_STATUSES:
            raise ScenarioError("status", f"unknown quota status {status!r}")
        queue = _field(data, "queue", "")
        if not isinstance(queue, str):
            raise ScenarioError("queue", "must be a string")
        leaves_data = _mapping_from(_field(data, "leaves", ""), "leaves")
        leaves = {
            path: LeafPlan.from_dict(
                _mapping_from(leaf, f"leaves.{path}"), prefix=f"leaves.{path}."
            )
            for path, leaf in leaves_data.items()
        }
        delay = data.get("delay", 0.0)
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise ScenarioError("delay", "must be a number")
        start_at = data.get("start_at")
        if start_at is not None and (
            isinstance(start_at, bool) or not isinstance(start_at, int | float)
        ):
            raise ScenarioError("start_at", "must be a number or null")
        shares_data = _mapping_from(data.get("shares", {}), "shares")
        shares = {
            parent: {
                child: _resource_from(share, f"shares.{parent}.{child}")
                for child, share in _mapping_from(kids, f"shares.{parent}").items()
            }
            for parent, kids in shares_data.items()
        }
        return cls(
            status=status,
            queue=queue,
            preemptable=_resource_from(_field(data, "preemptable", ""), "preemptable"),
            claimed=_resource_from(_field(data, "claimed", ""), "claimed"),
            leaves=leaves,
            victims=_strings_from(_field(data, "victims", ""), "victims"),
            alerts=_strings_from(_field(data, "alerts", ""), "alerts"),
            delay=float(delay),
            start_at=None if start_at is None else float(start_at),
            missed=_resource_from(data.get("missed", {}), "missed"),
            shares=shares,
        )
