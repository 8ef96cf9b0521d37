"""Frozen scenario dataclasses back to their JSON objects (scenario-format.md).

``parse_scenario(scenario_to_dict(s))`` gives back a scenario equal to *s*;
:mod:`engine.scenario` re-exports these names.
"""

from __future__ import annotations

from engine.model import (
    Allocation,
    Ask,
    Cluster,
    PreemptRequest,
    QueueConfig,
    QuotaChangeRequest,
    Request,
    ResourcesRequest,
    Scenario,
)
from engine.resources import Resource


def _queue_to_dict(q: QueueConfig) -> dict[str, object]:
    out: dict[str, object] = {"name": q.name}
    if q.guaranteed is not None:
        out["guaranteed"] = dict(q.guaranteed)
    if q.max is not None:
        out["max"] = dict(q.max)
    if q.properties:
        out["properties"] = dict(q.properties)
    if q.quota_preemption_delay is not None:
        out["quota_preemption_delay"] = q.quota_preemption_delay
    if q.children:
        out["children"] = [_queue_to_dict(c) for c in q.children]
    return out


def ask_to_dict(a: Ask) -> dict[str, object]:
    """An ask as its JSON object."""
    return {
        "key": a.key,
        "app": a.app,
        "queue": a.queue,
        "resources": dict(a.resources),
        "priority": a.priority,
        "allow_preempt_other": a.allow_preempt_other,
        "created": a.created,
    }


def allocation_to_dict(a: Allocation) -> dict[str, object]:
    """An allocation as its JSON object."""
    return {
        "key": a.key,
        "app": a.app,
        "queue": a.queue,
        "node": a.node,
        "resources": dict(a.resources),
        "priority": a.priority,
        "originator": a.originator,
        "allow_preemption": a.allow_preemption,
        "created": a.created,
        "required_node": a.required_node,
        "preempted": a.preempted,
    }


def request_to_dict(r: Request) -> dict[str, object]:
    """A request as its JSON object."""
    if isinstance(r, PreemptRequest):
        return {"type": r.type, "ask": ask_to_dict(r.ask)}
    if isinstance(r, QuotaChangeRequest):
        return {
            "type": r.type,
            "queue": r.queue,
            "new_max": None if r.new_max is None else dict(r.new_max),
        }
    if isinstance(r, ResourcesRequest):
        return {"type": r.type, "queue": r.queue}
    cap: Resource | None = r.max_preempted
    return {
        "type": r.type,
        "asks": [ask_to_dict(a) for a in r.asks],
        "max_preempted": None if cap is None else dict(cap),
    }


def cluster_to_dict(c: Cluster) -> dict[str, object]:
    """The cluster part of a scenario document."""
    return {
        "partition": {
            "quota_preemption_enabled": c.partition.quota_preemption_enabled,
            "miss": c.partition.miss,
        },
        "queues": _queue_to_dict(c.root),
        "nodes": [
            {"id": n.id, "capacity": dict(n.capacity), "schedulable": n.schedulable}
            for n in c.nodes
        ],
        "allocations": [allocation_to_dict(a) for a in c.allocations],
    }


def scenario_to_dict(s: Scenario) -> dict[str, object]:
    """The JSON document of *s*; ``parse_scenario`` of it gives back an equal scenario."""
    out = cluster_to_dict(s.cluster)
    out["now"] = s.now
    out["request"] = request_to_dict(s.request)
    return out
