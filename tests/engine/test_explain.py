"""Victim explanation: quota candidates and exclusions with reasons; why preempt victims are
needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import strategies as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quota_helpers import alloc, cluster, queue
from support.profiles import examples

from engine import parse_scenario
from engine.answers import PreemptAnswer
from engine.errors import ScenarioError
from engine.explain import ORDER_RULES, TextFormat, explain_needed_victims, explain_victims
from engine.model import Ask, Cluster, PreemptRequest, RoundRequest, Scenario
from engine.preempt import QueueNeed, preempt
from engine.quota import plan_quota_change
from engine.rounds import run_round


def _leaf_cluster() -> Cluster:
    return cluster(
        [queue("a", queue("b", g={"memory": 30}), queue("c"))],
        [
            alloc("orig", "root.a.b", {"memory": 10}, 900.0, originator=True),
            alloc("prio", "root.a.b", {"memory": 10}, 800.0, priority=3),
            alloc("out", "root.a.b", {"memory": 10}, 700.0, allow_preemption=False),
            alloc("old", "root.a.b", {"memory": 10}, 100.0),
            alloc("young", "root.a.b", {"memory": 10}, 600.0),
            alloc("ds", "root.a.b", {"memory": 10}, 950.0, required_node=True),
            alloc("gone", "root.a.b", {"memory": 10}, 990.0, preempted=True),
            alloc("c1", "root.a.c", {"vcore": 4}, 5.0),
        ],
    )


def test_candidates_follow_the_quota_order_with_the_rule_that_places_them() -> None:
    """4.3: non-originator, lower priority, opted-in, younger; each says which rule separates it."""
    exp = explain_victims(_leaf_cluster(), "root.a.b", now=1000.0)
    assert [c.key for c in exp.candidates] == ["young", "old", "out", "prio", "orig"]
    assert [c.rank for c in exp.candidates] == [1, 2, 3, 4, 5]
    assert [c.after for c in exp.candidates] == [
        None,
        ORDER_RULES[3],  # younger first
        ORDER_RULES[2],  # opted-in before opted-out
        ORDER_RULES[1],  # lower priority first
        ORDER_RULES[0],  # non-originators first
    ]
    young = exp.candidates[0]
    assert any("400s old" in r for r in young.reasons)
    assert any(r.startswith("originator") for r in exp.candidates[-1].reasons)


def test_explanation_order_matches_the_plan() -> None:
    """One ordering key: the plan takes the explained candidates from the top."""
    c = _leaf_cluster()
    plan = plan_quota_change(c, "root.a.b", {"memory": 30}, now=0.0)  # usage 60, target 30
    exp = explain_victims(c, "root.a.b", {"memory": 30})
    assert plan.victims == ("young", "old", "out")
    assert tuple(x.key for x in exp.candidates[:3]) == plan.victims


def test_exclusions_name_each_reason() -> None:
    """required_node and preempted allocations are excluded, each with its reason."""
    exp = explain_victims(_leaf_cluster(), "root.a.b")
    reasons = {e.key: [r.code for r in e.reasons] for e in exp.exclusions}
    assert reasons == {"ds": ["required_node"], "gone": ["preempted"]}
    assert all(e.quota_excluded for e in exp.exclusions)
    assert "node n1" in exp.exclusions[0].reasons[0].text


def test_guarantee_floor_exclusion_names_the_queue_and_type() -> None:
    """4.4: taking it would bring the leaf or an ancestor below guaranteed in a type it uses."""
    c = cluster(
        [queue("p", queue("x", g={"memory": 15}), queue("y"), g={"vcore": 8})],
        [
            alloc("x1", "root.p.x", {"memory": 10}, 1.0),
            alloc("x2", "root.p.x", {"memory": 10}, 2.0),
            alloc("y1", "root.p.y", {"vcore": 5}, 1.0),
            alloc("y2", "root.p.y", {"vcore": 5}, 2.0),
            alloc("y3", "root.p.y", {"memory": 1}, 3.0),
        ],
    )
    exp = explain_victims(c, "root.p")
    assert exp.leaves == ("root.p.x", "root.p.y")
    floors = {e.key: e.reasons[0] for e in exp.exclusions}
    # x: 20 - 10 = 10 < 15 for both; y: root.p vcore 10 - 5 = 5 < 8; y3 uses no guaranteed type
    assert set(floors) == {"x1", "x2", "y1", "y2"}
    assert all(r.code == "guarantee_floor" for r in floors.values())
    assert "root.p.x" in floors["x1"].text
    assert "memory" in floors["x1"].text
    assert "root.p " in floors["y1"].text
    assert "vcore" in floors["y1"].text
    assert [x.key for x in exp.candidates] == ["y3"]


def test_reason_texts_print_numbers_exactly_by_default_or_as_the_caller_formats_them() -> None:
    """Raw texts keep every digit (an epoch time is not 1.78826e+09); a TextFormat is used
    for every number a reason shows: resources, creation times and ages."""
    c = cluster(
        [queue("p", queue("x", g={"memory": 15}))],
        [
            alloc("x1", "root.p.x", {"memory": 10}, 1788256800.0),
            alloc("x2", "root.p.x", {"memory": 10}, 1788256800.5),
        ],
    )
    raw = explain_victims(c, "root.p", now=1788256900.0)
    [floor] = {r.text for e in raw.exclusions for r in e.reasons}
    assert "{memory: 15}" in floor
    assert "{memory: 20}" in floor
    human = TextFormat(
        resource=lambda r: "R" + ",".join(f"{t}={q}" for t, q in sorted((r or {}).items())),
        instant=lambda t: f"T{t}",
        duration=lambda d: f"D{d}",
    )
    shown = explain_victims(c, "root.p", now=1788256900.0, text=human)
    [floor] = {r.text for e in shown.exclusions for r in e.reasons}
    assert "below its guarantee Rmemory=15 in memory (usage Rmemory=20)" in floor
    no_floor = cluster([queue("p", queue("x"))], [alloc("x1", "root.p.x", {"memory": 10}, 5.5)])
    [plain] = explain_victims(no_floor, "root.p", now=100.0).candidates
    assert "created at 5.5, 94.5s old" in plain.reasons[-1]
    [formatted] = explain_victims(no_floor, "root.p", now=100.0, text=human).candidates
    assert "created at T5.5, D94.5 old" in formatted.reasons[-1]
    epoch = cluster([queue("p", queue("x"))], [alloc("e", "root.p.x", {"memory": 1}, 1788256800.0)])
    [whole] = explain_victims(epoch, "root.p").candidates
    assert whole.reasons[-1].startswith("created at 1788256800:")


def test_target_excludes_allocations_without_its_types() -> None:
    """4.3: with a target, only allocations using one of its types are candidates."""
    exp = explain_victims(_leaf_cluster(), "root.a", {"vcore": 1})
    assert [x.key for x in exp.candidates] == ["c1"]
    no_type = [e.key for e in exp.exclusions if e.reasons[-1].code == "no_target_type"]
    assert set(no_type) == {"orig", "prio", "out", "old", "young", "ds", "gone"}


def test_inter_queue_reasons_keep_quota_candidates() -> None:
    """Policy disabled is an inter-queue exclusion only: quota preemption ignores it (4.3)."""
    c = cluster(
        [queue("a", queue("b"), props={"preemption.policy": "disabled"}), queue("f")],
        [alloc("b1", "root.a.b", {"memory": 1}, 1.0), alloc("f1", "root.f", {"memory": 1}, 1.0)],
    )
    exp = explain_victims(c, "root")
    assert [x.key for x in exp.candidates] == ["b1", "f1"]
    assert [x.inter_queue_excluded for x in exp.candidates] == [True, False]
    (excl,) = exp.exclusions
    assert (excl.key, excl.quota_excluded) == ("b1", False)
    assert [(r.code, r.scope) for r in excl.reasons] == [("preemption_disabled", "inter_queue")]


def test_fence_of_an_ask_queue_excludes_what_lies_outside() -> None:
    """3.3 / 3.4: for asks from a queue, victims come from below its fence, never its own queue."""
    c = cluster(
        [
            queue("t", queue("ask"), queue("mate"), props={"preemption.policy": "fence"}),
            queue("other"),
        ],
        [
            alloc("a1", "root.t.ask", {"memory": 1}, 1.0),
            alloc("m1", "root.t.mate", {"memory": 1}, 1.0),
            alloc("o1", "root.other", {"memory": 1}, 1.0),
        ],
    )
    exp = explain_victims(c, "root", ask_queue="root.t.ask")
    codes = {e.key: [r.code for r in e.reasons] for e in exp.exclusions}
    assert codes == {"a1": ["ask_queue"], "o1": ["outside_fence"]}
    outside = next(e for e in exp.exclusions if e.key == "o1")
    assert "outside root.t," in outside.reasons[0].text


def test_unknown_queues_raise() -> None:
    """Bad input names the field."""
    with pytest.raises(ScenarioError) as err:
        explain_victims(_leaf_cluster(), "root.zz")
    assert err.value.field == "queue"
    with pytest.raises(ScenarioError) as err:
        explain_victims(_leaf_cluster(), "root", ask_queue="root.zz")
    assert err.value.field == "ask_queue"


def test_to_dict_is_plain_json() -> None:
    """The page gets JSON: candidates and exclusions with their reasons."""
    data: Any = explain_victims(_leaf_cluster(), "root.a", {"memory": 5}, now=1000.0).to_dict()
    again = json.loads(json.dumps(data))
    assert again == data
    assert set(data) == {
        "queue",
        "target",
        "leaves",
        "order_rules",
        "candidates",
        "exclusions",
        "omitted",
    }
    first = data["candidates"][0]
    assert first["key"] == "young"
    assert first["rank"] == 1


def test_limit_lists_the_first_candidates_and_counts_the_rest() -> None:
    """A page shows the head of each leaf's order; the rest is counted, not dropped silently."""
    exp = explain_victims(_leaf_cluster(), "root.a", limit=2)
    assert [(c.queue, c.key) for c in exp.candidates] == [
        ("root.a.b", "young"),
        ("root.a.b", "old"),
        ("root.a.c", "c1"),
    ]
    assert exp.omitted == {"root.a.b": 3}


