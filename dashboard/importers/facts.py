"""What YuniKorn reports beyond the engine contract, kept in the imported scenario.

The scenario contract (``shared/spec/scenario-format.md``) ignores extra keys,
so a snapshot imported from YuniKorn REST answers or a state dump keeps, next to
what the engine reads, the scheduler's own figures and facts, named as the
scheduler shows them:

per queue
    ``allocated`` (``allocatedResource`` as reported: preempted allocations still
    count), ``preempting`` (``preemptingResource``) and ``remaining`` = allocated
    - preempting, the usage the engine computes.  ``remaining`` keeps every type
    of ``allocated``, with 0 where all of it is being preempted: a queue whose only
    usage is being preempted keeps its types.  ``status`` (Active, Draining,
    Stopped), ``is_managed`` and ``dynamic`` (made from a child template),
    ``max_applications`` (``maxRunningApps``), ``running_apps``, and
    ``quota_preemption_start`` (seconds; ``quotaPreemptionStartTime``, sent by
    newer schedulers) with ``quota_preemption_running`` when present;
per allocation
    ``placeholder``, ``placeholder_used`` and ``task_group`` (gang scheduling);
per node
    ``reported_capacity`` (``capacity`` as reported), ``occupied`` (what
    non-YuniKorn pods hold) and ``foreign_pods``; the engine's ``capacity`` is
    reported capacity - occupied;
per snapshot
    ``cluster_id`` and ``captured_at`` (the state dump's timestamp; None for REST
    answers, which carry no capture time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NS = 1e9


def remaining(allocated: Mapping[str, int], preempting: Mapping[str, int]) -> dict[str, int]:
    """allocated - preempting over the types of *allocated*, zeros kept.

    >>> remaining({"vcore": 2000, "memory": 8}, {"vcore": 2000, "memory": 8})
    {'vcore': 0, 'memory': 0}
    """
    return {t: q - preempting.get(t, 0) for t, q in allocated.items()}


def queue_facts(info: Mapping[str, Any], managed: bool) -> dict[str, Any]:
    """The extra keys of one scenario queue, from the importer's per-queue figures."""
    out: dict[str, Any] = {
        "allocated": dict(info["allocated"]),
        "preempting": dict(info["preempting"]),
        "remaining": remaining(info["allocated"], info["preempting"]),
        "status": info["status"] or "Active",
        "is_managed": managed,
        "dynamic": not managed,
        "running_apps": info["running_apps"],
    }
    if info.get("max_running_apps"):
        out["max_applications"] = info["max_running_apps"]
    if info.get("quota_preemption_start") is not None:
        out["quota_preemption_start"] = info["quota_preemption_start"]
        out["quota_preemption_running"] = bool(info.get("quota_preemption_running"))
    return out


def allocation_facts(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Gang-scheduling facts of one ``AllocationDAOInfo`` (absent means false or empty)."""
    out: dict[str, Any] = {}
    if raw.get("placeholder") is True:
        out["placeholder"] = True
    if raw.get("placeholderUsed") is True:
        out["placeholder_used"] = True
    group = raw.get("taskGroupName")
    if isinstance(group, str) and group:
        out["task_group"] = group
    return out


def foreign_pod(raw: Mapping[str, Any], resources: Mapping[str, int]) -> dict[str, Any]:
    """One ``ForeignAllocationDAOInfo``: a pod another scheduler placed on the node."""
    tags = raw.get("allocationTags")
    tags = tags if isinstance(tags, Mapping) else {}
    namespace = tags.get("kubernetes.io/meta/namespace")
    pod = tags.get("kubernetes.io/meta/podName")
    return {
        "key": raw.get("allocationKey"),
        "pod": f"{namespace}/{pod}"
        if isinstance(namespace, str) and isinstance(pod, str)
        else None,
        "resources": dict(resources),
    }
