"""Small clusters for the preempt and rounds tests: a queue builder and hardening Example 1."""

from __future__ import annotations

from engine.model import Allocation, Ask, Cluster, Node, QueueConfig

V = "vcore"


def q(name: str, *children: QueueConfig, **kw: object) -> QueueConfig:
    kids = tuple(sorted(children, key=lambda c: c.name))
    return QueueConfig(name, children=kids, **kw)  # type: ignore[arg-type]


def example1() -> Cluster:
    """engine.md 3.12: hardening Example 1 on two full 10-vcore nodes."""
    tree = q(
        "root",
        q(
            "parent",
            q(
                "parent1",
                q("child1", guaranteed={V: 5}),
                q("child2", guaranteed={V: 5}),
                guaranteed={V: 10},
            ),
            q("parent2"),
            max={V: 20},
        ),
    )
    c1, p2 = "root.parent.parent1.child1", "root.parent.parent2"
    allocs = (
        Allocation("a1", c1, "node-1", {V: 5}, created=100.0),
        Allocation("a2", c1, "node-1", {V: 5}, created=200.0),
        Allocation("b1", p2, "node-2", {V: 5}, created=150.0),
        Allocation("b2", p2, "node-2", {V: 5}, created=250.0),
    )
    return Cluster(tree, (Node("node-1", {V: 10}), Node("node-2", {V: 10})), allocs)


ASK = Ask("ask-1", "root.parent.parent1.child2", {V: 5}, created=0.0)
