"""Changes between two configs: per partition, queue and field, and whether a max got tighter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dashboard.importers.config.specs import QUOTA_DELAY, PartitionSpec, QueueSpec
from dashboard.importers.quantities import (
    format_quantity,
    format_resource,
    short_duration,
)

ChangeKind = Literal["added", "removed", "changed"]


@dataclass(frozen=True)
class ConfigChange:
    """One difference between two configs, for one queue (or a partition flag).

    ``field`` is ``queue`` (the queue itself appeared or vanished), ``max``,
    ``guaranteed``, ``property`` (``key`` names it), ``quota_preemption_delay``
    (effective seconds, so inherited changes show on every affected queue),
    ``max_applications`` or, with ``queue`` empty, ``partition`` /
    ``quota_preemption_enabled``.  ``is_decrease`` is true for a max that got
    tighter in any way (a type lowered, a type newly limited, a max newly set):
    the changes that can start a quota-preemption timer.
    """

    partition: str
    queue: str
    field: str
    kind: ChangeKind
    old: Any
    new: Any
    key: str = ""
    is_decrease: bool = False

    def describe(self) -> str:
        """One readable line, e.g. ``root.batch: max vcore 14 -> 10 (decrease)``."""
        where = f"{self.queue}" if self.queue else f"partition {self.partition}"
        if self.field == "queue":
            return f"{where}: queue {self.kind}"
        if self.field in ("max", "guaranteed"):
            return f"{where}: {self.field} {_describe_resource_change(self.old, self.new)}" + (
                " (decrease)" if self.is_decrease else ""
            )
        if self.field == "property":
            return f"{where}: property {self.key} {_arrow(self.old, self.new)}"
        if self.field == "quota_preemption_delay":
            old = None if self.old is None else short_duration(self.old)
            new = None if self.new is None else short_duration(self.new)
            return f"{where}: quota preemption delay {_arrow(old, new)}"
        return f"{where}: {self.field} {_arrow(self.old, self.new)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "queue": self.queue,
            "field": self.field,
            "kind": self.kind,
            "old": self.old,
            "new": self.new,
            "key": self.key,
            "is_decrease": self.is_decrease,
            "text": self.describe(),
        }


def _arrow(old: object, new: object) -> str:
    if old is None:
        return f"added: {new}"
    if new is None:
        return f"removed (was {old})"
    return f"{old} -> {new}"


def _describe_resource_change(old: dict[str, int] | None, new: dict[str, int] | None) -> str:
    if old is None:
        return f"set to {format_resource(new)}"
    if new is None:
        return f"removed (was {format_resource(old)})"
    parts = []
    for t in sorted(set(old) | set(new)):
        a, b = old.get(t), new.get(t)
        if a == b:
            continue
        fa = "unlimited" if a is None else format_quantity(a, t)
        fb = "unlimited" if b is None else format_quantity(b, t)
        parts.append(f"{t} {fa} -> {fb}")
    return ", ".join(parts)


def is_tighter(old: Mapping[str, int] | None, new: Mapping[str, int] | None) -> bool:
    """Whether a new max limits anything the old one did not (engine.md section 5).

    >>> is_tighter({"vcore": 14000}, {"vcore": 10000}), is_tighter(None, {"vcore": 1})
    (True, True)
    >>> is_tighter({"vcore": 10}, {"vcore": 12}), is_tighter({"vcore": 10}, None)
    (False, False)
    """
    if new is None:
        return False
    if old is None:
        return True
    return any(t not in old or q < old[t] for t, q in new.items())


def diff_partitions(
    old: Sequence[PartitionSpec], new: Sequence[PartitionSpec]
) -> list[ConfigChange]:
    """Per-queue changes between two sets of partitions."""
    out: list[ConfigChange] = []
    old_by = {p.name: p for p in old}
    new_by = {p.name: p for p in new}
    for name in sorted(set(old_by) | set(new_by)):
        a, b = old_by.get(name), new_by.get(name)
        if a is None or b is None:
            out.append(
                ConfigChange(
                    name,
                    "",
                    "partition",
                    "added" if a is None else "removed",
                    None if a is None else name,
                    None if b is None else name,
                )
            )
            continue
        if a.quota_preemption_enabled != b.quota_preemption_enabled:
            out.append(
                ConfigChange(
                    name,
                    "",
                    "quota_preemption_enabled",
                    "changed",
                    a.quota_preemption_enabled,
                    b.quota_preemption_enabled,
                )
            )
        qa = {q.path: q for q in a.queues()}
        qb = {q.path: q for q in b.queues()}
        for path in sorted(set(qa) | set(qb)):
            out.extend(_diff_queue(name, path, qa.get(path), qb.get(path)))
    return out


def _diff_queue(
    part: str, path: str, a: QueueSpec | None, b: QueueSpec | None
) -> list[ConfigChange]:
    if a is None or b is None:
        kind: ChangeKind = "added" if a is None else "removed"
        change = ConfigChange(
            part,
            path,
            "queue",
            kind,
            None if a is None else path,
            None if b is None else path,
            is_decrease=a is None and b is not None and b.max is not None,
        )
        return [change]
    out: list[ConfigChange] = []
    for fname in ("max", "guaranteed"):
        ra, rb = getattr(a, fname), getattr(b, fname)
        if ra != rb:
            kind = "added" if ra is None else "removed" if rb is None else "changed"
            out.append(
                ConfigChange(
                    part,
                    path,
                    fname,
                    kind,
                    ra,
                    rb,
                    is_decrease=fname == "max" and is_tighter(ra, rb),
                )
            )
    delay_changed = a.quota_preemption_delay != b.quota_preemption_delay
    for key in sorted(set(a.properties) | set(b.properties)):
        pa, pb = a.properties.get(key), b.properties.get(key)
        if key == QUOTA_DELAY and delay_changed:
            continue  # reported once, as the effective delay below
        if pa != pb:
            kind = "added" if pa is None else "removed" if pb is None else "changed"
            out.append(ConfigChange(part, path, "property", kind, pa, pb, key=key))
    if delay_changed:
        da, db = a.quota_preemption_delay, b.quota_preemption_delay
        kind = "added" if da == 0 else "removed" if db == 0 else "changed"
        out.append(ConfigChange(part, path, "quota_preemption_delay", kind, da or None, db or None))
    if a.max_applications != b.max_applications:
        out.append(
            ConfigChange(
                part, path, "max_applications", "changed", a.max_applications, b.max_applications
            )
        )
    if a.child_template != b.child_template:
        out.append(
            ConfigChange(
                part, path, "child_template", "changed", a.child_template, b.child_template
            )
        )
    return out
