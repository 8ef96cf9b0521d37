"""What a snapshot import returns, its size limit, and YuniKorn's tag names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from engine.model import Cluster

if TYPE_CHECKING:
    from dashboard.importers.events import EventsImport
    from dashboard.importers.snapshot.completed import CompletedRead

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""Largest snapshot accepted (all files together), checked before any parsing."""


GO_ZERO_TIME_MS = -62135596800000
"""Go's zero ``time.Time`` as Unix milliseconds: an application that never started."""


TAG_REQUIRED_NODE = "yunikorn.apache.org/requiredNode"


TAG_QUEUE = "kubernetes.io/label/queue"


TAG_NAMESPACE = "kubernetes.io/meta/namespace"


TAG_POD = "kubernetes.io/meta/podName"


ANNOTATION_ALLOW_PREEMPTION = "yunikorn.apache.org/allow-preemption"


Kind = Literal["scenario", "rest", "statedump"]


@dataclass(frozen=True)
class SnapshotImport:
    """A validated cluster snapshot (see the module docstring).

    ``scenario`` is a scenario-format document without ``request``;
    :func:`dashboard.importers.export.scenario_json` adds one.  ``asks`` are
    pending asks in the contract's ask shape (plus ``triggered_preemption``
    and ``pod`` when known); ``queue_usage`` maps a queue path to what the
    scheduler reported (``allocated``, ``preempting``, ``usage`` =
    allocated - preempting with zeros dropped, ``remaining`` = the same with every
    allocated type kept, ``pending``, ``headroom``, ...), or, for a scenario
    import, to the sums computed from its allocations.  A YuniKorn import's
    ``scenario`` also holds the scheduler's own facts as extra keys the engine
    ignores (:mod:`dashboard.importers.facts`), and ``observed`` the parsed events
    batch of a REST folder.
    """

    kind: Kind
    partition: str
    captured_at: float | None
    scenario: dict[str, Any]
    asks: tuple[dict[str, Any], ...]
    applications: tuple[dict[str, Any], ...]
    queue_usage: dict[str, dict[str, Any]]
    warnings: tuple[str, ...]
    files: tuple[str, ...] = ()
    cluster_id: str | None = None
    events: dict[str, Any] | None = field(default=None, compare=False)
    observed: EventsImport | None = field(default=None, compare=False)
    cluster: Cluster | None = field(default=None, compare=False, repr=False)
    """The engine's validated cluster of ``scenario`` (built once, by the import)."""
    config: tuple[str, str, Any] | None = field(default=None, compare=False, repr=False)
    """The config the scheduler ran: a REST folder's ``config.json`` (``/ws/v1/config``) or
    a state dump's ``config`` (beside it, a ``config.json``): file, key
    path and decoded JSON, read by :mod:`dashboard.importers.config.answer`."""
    completed: CompletedRead | None = field(default=None, compare=False, repr=False)
    """A REST folder's completed applications with their resource history
    (:mod:`dashboard.importers.snapshot.completed`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "partition": self.partition,
            "captured_at": self.captured_at,
            "scenario": self.scenario,
            "asks": list(self.asks),
            "applications": list(self.applications),
            "queue_usage": self.queue_usage,
            "warnings": list(self.warnings),
            "files": list(self.files),
            "cluster_id": self.cluster_id,
        }
