"""Queue snapshot (engine.md 0.1 and 2): seed examples, inheritance, working usage."""

from __future__ import annotations

import doctest

import pytest

from engine import queues
from engine.model import Allocation, Cluster, Node, QueueConfig
from engine.queues import (
    DEFAULT_PREEMPTION_DELAY,
    build_snapshot,
    parse_go_duration,
    preemptable,
    queue_resources,
    remaining,
)

V = "vcore"
CHILD1 = "root.parent.parent1.child1"
CHILD2 = "root.parent.parent1.child2"


def q(name: str, *children: QueueConfig, **kw: object) -> QueueConfig:
    return QueueConfig(name, children=tuple(sorted(children, key=lambda c: c.name)), **kw)  # type: ignore[arg-type]


def hardening(example: int) -> Cluster:
    """Hardening Examples 1 and 2: usage child1 10, parent2 10; parent max 20."""
    parent1_g = {V: 10} if example == 1 else None
    tree = q(
        "root",
        q(
            "parent",
            q(
                "parent1",
                q("child1", guaranteed={V: 5}),
                q("child2", guaranteed={V: 5}),
                guaranteed=parent1_g,
            ),
            q("parent2"),
            max={V: 20},
        ),
    )
    allocs = (
        Allocation("a1", CHILD1, "n1", {V: 5}),
        Allocation("a2", CHILD1, "n1", {V: 5}),
        Allocation("b1", "root.parent.parent2", "n2", {V: 10}),
    )
    return Cluster(tree, (Node("n1", {V: 10}), Node("n2", {V: 10})), allocs)


def test_doctests_pass() -> None:
    """The module's >>> examples hold."""
    assert doctest.testmod(queues).failed == 0


def vc(x: int | None) -> dict[str, int] | None:
    return None if x is None else {V: x}


# engine.md 2.3: (queue, Ex1 preemptable, Ex1 no ask, Ex1 ask in child2, Ex2 preemptable, Ex2)
TABLE = [
    ("root", vc(20), None, None, vc(20), None),
    ("root.parent", vc(20), None, None, vc(20), None),
    ("root.parent.parent1", {}, vc(0), None, vc(10), None),
    (CHILD1, vc(5), vc(-5), vc(-5), vc(5), vc(-5)),
    (CHILD2, None, vc(0), vc(5), None, vc(5)),
    ("root.parent.parent2", vc(10), None, None, vc(10), None),
]


@pytest.mark.parametrize(("path", "p1", "r1", "r1_ask", "p2", "r2"), TABLE)
def test_hardening_table(
    path: str,
    p1: dict[str, int] | None,
    r1: dict[str, int] | None,
    r1_ask: dict[str, int] | None,
    p2: dict[str, int] | None,
    r2: dict[str, int] | None,
) -> None:
    """Every cell of the engine.md 2.3 table, with and without an ask in child2."""
    ex1 = build_snapshot(hardening(1))
    ex2 = build_snapshot(hardening(2))
    assert preemptable(ex1, path) == p1
    assert remaining(ex1, path) == r1
    assert remaining(ex1, path, CHILD2) == r1_ask
    assert preemptable(ex2, path) == p2
    assert remaining(ex2, path) == r2
    assert remaining(ex2, path, CHILD2) == r2


def test_removing_a_victim_shifts_remaining_as_the_seed_narrates() -> None:
    """Ex1: removing 5 vcore from child1 moves child1 -5 -> 0, parent1 0 -> 5, child2 0 -> 5."""
    snap = build_snapshot(hardening(1))
    work = snap.working()
    mark = work.mark()
    work.remove(CHILD1, {V: 5})
    assert work.remaining(CHILD1) == {V: 0}
    assert work.remaining("root.parent.parent1") == {V: 5}
    assert work.remaining(CHILD2) == {V: 5}
    work.undo(mark)
    assert work.remaining(CHILD1) == {V: -5}
    assert work.usage_of("root") == {V: 20}


def standalone(g: dict[str, int] | None, used: dict[str, int]) -> Cluster:
    return Cluster(
        q("root", q("q", guaranteed=g)), allocations=(Allocation("x", "root.q", "n", used),)
    )


