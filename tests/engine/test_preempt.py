"""Inter-queue preemption for one ask through the library API (engine.md 3)."""

from __future__ import annotations

import copy
import doctest
import importlib

import pytest
from preempt_helpers import ASK, V, example1, q

from engine.answers import PreemptAnswer
from engine.errors import ScenarioError
from engine.model import Allocation, Ask, Cluster, Node
from engine.preempt import preempt, victim_order_key


@pytest.mark.parametrize(
    "module",
    ["engine.preempt", "engine.preempt_victims", "engine.preempt_nodes", "engine.preempt_trim"],
)
def test_doctests_pass(module: str) -> None:
    """The preempt modules' >>> examples hold."""
    assert doctest.testmod(importlib.import_module(module)).failed == 0


def test_doctests_found() -> None:
    """The victim order's examples are really run (they live beside the order)."""
    assert doctest.testmod(importlib.import_module("engine.preempt_victims")).attempted > 0


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