# -- why each inter-queue victim is needed ---------------------------------------------


def _golden(name: str) -> Scenario:
    path = Path(__file__).parent / "scenarios" / f"{name}.json"
    return parse_scenario(json.loads(path.read_text())["input"])


def _one_ask(s: Scenario) -> tuple[Ask, ...]:
    assert isinstance(s.request, PreemptRequest)
    return (s.request.ask,)


def test_needed_victims_name_what_each_frees_on_the_node() -> None:
    """Mixed types: b1 frees the vcore and b2 the memory node n1 lacked (engine.md 3.10)."""
    s = _golden("preempt_mixed_types_victim_per_type")
    asks = _one_ask(s)
    answer = preempt(s.cluster, asks[0], s.now)
    needed = explain_needed_victims(s.cluster, asks, answer)
    assert [n.key for n in needed] == ["b1", "b2"]
    first, second = (n.need for n in needed)
    assert (first.node_short, first.node_freed) == ({"vcore": 2, "memory": 2}, {"vcore": 2})
    assert (second.node_short, second.node_freed) == ({"memory": 2}, {"memory": 2})
    # root's max is the capacity {vcore 4, memory 4, gpu 1}, which the ask would exceed too
    assert first.queues == (
        QueueNeed("root", {"vcore": 4, "memory": 4}, {"vcore": 2, "memory": 2}, {"vcore": 2}),
    )
    assert second.queues == (QueueNeed("root", {"memory": 4}, {"memory": 2}, {"memory": 2}),)
    assert needed[1].text == (
        "frees {memory: 2} on node n1, which lacked {memory: 2} for the ask; frees "
        "{memory: 2} in root, where the ask would exceed the max {memory: 4} by {memory: 2}"
    )