@pytest.mark.parametrize(
    ("g", "used", "pre", "rem"),
    [
        ({V: 5}, {V: 6}, {V: 1}, {V: -1}),  # preemptable example 1
        ({V: 5}, {"mem": 600}, {"mem": 600}, {V: 5}),  # example 2 (both functions)
        (None, {V: 6, "mem": 600}, {V: 6, "mem": 600}, None),  # example 3
        ({V: 5}, {V: 4}, {}, {V: 1}),  # remaining example 1 (R1)
    ],
    ids=["case1", "case2", "case3", "R1"],
)
def test_seed_resource_examples(
    g: dict[str, int] | None,
    used: dict[str, int],
    pre: dict[str, int] | None,
    rem: dict[str, int] | None,
) -> None:
    """The hardening seed's GetPreemptableResource / GetRemainingGuaranteedResource examples."""
    answer = queue_resources(standalone(g, used), "root.q")
    assert answer.preemptable == pre
    assert answer.remaining_guaranteed == rem
    assert answer.to_dict() == {"preemptable": pre, "remaining_guaranteed": rem}


def test_sums_preempting_and_zero_entries() -> None:
    """A counts preempted allocations, P only those, U = A - P without zero entries."""
    tree = q("root", q("a"), q("b"))
    cluster = Cluster(
        tree,
        (Node("n", {V: 10}),),
        (
            Allocation("x", "root.a", "n", {V: 2}),
            Allocation("y", "root.a", "n", {V: 3, "gpu": 1}, preempted=True),
            Allocation("z", "root.b", "n", {"gpu": 1}),
        ),
    )
    snap = build_snapshot(cluster)
    assert snap.allocated("root.a") == {V: 5, "gpu": 1}
    assert snap.preempting("root.a") == {V: 3, "gpu": 1}
    assert snap.usage("root.a") == {V: 2}
    assert snap.usage("root") == {V: 2, "gpu": 1}
    assert snap.max("root") == {V: 10}  # root max falls back to node capacity


def test_root_max_given_wins_and_none_without_nodes() -> None:
    """Root max: configured value, else sum of capacities (unschedulable too), else None."""
    with_max = Cluster(q("root", q("a"), max={V: 3}), (Node("n", {V: 10}),))
    assert build_snapshot(with_max).max("root") == {V: 3}
    nodes = (Node("n1", {V: 10}), Node("n2", {V: 5, "gpu": 1}, schedulable=False))
    assert build_snapshot(Cluster(q("root", q("a")), nodes)).max("root") == {V: 15, "gpu": 1}
    assert build_snapshot(Cluster(q("root", q("a")))).max("root") is None


def test_property_inheritance() -> None:
    """engine.md 0.1: disabled is inherited, fence is not, priority is own only, delays inherit."""
    tree = q(
        "root",
        q(
            "off",
            q("leaf"),
            q("back", properties={"preemption.policy": "default"}),
            properties={"preemption.policy": "DISABLED", "preemption.delay": "1m"},
        ),
        q(
            "fenced",
            q("leaf", properties={"preemption.delay": "junk"}),
            properties={
                "preemption.policy": "Fence",
                "priority.policy": "fence",
                "priority.offset": "7",
                "preemption.delay": "10s",
            },
            quota_preemption_delay=120.0,
        ),
        q("odd", properties={"preemption.policy": "weird", "priority.offset": "x"}),
        quota_preemption_delay=5.0,
    )
    snap = build_snapshot(Cluster(tree))
    assert snap.queue("root.off").preemption_policy == "disabled"
    assert snap.queue("root.off.leaf").preemption_policy == "disabled"
    assert snap.queue("root.off.back").preemption_policy == "default"
    assert snap.queue("root.off.leaf").preemption_delay == 60.0
    assert snap.queue("root.fenced").preemption_policy == "fence"
    assert snap.queue("root.fenced.leaf").preemption_policy == "default"
    assert snap.queue("root.fenced").priority_fence
    assert snap.queue("root.fenced").priority_offset == 7
    assert not snap.queue("root.fenced.leaf").priority_fence
    assert snap.queue("root.fenced.leaf").priority_offset == 0
    # an unparsable own value gives 30 s, not the ancestor's 10 s
    assert snap.queue("root.fenced.leaf").preemption_delay == DEFAULT_PREEMPTION_DELAY
    assert snap.queue("root.odd").preemption_policy == "default"
    assert snap.queue("root.odd").priority_offset == 0
    assert snap.queue("root.fenced.leaf").quota_preemption_delay == 120.0
    assert snap.queue("root.odd").quota_preemption_delay == 5.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("2m", 120.0), ("1h30m", 5400.0), ("1.5s", 1.5), (".5s", 0.5),
     ("100ms", 0.1), ("1us", 1e-6), ("-1s", -1.0), ("0", 0.0), ("+2s", 2.0),
     ("5", None), ("", None), ("2d", None), ("1e3s", None), ("s", None), (" 1s", None),
     ("1s ", None), ("9999999999h", None), ("\u0665m", None), ("1.s", 1.0), (".", None)],
)  # fmt: skip
def test_go_durations(text: str, seconds: float | None) -> None:
    """Go's time.ParseDuration grammar: units ns..h only, no bare numbers but 0."""
    got = parse_go_duration(text)
    if seconds is None:
        assert got is None
    else:
        assert got == pytest.approx(seconds)


