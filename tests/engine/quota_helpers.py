"""Small builders for quota, timer and explanation tests (queues, allocations, clusters)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from engine.model import Allocation, Cluster, Node, Partition, QueueConfig

GIB = 2**30


def queue(
    name: str,
    *children: QueueConfig,
    g: Mapping[str, int] | None = None,
    m: Mapping[str, int] | None = None,
    delay: float | None = None,
    props: Mapping[str, str] | None = None,
) -> QueueConfig:
    """A queue config; children are kept in name order as the model expects."""
    return QueueConfig(
        name=name,
        guaranteed=dict(g) if g is not None else None,
        max=dict(m) if m is not None else None,
        properties=dict(props or {}),
        quota_preemption_delay=delay,
        children=tuple(sorted(children, key=lambda c: c.name)),
    )


def alloc(
    key: str,
    queue_path: str,
    resources: Mapping[str, int],
    created: float = 0.0,
    **flags: object,
) -> Allocation:
    """An allocation on node ``n1``; *flags* set priority, originator, and so on."""
    return Allocation(
        key=key,
        queue=queue_path,
        node="n1",
        resources={t: q for t, q in resources.items() if q != 0},
        app=f"app-{key}",
        priority=int(flags.get("priority", 0)),  # type: ignore[call-overload]  # test input
        originator=bool(flags.get("originator", False)),
        allow_preemption=bool(flags.get("allow_preemption", True)),
        created=created,
        required_node=bool(flags.get("required_node", False)),
        preempted=bool(flags.get("preempted", False)),
    )


def cluster(
    root_children: Iterable[QueueConfig],
    allocations: Iterable[Allocation],
    *,
    enabled: bool = True,
    miss: float = 0.0,
    root_g: Mapping[str, int] | None = None,
    root_delay: float | None = None,
) -> Cluster:
    """A cluster with one huge node, the given queues under root and the allocations."""
    root = queue("root", *root_children, g=root_g, delay=root_delay)
    node = Node("n1", {"memory": 2**62, "vcore": 2**40, "gpu": 1000})
    return Cluster(
        root=root,
        nodes=(node,),
        allocations=tuple(allocations),
        partition=Partition(quota_preemption_enabled=enabled, miss=miss),
    )
