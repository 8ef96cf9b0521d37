"""What changed between two stored snapshots of one cluster (one partition).

Queues whose limits (guaranteed, max, quota preemption delay) or usage (usage,
preempting, pending) changed, queues that appeared or vanished; allocations that
appeared or left, and those whose node, resources or preempted flag changed;
pending asks and nodes that appeared or left.  Reads the platform's snapshot rows
only (values, no model instances), so it stays cheap for large clusters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dashboard import models as dm
from dashboard.services import ServiceError, snapshot_allocations, snapshot_nodes

QUEUE_LIMIT_FIELDS = ("guaranteed", "max", "quota_preemption_delay")
QUEUE_USAGE_FIELDS = ("usage", "preempting", "pending")
ALLOCATION_FIELDS = ("app", "queue", "node", "resources", "priority", "preempted")
ALLOCATION_CHANGE_FIELDS = ("node", "resources", "preempted", "priority", "queue")
ASK_FIELDS = ("app", "queue", "resources", "priority")
NODE_FIELDS = ("capacity", "allocated", "schedulable")


def _rows(qs: Any, key: str, fields: Iterable[str]) -> dict[str, dict[str, Any]]:
    names = (key, *fields)
    # unordered: a dict needs no order, and the spans' default order joins and sorts
    return {row[key]: row for row in qs.order_by().values(*names)}


def _delta(
    before: Mapping[str, Any], after: Mapping[str, Any], fields: Iterable[str]
) -> dict[str, dict[str, Any]]:
    return {
        f: {"before": before.get(f), "after": after.get(f)}
        for f in fields
        if before.get(f) != after.get(f)
    }


def _resource_diff(
    before: Mapping[str, int] | None, after: Mapping[str, int] | None
) -> dict[str, int]:
    """after - before per type (only the types that moved)."""
    a, b = before or {}, after or {}
    out = {t: b.get(t, 0) - a.get(t, 0) for t in sorted(set(a) | set(b))}
    return {t: d for t, d in out.items() if d}


def _snapshot_ref(s: dm.ClusterSnapshot) -> dict[str, Any]:
    return {
        "id": s.pk,
        "captured_at": s.captured_at.isoformat(),
        "source_kind": s.source_kind,
        "checksum": s.checksum,
    }


def compare_snapshots(a: dm.ClusterSnapshot, b: dm.ClusterSnapshot) -> dict[str, Any]:
    """Changes from snapshot *a* (before) to snapshot *b* (after), as a JSON-ready dict.

    Raises:
        ServiceError: when the snapshots belong to different partitions (clusters).
    """
    if a.partition_id != b.partition_id:
        raise ServiceError(
            "b",
            f"snapshot {b.pk} is of partition {b.partition.name!r}, snapshot {a.pk} of "
            f"{a.partition.name!r}: only snapshots of one cluster compare",
        )
    q_fields = QUEUE_LIMIT_FIELDS + QUEUE_USAGE_FIELDS
    qa = _rows(a.queues.all(), "path", q_fields)
    qb = _rows(b.queues.all(), "path", q_fields)
    queues_changed = []
    for path in sorted(set(qa) & set(qb)):
        limits = _delta(qa[path], qb[path], QUEUE_LIMIT_FIELDS)
        usage = _delta(qa[path], qb[path], QUEUE_USAGE_FIELDS)
        if not limits and not usage:
            continue
        entry: dict[str, Any] = {
            "path": path,
            "limits_changed": bool(limits),
            "usage_changed": bool(usage),
            "changes": {**limits, **usage},
        }
        if "usage" in usage:
            entry["usage_delta"] = _resource_diff(qa[path]["usage"], qb[path]["usage"])
        queues_changed.append(entry)

    aa = _rows(snapshot_allocations(a), "key", ALLOCATION_FIELDS)
    ab = _rows(snapshot_allocations(b), "key", ALLOCATION_FIELDS)
    appeared = [ab[k] for k in sorted(set(ab) - set(aa))]
    left = [aa[k] for k in sorted(set(aa) - set(ab))]
    alloc_changed = []
    for k in sorted(set(aa) & set(ab)):
        d = _delta(aa[k], ab[k], ALLOCATION_CHANGE_FIELDS)
        if d:
            alloc_changed.append({"key": k, "changes": d})

    ka = _rows(a.asks.all(), "key", ASK_FIELDS)
    kb = _rows(b.asks.all(), "key", ASK_FIELDS)
    na = _rows(snapshot_nodes(a), "node_id", NODE_FIELDS)
    nb = _rows(snapshot_nodes(b), "node_id", NODE_FIELDS)
    nodes_changed = []
    for n in sorted(set(na) & set(nb)):
        d = _delta(na[n], nb[n], NODE_FIELDS)
        if d:
            nodes_changed.append({"node_id": n, "changes": d})

    result: dict[str, Any] = {
        "partition": a.partition.name,
        "a": _snapshot_ref(a),
        "b": _snapshot_ref(b),
        "queues": {
            "added": sorted(set(qb) - set(qa)),
            "removed": sorted(set(qa) - set(qb)),
            "changed": queues_changed,
        },
        "allocations": {"appeared": appeared, "left": left, "changed": alloc_changed},
        "asks": {
            "appeared": [kb[k] for k in sorted(set(kb) - set(ka))],
            "left": [ka[k] for k in sorted(set(ka) - set(kb))],
        },
        "nodes": {
            "added": sorted(set(nb) - set(na)),
            "removed": sorted(set(na) - set(nb)),
            "changed": nodes_changed,
        },
    }
    result["summary"] = {
        "queues_changed": len(queues_changed),
        "queue_limits_changed": sum(1 for q in queues_changed if q["limits_changed"]),
        "queue_usage_changed": sum(1 for q in queues_changed if q["usage_changed"]),
        "queues_added": len(result["queues"]["added"]),
        "queues_removed": len(result["queues"]["removed"]),
        "allocations_appeared": len(appeared),
        "allocations_left": len(left),
        "allocations_changed": len(alloc_changed),
        "asks_appeared": len(result["asks"]["appeared"]),
        "asks_left": len(result["asks"]["left"]),
        "nodes_added": len(result["nodes"]["added"]),
        "nodes_removed": len(result["nodes"]["removed"]),
        "nodes_changed": len(nodes_changed),
    }
    result["summary"]["identical"] = not any(result["summary"].values())
    return result