def test_needed_victims_name_the_queue_max() -> None:
    """A node with room: the one small victim brings root.team within its max."""
    s = _golden("preempt_queue_max_one_small_victim")
    asks = _one_ask(s)
    answer = preempt(s.cluster, asks[0], s.now)
    (only,) = explain_needed_victims(s.cluster, asks, answer)
    assert only.key == "b1"
    assert only.need.node_freed == {}
    assert [(q.queue, q.max, q.over, q.freed) for q in only.need.queues] == [
        ("root.team", {"vcore": 6}, {"vcore": 1}, {"vcore": 1})
    ]
    assert "in root.team, where the ask would exceed the max {vcore: 6} by {vcore: 1}" in (
        only.text
    )
    assert only.to_dict()["queues"] == [
        {"queue": "root.team", "max": {"vcore": 6}, "over": {"vcore": 1}, "freed": {"vcore": 1}}
    ]


def test_needed_victims_of_a_round_use_the_state_each_ask_saw() -> None:
    """The second ask's victim is measured after the first ask's victim and placement."""
    s = _golden("round_no_cap")
    assert isinstance(s.request, RoundRequest)
    answer = run_round(s.cluster, s.request.asks, None, s.now)
    needed = explain_needed_victims(
        s.cluster, s.request.asks, answer, text=TextFormat(resource=lambda r: f"<{r}>")
    )
    assert [(n.ask, n.key) for n in needed] == [("ask-2", "b1"), ("ask-1", "b2")]
    for n in needed:
        assert n.need.node_freed == {"vcore": 2}
        # root (max 4, the capacities) would hold 4 + 2 without the victim
        assert n.need.queues == (QueueNeed("root", {"vcore": 4}, {"vcore": 2}, {"vcore": 2}),)
        assert n.text.startswith("frees <{'vcore': 2}> on node")


