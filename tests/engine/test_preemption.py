"""Inter-queue preemption and rounds through the library API (engine.md 3 and 6)."""

from __future__ import annotations

import copy
import doctest

import pytest

from engine import preemption
from engine.errors import ScenarioError
from engine.model import Allocation, Ask, Cluster, Node, QueueConfig
from engine.preemption import PreemptAnswer, RoundAnswer, preempt, run_round, victim_order_key

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


def test_doctests_pass() -> None:
    """The module's >>> examples hold."""
    assert doctest.testmod(preemption).failed == 0


def test_worked_example() -> None:
    """engine.md 3.12: preempted on node-1, fence root.parent, victims [a2]."""
    answer = preempt(example1(), ASK, now=1000.0)
    assert answer == PreemptAnswer("preempted", "root.parent", "node-1", ("a2",), None, "ask-1")
    assert answer.to_dict() == {
        "ask": "ask-1",
        "status": "preempted",
        "node": "node-1",
        "fence": "root.parent",
        "victims": ["a2"],
        "reason": None,
    }


def test_inputs_are_not_mutated() -> None:
    """Public functions never change their inputs."""
    cluster = example1()
    before = copy.deepcopy(cluster)
    preempt(cluster, ASK, now=1000.0)
    run_round(cluster, (ASK,), {V: 1}, now=1000.0)
    assert cluster == before


def test_order_key_is_replaceable() -> None:
    """The cost function is one key: oldest-first picks a1 instead of a2 (still index 0)."""

    def oldest_first(a: Allocation) -> tuple[float, str]:
        return (a.created, a.key)

    answer = preempt(example1(), ASK, now=1000.0, order_key=oldest_first)
    assert answer.node == "node-1"
    assert answer.victims == ("a1",)
    assert victim_order_key(example1().allocations[0])[3] == "a1"


@pytest.mark.parametrize("queue", ["root.parent", "root.nope"])
def test_ask_queue_must_be_a_known_leaf(queue: str) -> None:
    """An ask in a parent or unknown queue is bad input."""
    with pytest.raises(ScenarioError) as info:
        preempt(example1(), Ask("k", queue, {V: 1}), now=0.0)
    assert info.value.field == "request.ask.queue"


def test_fence_policy_on_the_ask_queue_itself_leaves_no_victims() -> None:
    """A fence at the ask queue stops the victim walk at once (3.4 'Q is the ask queue: stop')."""
    tree = q("root", q("a", guaranteed={V: 4}, properties={"preemption.policy": "fence"}), q("b"))
    cluster = Cluster(tree, (Node("n", {V: 2}),), (Allocation("b1", "root.b", "n", {V: 2}),))
    answer = preempt(cluster, Ask("k", "root.a", {V: 2}), now=1000.0)
    assert answer.fence == "root.a"
    assert answer.status == "not_possible"
    assert answer.victims == ()


def test_queues_fit_but_nodes_are_full() -> None:
    """Queues have room, no schedulable node has: victims free a node (an unschedulable roomy
    node is never used)."""
    tree = q("root", q("a", guaranteed={V: 4}), q("b"), max={V: 100})
    nodes = (Node("n1", {V: 2}, schedulable=False), Node("n2", {V: 2}))
    allocs = (Allocation("b1", "root.b", "n2", {V: 2}),)
    answer = preempt(Cluster(tree, nodes, allocs), Ask("k", "root.a", {V: 2}), now=1000.0)
    assert (answer.status, answer.node, answer.victims) == ("preempted", "n2", ("b1",))


def test_round_cap_blocks_victims_but_not_fits() -> None:
    """Section 6: once capped, later victims are refused but later asks may still fit."""
    tree = q("root", q("a", guaranteed={V: 4}), q("b"))
    nodes = (Node("n1", {V: 2, "mem": 4}), Node("n2", {V: 2}))
    allocs = (
        Allocation("b1", "root.b", "n1", {V: 2}, created=1.0),
        Allocation("b2", "root.b", "n2", {V: 2}, created=2.0),
    )
    asks = (
        Ask("first", "root.a", {V: 2}, priority=5),
        Ask("second", "root.a", {V: 2}, priority=5, created=1.0),
        Ask("third", "root.b", {"mem": 1}, priority=0),
    )
    answer = run_round(Cluster(tree, nodes, allocs), asks, {V: 3}, now=1000.0)
    assert [r.ask for r in answer.results] == ["first", "second", "third"]
    assert [r.status for r in answer.results] == ["preempted", "not_possible", "fits"]
    assert answer.results[1].reason == preemption.REASON_CAP
    assert answer.capped
    assert answer.preempted_total == {V: 2}
    assert RoundAnswer.from_dict(answer.to_dict()) == answer


def test_round_rejects_duplicate_ask_keys() -> None:
    """Ask keys are unique within a round."""
    ask = Ask("k", "root.parent.parent1.child2", {V: 1})
    with pytest.raises(ScenarioError) as info:
        run_round(example1(), (ask, ask), None, now=0.0)
    assert info.value.field == "request.asks[1].key"


def test_answer_from_dict_rejects_unknown_status() -> None:
    """from_dict validates the status word."""
    with pytest.raises(ValueError, match="status"):
        PreemptAnswer.from_dict({"status": "maybe", "fence": "root"})


def test_round_ask_fits_once_earlier_preemptions_finish() -> None:
    """3.10 in a round: the second ask runs once the first ask's victim is gone.

    team max 4 holds b1 (4) and b2 (1) on n1 (9 vcore, 4 free).  The first ask (2)
    takes b1 (team 5 - 4 + 2 = 3); the second ask (1) then counts in U, where b1
    is left out: team 3 + 1 = 4 <= 4 and n1 still has 2 free.  b2 stays.
    """
    tree = q("root", q("team", q("a", guaranteed={V: 4}), q("b"), max={V: 4}))
    allocs = (
        Allocation("b1", "root.team.b", "n1", {V: 4}, created=20.0),
        Allocation("b2", "root.team.b", "n1", {V: 1}, created=10.0),
    )
    cluster = Cluster(tree, (Node("n1", {V: 9}),), allocs)
    asks = (Ask("first", "root.team.a", {V: 2}), Ask("second", "root.team.a", {V: 1}, created=1.0))
    answer = run_round(cluster, asks, None, now=1000.0)
    first, second = answer.results
    assert (first.status, first.node, first.victims) == ("preempted", "n1", ("b1",))
    assert (second.status, second.victims) == ("not_possible", ())
    assert second.reason == preemption.REASON_IN_PROGRESS
    assert answer.preempted_total == {V: 4}