@pytest.mark.parametrize("delay", ["0s", "-5s", "junk"])
def test_delay_not_positive_or_unparsable_defaults_to_30s(delay: str) -> None:
    """Missing, unparsable or <= 0 preemption.delay means 30 s."""
    tree = q("root", q("a", properties={"preemption.delay": delay}))
    assert build_snapshot(Cluster(tree)).queue("root.a").preemption_delay == 30.0


def test_paths_ancestry_and_leaf_order() -> None:
    """Path order is plain string order; ancestry is real, not a string prefix."""
    tree = q("root", q("a", q("b"), q("c")), q("a-x"), q("ab", q("x")))
    snap = build_snapshot(Cluster(tree))
    assert [i.path for i in snap] == [
        "root", "root.a", "root.a-x", "root.a.b", "root.a.c", "root.ab", "root.ab.x",
    ]  # fmt: skip
    assert snap.leaves_under("root") == ["root.a-x", "root.a.b", "root.a.c", "root.ab.x"]
    assert snap.leaves_under("root.a") == ["root.a.b", "root.a.c"]
    assert snap.ancestors("root.a.b") == ["root.a", "root"]
    assert snap.ancestors("root.a.b", include_self=True)[0] == "root.a.b"
    assert not snap.is_ancestor("root.a", "root.ab.x")
    assert snap.is_ancestor("root.ab", "root.ab.x")
    assert snap.queue("root.a").children == ("root.a.b", "root.a.c")
    assert snap.subtree("root.ab") == ["root.ab", "root.ab.x"]


def test_deep_tree_needs_no_recursion() -> None:
    """A 5000-level tree builds and answers without hitting the recursion limit."""
    leaf = QueueConfig("l", guaranteed={V: 1})
    node = leaf
    for i in range(5000):
        node = QueueConfig(f"q{i}", children=(node,), guaranteed={V: 10} if i % 2 else None)
    snap = build_snapshot(Cluster(QueueConfig("root", children=(node,))))
    deepest = snap.leaves_under("root")[0]
    assert remaining(snap, deepest) == {V: 1}
    assert preemptable(snap, deepest) is None


def test_working_usage_undo_restores_everything() -> None:
    """add/remove apply to the queue and every ancestor; undo(mark) reverts later changes only."""
    snap = build_snapshot(hardening(1))
    work = snap.working()
    work.add(CHILD2, {V: 3, "gpu": 1})
    first = work.mark()
    work.remove("root.parent.parent2", {V: 4})
    assert work.usage_of("root") == {V: 19, "gpu": 1}
    work.undo(first)
    assert work.usage_of("root") == {V: 23, "gpu": 1}
    assert work.usage_of("root.parent.parent1") == {V: 13, "gpu": 1}
    work.undo()
    assert [work.usage_of(i.path) for i in snap] == [dict(i.usage) for i in snap]
    assert work.preemptable(CHILD1) == {V: 5}