def test_a_victim_that_frees_nothing_says_so() -> None:
    """Victims given out of the engine's order: the second one covers nothing left."""
    s = _golden("preempt_node_part_free")
    asks = _one_ask(s)
    by_key = {a.key: a for a in s.cluster.allocations}
    answer = PreemptAnswer("preempted", "root", "n1", ("b1", "b2"), None, asks[0].key)
    needed = explain_needed_victims(s.cluster, asks, answer)
    assert needed[0].need.node_freed == {"vcore": 1}
    assert needed[1].need.node_freed == {}
    assert needed[1].need.queues == ()
    assert needed[1].text.startswith("frees nothing the ask still lacks")
    assert by_key["b2"].resources == {"vcore": 1}  # it would have been enough on its own


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(gen.any_round(), gen.trimming_round_scenario()))
def test_the_last_victim_of_every_ask_frees_something(doc: dict[str, object]) -> None:
    """No victim is unnecessary (engine.md 7.4): each ask's last victim covers part of what
    the ask still lacked, on the node or under a queue's max."""
    s = parse_scenario(doc)
    assert isinstance(s.request, RoundRequest)
    answer = run_round(s.cluster, s.request.asks, s.request.max_preempted, s.now)
    needed = explain_needed_victims(s.cluster, s.request.asks, answer)
    assert [n.key for n in needed] == [k for r in answer.results for k in r.victims]
    last = {r.victims[-1] for r in answer.results if r.victims}
    for n in needed:
        if n.key in last:
            assert n.need.node_freed or n.need.queues, n.text
