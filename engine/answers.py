"""Answers of the ``preempt`` and ``round`` requests, and their JSON objects.

The frozen answer dataclasses of scenario-format.md requests 1 and 4:
``to_dict`` gives the contract's JSON object, ``from_dict`` reads it back
(the dashboard stores answers as JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from engine.resources import Resource

PreemptStatus = Literal["preempted", "fits", "not_possible"]


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class PreemptAnswer:
    """Answer of one ``preempt`` request (scenario-format.md, request 1)."""

    status: PreemptStatus
    fence: str
    node: str | None = None
    victims: tuple[str, ...] = ()
    reason: str | None = None
    ask: str = ""
    """The ask's key (the ``ask`` entry of a round result; an extra key for ``preempt``)."""

    def to_dict(self) -> dict[str, object]:
        """The contract's JSON object."""
        return {
            "ask": self.ask,
            "status": self.status,
            "node": self.node,
            "fence": self.fence,
            "victims": list(self.victims),
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> PreemptAnswer:
        """Inverse of :meth:`to_dict`."""
        status = data["status"]
        if status not in ("preempted", "fits", "not_possible"):
            raise ValueError(f"unknown preempt status {status!r}")
        victims = data.get("victims") or []
        if not isinstance(victims, list):
            raise ValueError("victims must be a list")
        return cls(
            status=status,
            fence=str(data["fence"]),
            node=_opt_str(data.get("node")),
            victims=tuple(str(v) for v in victims),
            reason=_opt_str(data.get("reason")),
            ask=str(data.get("ask") or ""),
        )


@dataclass(frozen=True, slots=True)
class RoundAnswer:
    """Answer of one ``round`` request (scenario-format.md, request 4)."""

    results: tuple[PreemptAnswer, ...]
    preempted_total: Resource
    capped: bool

    def to_dict(self) -> dict[str, object]:
        """The contract's JSON object."""
        return {
            "results": [r.to_dict() for r in self.results],
            "preempted_total": dict(self.preempted_total),
            "capped": self.capped,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> RoundAnswer:
        """Inverse of :meth:`to_dict`."""
        results = data["results"]
        total = data.get("preempted_total") or {}
        if not isinstance(results, list) or not isinstance(total, Mapping):
            raise ValueError("results must be a list and preempted_total an object")
        return cls(
            results=tuple(PreemptAnswer.from_dict(r) for r in results),
            preempted_total={str(t): int(q) for t, q in total.items()},
            capped=bool(data.get("capped", False)),
        )
