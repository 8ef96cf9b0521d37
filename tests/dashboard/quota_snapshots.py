"""Snapshots of the quota tests' one-queue cluster: factories.small_scenario with a max on
root.a (guaranteed 2 cores, 60 s delay); every allocation is 1 core, alternating between
root.a.x (odd keys) and root.a.y (even keys), so *n* allocations are *n* cores of usage
under root.a."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import factories

from dashboard import models, services

T = factories.T0


def at(seconds: float) -> datetime:
    """*seconds* after the tests' T0."""
    return T + timedelta(seconds=seconds)


def scenario(
    allocations: int,
    *,
    max_vcore: int | None = 9000,
    leaf_max_vcore: int | None = None,
    preempted: int = 0,
    **kw: Any,
) -> dict[str, Any]:
    """*allocations* one-core pods under root.a (max *max_vcore*, none when None), each
    leaf's max *leaf_max_vcore* when given, the first *preempted* of them being preempted;
    *kw* goes to factories.small_scenario."""
    doc: dict[str, Any] = factories.small_scenario(**kw)
    if max_vcore is not None:
        doc["queues"]["children"][0]["max"] = {"vcore": max_vcore}
    if leaf_max_vcore is not None:
        for leaf in doc["queues"]["children"][0]["children"]:
            leaf["max"] = {"vcore": leaf_max_vcore}
    template = doc["allocations"][0]
    doc["allocations"] = [
        {
            **template,
            "key": f"k{i}",
            "queue": "root.a.x" if i % 2 else "root.a.y",
            "created": T.timestamp() - 1000 + i,
            **({"preempted": True} if i < preempted else {}),
        }
        for i in range(allocations)
    ]
    return doc


def store(
    doc: dict[str, Any], seconds: float, *, captured: float | None = None
) -> models.ClusterSnapshot:
    """*doc* stored as the default partition's snapshot at *seconds* (captured then, or at
    *captured*)."""
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=at(seconds if captured is None else captured),
        scenario=doc,
        now=at(seconds),
    )


def partition() -> models.Partition:
    return models.Partition.objects.get(name="default")
