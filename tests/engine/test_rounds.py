"""Periodic preemption rounds through the library API (engine.md 6)."""

from __future__ import annotations

import copy

import pytest
from preempt_helpers import ASK, V, example1, q

from engine.answers import RoundAnswer
from engine.errors import ScenarioError
from engine.model import Allocation, Ask, Cluster, Node
from engine.preempt import REASON_IN_PROGRESS
from engine.rounds import REASON_CAP, run_round


def test_round_does_not_mutate_its_inputs() -> None:
    """A round works on its own state: the cluster given is unchanged."""
    cluster = example1()
    before = copy.deepcopy(cluster)
    run_round(cluster, (ASK,), {V: 1}, now=1000.0)
    assert cluster == before


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
    assert answer.results[1].reason == REASON_CAP
    assert answer.capped
    assert answer.preempted_total == {V: 2}
    assert RoundAnswer.from_dict(answer.to_dict()) == answer


def test_round_rejects_duplicate_ask_keys() -> None:
    """Ask keys are unique within a round."""
    ask = Ask("k", "root.parent.parent1.child2", {V: 1})
    with pytest.raises(ScenarioError) as info:
        run_round(example1(), (ask, ask), None, now=0.0)
    assert info.value.field == "request.asks[1].key"


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
    assert second.reason == REASON_IN_PROGRESS
    assert answer.preempted_total == {V: 4}
