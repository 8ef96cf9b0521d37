"""Quota-decrease preemption (engine.md section 4): the seed's worked examples and every rule."""

from __future__ import annotations

import pytest
from quota_helpers import GIB, alloc, cluster, queue

from engine.errors import ScenarioError
from engine.model import Allocation, Cluster
from engine.queues import build_snapshot
from engine.quota import (
    QuotaAnswer,
    format_resource,
    plan_quota_change,
    quota_target,
    quota_victim_key,
    releasable,
    split_target,
)

CONTRACT_KEYS = {"status", "queue", "preemptable", "claimed", "leaves", "victims", "alerts"}
EXTRA_KEYS = {"delay", "start_at", "missed", "shares"}


def _split(total: dict[str, int], parts: int, key: str, leaf_path: str) -> list[Allocation]:
    """*parts* equal allocations adding up to *total*, created 1..parts (the last is youngest)."""
    return [
        alloc(f"{key}{i}", leaf_path, {t: q // parts for t, q in total.items()}, float(i))
        for i in range(1, parts + 1)
    ]


# -- the seed's table (quota seed, "Preemptable Resource calculation") -----------------

SEED_TABLE = [
    # (current max, new max, usage, preemptable) for root.a.b, M = memory, C = vcore
    ({"memory": 100 * GIB}, {"memory": 50 * GIB}, {"memory": 80 * GIB}, {"memory": 30 * GIB}),
    (None, {"memory": 50 * GIB}, {"memory": 80 * GIB}, {"memory": 30 * GIB}),
    (
        {"memory": 100 * GIB, "vcore": 100},
        {"memory": 50 * GIB, "vcore": 50},
        {"memory": 80 * GIB, "vcore": 80},
        {"memory": 30 * GIB, "vcore": 30},
    ),
    (
        {"memory": 100 * GIB, "vcore": 100},
        {"memory": 200 * GIB, "vcore": 50},
        {"memory": 100 * GIB, "vcore": 80},
        {"vcore": 30},
    ),
    (
        {"memory": 100 * GIB},
        {"memory": 100 * GIB, "vcore": 100},
        {"memory": 50 * GIB, "vcore": 500},
        {"vcore": 400},
    ),
    (
        {"memory": 100 * GIB, "vcore": 100},
        {"memory": 50 * GIB},
        {"memory": 80 * GIB, "vcore": 100},
        {"memory": 30 * GIB},
    ),
    ({"memory": 100 * GIB}, {"vcore": 100}, {"memory": 100 * GIB, "vcore": 500}, {"vcore": 400}),
]


@pytest.mark.parametrize(
    ("current_max", "new_max", "usage", "expected"),
    SEED_TABLE,
    ids=[f"seed-table-row-{i}" for i in range(1, 8)],
)
def test_seed_table_row(
    current_max: dict[str, int] | None,
    new_max: dict[str, int],
    usage: dict[str, int],
    expected: dict[str, int],
) -> None:
    """Quota seed, "Preemptable Resource calculation": each row of the table for root.a.b.

    The target depends on usage and the new max only (the current max plays no
    part), and the plan claims at least the target from ten equal allocations.
    """
    c = cluster(
        [queue("a", queue("b", m=current_max, delay=60))],
        _split(usage, 10, "t", "root.a.b"),
    )
    answer = plan_quota_change(c, "root.a.b", new_max, now=0.0)
    assert expected == dict(answer.preemptable)
    assert expected == quota_target(usage, new_max)
    assert answer.status == "enforced"
    assert all(answer.claimed[t] >= q for t, q in expected.items())
    assert set(answer.claimed) == set(expected)


# -- the seed's "Preemption does not help" example (engine.md 4.6) ----------------------


def _seed_does_not_help_cluster(miss: float) -> Cluster:
    return cluster(
        [queue("a", queue("b", g={"memory": 50 * GIB}, m={"memory": 100 * GIB}, delay=300))],
        [alloc(f"v{i}", "root.a.b", {"memory": 20 * GIB}, 100.0 * i) for i in range(1, 6)],
        miss=miss,
    )


def test_seed_does_not_help_new_max_60_is_enforced() -> None:
    """Quota seed, "Preemption does not help": G 50, 5 x 20 used; new max 60 -> two victims."""
    c = _seed_does_not_help_cluster(0.0)
    answer = plan_quota_change(c, "root.a.b", {"memory": 60 * GIB}, now=0.0)
    assert (answer.status, answer.victims) == ("enforced", ("v5", "v4"))
    assert {"memory": 40 * GIB} == dict(answer.claimed) == dict(answer.preemptable)
    assert not any("guarantee" in a for a in answer.alerts)


@pytest.mark.parametrize(
    ("miss", "status"),
    [
        (3 / 11, "best_effort"),
        (0.3, "best_effort"),
        (1.0, "best_effort"),
        (0.27, "does_not_help"),
        (0.0, "does_not_help"),
    ],
)
def test_seed_does_not_help_new_max_45_depends_on_miss(miss: float, status: str) -> None:
    """Quota seed, "Preemption does not help" / engine.md 4.6: new max 45 -> target 55.

    Two victims bring usage to 60; the third would leave 40 < 50, so 40 is claimed
    and 15/55 = 3/11 is missed: best_effort if miss >= 3/11, else does_not_help,
    with a guarantee alert and a "new max below guaranteed" alert.
    """
    c = _seed_does_not_help_cluster(miss)
    answer = plan_quota_change(c, "root.a.b", {"memory": 45 * GIB}, now=0.0)
    assert status == answer.status
    assert answer.victims == ("v5", "v4")
    assert dict(answer.preemptable) == {"memory": 55 * GIB}
    assert dict(answer.claimed) == {"memory": 40 * GIB}
    assert dict(answer.missed) == {"memory": 15 * GIB}
    guarantee = [a for a in answer.alerts if a.startswith("the guarantee of root.a.b")]
    assert len(guarantee) == 1
    assert format_resource({"memory": 50 * GIB}) in guarantee[0]
    assert format_resource({"memory": 15 * GIB}) in guarantee[0]
    assert any(a.startswith("new max below guaranteed on root.a.b") for a in answer.alerts)
    outcome = "best effort" if status == "best_effort" else "preemption does not help"
    assert sum(a.startswith(outcome) for a in answer.alerts) == 1


def test_engine_md_parent_distribution_example() -> None:
    """Engine.md 4.5 example: target 30; b (no G, usage 40) and c (G 20, usage 40) get 20 and 10."""
    c = cluster(
        [queue("a", queue("b"), queue("c", g={"memory": 20}))],
        [alloc(f"b{i}", "root.a.b", {"memory": 10}, float(i)) for i in range(1, 5)]
        + [alloc(f"c{i}", "root.a.c", {"memory": 10}, float(i)) for i in range(1, 5)],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 50}, now=0.0)
    assert answer.shares["root.a"] == {"root.a.b": {"memory": 20}, "root.a.c": {"memory": 10}}
    assert answer.leaves["root.a.b"].preemptable == {"memory": 20}
    assert answer.leaves["root.a.c"].preemptable == {"memory": 10}
    assert answer.victims == ("b4", "b3", "c4")
    assert answer.status == "enforced"


# -- 4.1 when it applies ---------------------------------------------------------------


def _two_allocs(enabled: bool = True, delay: float | None = None) -> Cluster:
    return cluster(
        [queue("a", delay=delay)],
        [alloc("a1", "root.a", {"memory": 10}, 1.0), alloc("a2", "root.a", {"memory": 10}, 2.0)],
        enabled=enabled,
    )


def test_flag_off_is_not_needed_but_reports_target_and_alert() -> None:
    """4.1: the partition flag off -> not_needed, no victims, target still reported."""
    answer = plan_quota_change(_two_allocs(enabled=False), "root.a", {"memory": 5}, now=0.0)
    assert (answer.status, answer.victims, dict(answer.leaves)) == ("not_needed", (), {})
    assert dict(answer.preemptable) == {"memory": 15}
    assert dict(answer.claimed) == {"memory": 0}
    assert sum("disabled on the partition" in a for a in answer.alerts) == 1


@pytest.mark.parametrize("new_max", [None, {}])
def test_new_max_not_set_is_not_needed(new_max: dict[str, int] | None) -> None:
    """4.1: a missing or empty new max means "not set": nothing to enforce."""
    answer = plan_quota_change(_two_allocs(), "root.a", new_max, now=0.0)
    assert (answer.status, dict(answer.preemptable), answer.victims) == ("not_needed", {}, ())


def test_usage_within_new_max_is_not_needed() -> None:
    """4.1: equal usage is within the max; types the new max does not define are unlimited."""
    answer = plan_quota_change(_two_allocs(), "root.a", {"memory": 20, "vcore": 0}, now=0.0)
    assert (
        answer.status,
        dict(answer.preemptable),
        answer.victims,
        answer.alerts,
    ) == ("not_needed", {}, (), ())


def test_zero_in_new_max_forbids_the_type() -> None:
    """0.1: {"gpu": 0} as a max forbids GPUs, so used GPUs become the target."""
    c = cluster([queue("a")], [alloc("g", "root.a", {"gpu": 2, "memory": 1}, 1.0)])
    answer = plan_quota_change(c, "root.a", {"gpu": 0}, now=0.0)
    assert (dict(answer.preemptable), answer.victims) == ({"gpu": 2}, ("g",))


def test_unknown_queue_raises_scenario_error() -> None:
    """An unknown queue is bad input naming the request's queue."""
    with pytest.raises(ScenarioError) as err:
        plan_quota_change(_two_allocs(), "root.nope", {"memory": 1}, now=0.0)
    assert err.value.field == "request.queue"
    assert "root.nope" in err.value.message


def test_delay_is_inherited_and_start_at_is_now_plus_delay() -> None:
    """4.1 / 0.1: quota_preemption_delay comes from the nearest ancestor that sets it."""
    c = cluster([queue("p", queue("x"), delay=120)], [alloc("x1", "root.p.x", {"memory": 10}, 1.0)])
    answer = plan_quota_change(c, "root.p.x", {"memory": 5}, now=1000.0)
    assert (answer.delay, answer.start_at) == (120.0, 1120.0)
    assert not any("delay" in a for a in answer.alerts)


def test_delay_zero_plans_anyway_with_alert_and_no_start() -> None:
    """4.1: the plan is computed regardless of the delay; delay 0 -> start_at null + alert."""
    answer = plan_quota_change(_two_allocs(delay=0), "root.a", {"memory": 10}, now=1000.0)
    assert (
        answer.delay,
        answer.start_at,
        answer.status,
        answer.victims,
    ) == (0.0, None, "enforced", ("a2",))
    assert sum("YuniKorn never enforces a lowered max" in a for a in answer.alerts) == 1


def test_new_max_below_guaranteed_alert_names_the_types() -> None:
    """4.2: new_max[t] < G(Q)[t] adds one "new max below guaranteed" alert."""
    c = cluster(
        [queue("a", g={"memory": 30, "vcore": 1})],
        [alloc("a1", "root.a", {"memory": 40}, 1.0)],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 20, "vcore": 5}, now=0.0)
    below = [a for a in answer.alerts if a.startswith("new max below guaranteed")]
    assert len(below) == 1
    assert "{memory: 20}" in below[0]
    assert "{memory: 30}" in below[0]


# -- 4.3 candidates and order ----------------------------------------------------------


def test_candidates_must_use_a_target_type() -> None:
    """4.3: only allocations with a type of the target are candidates (match_any)."""
    c = cluster(
        [queue("a")],
        [alloc("cpu", "root.a", {"vcore": 50}, 9.0), alloc("mem", "root.a", {"memory": 50}, 1.0)],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 10}, now=0.0)
    assert answer.victims == ("mem",)


def test_required_node_and_preempted_are_never_victims() -> None:
    """4.3: daemon-set style (required_node) and already preempted allocations are skipped."""
    c = cluster(
        [queue("a")],
        [
            alloc("ds", "root.a", {"memory": 10}, 9.0, required_node=True),
            alloc("gone", "root.a", {"memory": 10}, 8.0, preempted=True),
            alloc("ok", "root.a", {"memory": 10}, 1.0),
        ],
    )
    # usage 20 (the preempted one does not count), new max 0: target 20
    answer = plan_quota_change(c, "root.a", {"memory": 0}, now=0.0)
    assert (dict(answer.preemptable), answer.victims) == ({"memory": 20}, ("ok",))
    assert answer.status == "does_not_help"


@pytest.mark.parametrize(
    ("first", "second", "rule"),
    [
        (
            alloc("n", "root.a", {"memory": 1}, 1.0, priority=9, allow_preemption=False),
            alloc("o", "root.a", {"memory": 1}, 9.0, originator=True),
            "non-originators before originators, whatever their priority or age",
        ),
        (
            alloc("low", "root.a", {"memory": 1}, 1.0, allow_preemption=False),
            alloc("high", "root.a", {"memory": 1}, 9.0, priority=1),
            "lower priority first, even opted-out and older",
        ),
        (
            alloc("in", "root.a", {"memory": 1}, 1.0),
            alloc("out", "root.a", {"memory": 1}, 9.0, allow_preemption=False),
            "opted-in before opted-out, even older",
        ),
        (
            alloc("young", "root.a", {"memory": 1}, 9.0),
            alloc("old", "root.a", {"memory": 1}, 1.0),
            "younger first",
        ),
        (
            alloc("k1", "root.a", {"memory": 1}, 5.0),
            alloc("k2", "root.a", {"memory": 1}, 5.0),
            "allocation key breaks ties",
        ),
    ],
)
def test_victim_order_rules(first: Allocation, second: Allocation, rule: str) -> None:
    """4.3: the seed's preference rules, one at a time; target 1 takes exactly the first."""
    assert quota_victim_key(first) < quota_victim_key(second), rule
    for allocations in ([first, second], [second, first]):
        c = cluster([queue("a")], allocations)
        answer = plan_quota_change(c, "root.a", {"memory": 1}, now=0.0)
        assert (first.key,) == answer.victims, rule


def test_fences_priority_offsets_and_preemption_policy_are_ignored() -> None:
    """4.3 / quota seed: preemption.policy and priority settings play no part."""
    props = {"preemption.policy": "disabled", "priority.policy": "fence", "priority.offset": "100"}
    c = cluster(
        [queue("p", queue("x", props={"preemption.policy": "fence"}), props=props)],
        [alloc("x1", "root.p.x", {"memory": 10}, 1.0)],
    )
    answer = plan_quota_change(c, "root.p", {"memory": 0}, now=0.0)
    assert (answer.status, answer.victims) == ("enforced", ("x1",))


def test_order_key_is_replaceable() -> None:
    """4.3 / 6: the cost function is one replaceable key; oldest-first picks other victims."""
    c = cluster(
        [queue("a")], [alloc(f"a{i}", "root.a", {"memory": 10}, float(i)) for i in (1, 2, 3)]
    )
    default = plan_quota_change(c, "root.a", {"memory": 20}, now=0.0)
    oldest = plan_quota_change(
        c, "root.a", {"memory": 20}, now=0.0, order_key=lambda a: (a.created, a.key)
    )
    assert (default.victims, oldest.victims) == (("a3",), ("a1",))


# -- 4.4 taking victims --------------------------------------------------------------


def test_stops_at_target_and_last_victim_may_overshoot() -> None:
    """4.4 / 8.2: take until reached; the last victim may overshoot (Go would skip it)."""
    c = cluster(
        [queue("a")],
        [
            alloc("five", "root.a", {"memory": 5}, 3.0),
            alloc("six", "root.a", {"memory": 6}, 2.0),
            alloc("nine", "root.a", {"memory": 9}, 1.0),
        ],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 10}, now=0.0)  # target 10
    assert (answer.victims, dict(answer.claimed)) == (("five", "six"), {"memory": 11})
    assert dict(answer.leaves["root.a"].claimed) == {"memory": 11}
    assert answer.status == "enforced"


def test_skips_victims_that_help_no_unmet_type() -> None:
    """4.4: once memory is met, a memory-only allocation is skipped while vcore is unmet."""
    c = cluster(
        [queue("a")],
        [
            alloc("m1", "root.a", {"memory": 10}, 4.0),
            alloc("m2", "root.a", {"memory": 10}, 3.0),
            alloc("v1", "root.a", {"vcore": 10}, 2.0),
            alloc("both", "root.a", {"memory": 10, "vcore": 10}, 1.0),
        ],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 20, "vcore": 10}, now=0.0)
    assert answer.victims == ("m1", "v1")
    assert dict(answer.claimed) == {"memory": 10, "vcore": 10}


def test_guarantee_floor_on_the_leaf() -> None:
    """4.4: a victim that would take the leaf below its guarantee is skipped, later ones tried."""
    c = cluster(
        [queue("a", g={"memory": 25})],
        [
            alloc("big", "root.a", {"memory": 20}, 3.0),
            alloc("small", "root.a", {"memory": 5}, 2.0),
            alloc("other", "root.a", {"memory": 5}, 1.0),
        ],
    )
    # usage 30, new max 0 -> target 30; big would leave 10 < 25; small leaves 25; other 20 < 25
    answer = plan_quota_change(c, "root.a", {"memory": 0}, now=0.0)
    assert (answer.victims, dict(answer.claimed)) == (("small",), {"memory": 5})
    assert sum(a.startswith("the guarantee of root.a ") for a in answer.alerts) == 1


def test_guarantee_floor_on_an_ancestor_above_the_changed_queue() -> None:
    """4.4: the floor covers every ancestor up to root, also above the changed queue."""
    c = cluster(
        [queue("a", queue("b"), g={"memory": 60})],
        [alloc(f"b{i}", "root.a.b", {"memory": 20}, float(i)) for i in range(1, 5)],
    )
    answer = plan_quota_change(c, "root.a.b", {"memory": 20}, now=0.0)
    assert (answer.victims, answer.status) == (("b4",), "does_not_help")
    assert any(a.startswith("the guarantee of root.a {memory: 60}") for a in answer.alerts)


def test_guarantee_floor_of_root() -> None:
    """4.4: up to root, even though YuniKorn forbids a root guarantee."""
    c = cluster(
        [queue("a")],
        [alloc("a1", "root.a", {"memory": 10}, 1.0), alloc("a2", "root.a", {"memory": 10}, 2.0)],
        root_g={"memory": 15},
    )
    answer = plan_quota_change(c, "root.a", {"memory": 0}, now=0.0)
    assert answer.victims == ()


def test_guarantee_floor_only_in_types_the_victim_uses() -> None:
    """4.4: the floor applies in the victim's types; a queue below G in vcore still gives memory."""
    c = cluster(
        [queue("a", g={"vcore": 10})],
        [
            alloc("mix", "root.a", {"memory": 10, "vcore": 5}, 2.0),
            alloc("mem", "root.a", {"memory": 10}, 1.0),
        ],
    )
    # vcore usage 5 is already below G 10: "mix" is stopped, "mem" is free to go
    answer = plan_quota_change(c, "root.a", {"memory": 10}, now=0.0)
    assert answer.victims == ("mem",)
    assert answer.status == "enforced"


def test_leaf_without_candidates_for_a_type_alerts() -> None:
    """4.6: a leaf with no candidate for a target type gets one alert naming the type."""
    c = cluster(
        [queue("a")],
        [
            alloc("m", "root.a", {"memory": 10}, 1.0),
            alloc("ds", "root.a", {"vcore": 10}, 2.0, required_node=True),
        ],
    )
    answer = plan_quota_change(c, "root.a", {"memory": 0, "vcore": 0}, now=0.0)
    assert answer.victims == ("m",)
    no_cands = [a for a in answer.alerts if a.startswith("leaf root.a has no allocation")]
    assert len(no_cands) == 1
    assert "vcore" in no_cands[0]
    assert "memory" not in no_cands[0].split("(")[0]


# -- 4.5 parent distribution -----------------------------------------------------------


def test_releasable_definition() -> None:
    """4.5 step 2: U - G where G defines the type (if > 0), all of U where it does not."""
    assert releasable({"memory": 40, "vcore": 8}, {"memory": 20}) == {"memory": 20, "vcore": 8}
    assert releasable({"memory": 20}, {"memory": 20}) == {}
    assert releasable({"gpu": 1}, None) == {"gpu": 1}
    assert releasable({}, {"memory": 1}) == {}


def test_split_target_largest_remainder_and_ties_by_path() -> None:
    """4.5 step 3: exact floors, leftover units to the largest remainders, ties by path."""
    shares, none = split_target(
        {"vcore": 7}, {"x": {"vcore": 5}, "y": {"vcore": 3}, "z": {"vcore": 2}}
    )
    assert (shares, none) == ({"x": {"vcore": 4}, "y": {"vcore": 2}, "z": {"vcore": 1}}, [])
    shares, _ = split_target(
        {"vcore": 2}, {"c": {"vcore": 1}, "a": {"vcore": 1}, "b": {"vcore": 1}}
    )
    assert shares == {"a": {"vcore": 1}, "b": {"vcore": 1}}
    shares, none = split_target({"vcore": 3, "gpu": 1}, {"a": {"vcore": 1}})
    assert (shares, none) == ({"a": {"vcore": 3}}, ["gpu"])


def test_split_target_is_exact_for_huge_quantities() -> None:
    """4.5: exact integer arithmetic, no float rounding near 2**63."""
    big = 2**63 - 1
    shares, _ = split_target({"memory": big}, {"a": {"memory": big}, "b": {"memory": big - 1}})
    assert big == shares["a"]["memory"] + shares["b"]["memory"]
    assert shares["a"]["memory"] - shares["b"]["memory"] in (0, 1)


def test_parent_skips_empty_and_running_children() -> None:
    """4.5 step 1: children with empty usage and children running a quota preemption get nothing."""
    c = cluster(
        [queue("p", queue("empty"), queue("busy"), queue("run", queue("deep")), queue("ok"))],
        [
            alloc("b1", "root.p.busy", {"memory": 10}, 1.0),
            alloc("r1", "root.p.run.deep", {"memory": 10}, 1.0),
            alloc("o1", "root.p.ok", {"memory": 10}, 1.0),
        ],
    )
    answer = plan_quota_change(
        c, "root.p", {"memory": 10}, now=0.0, running=frozenset({"root.p.run"})
    )
    assert answer.shares["root.p"] == {"root.p.busy": {"memory": 10}, "root.p.ok": {"memory": 10}}
    assert {"b1", "o1"} == set(answer.victims)
    assert "root.p.run.deep" not in answer.leaves
    # only the grandchild runs: root.p.run gets its share (ties by path: busy 7, ok 7,
    # run 6) but has no child left to give it to
    deeper = plan_quota_change(
        c, "root.p", {"memory": 10}, now=0.0, running=frozenset({"root.p.run.deep"})
    )
    assert deeper.shares["root.p"]["root.p.run"] == {"memory": 6}
    assert sum(a.startswith("no child of root.p.run can release") for a in deeper.alerts) == 1
    assert "r1" not in deeper.victims


def test_running_grandchild_is_skipped_inside_its_parent() -> None:
    """4.5 step 1 at every level: a running grandchild leaves its share to its siblings."""
    c = cluster(
        [queue("p", queue("q", queue("run"), queue("idle")))],
        [
            alloc("r1", "root.p.q.run", {"memory": 10}, 1.0),
            alloc("i1", "root.p.q.idle", {"memory": 10}, 1.0),
            alloc("i2", "root.p.q.idle", {"memory": 10}, 2.0),
        ],
    )
    answer = plan_quota_change(
        c, "root.p", {"memory": 10}, now=0.0, running=frozenset({"root.p.q.run"})
    )
    assert answer.shares["root.p.q"] == {"root.p.q.idle": {"memory": 20}}
    assert answer.victims == ("i2", "i1")


def test_no_child_can_release_a_type_alerts_once() -> None:
    """4.5 step 3: total 0 -> no child gets t, one alert naming the parent and the type."""
    c = cluster(
        [queue("p", queue("x", g={"memory": 50}), queue("y", g={"memory": 50}))],
        [
            alloc("x1", "root.p.x", {"memory": 40}, 1.0),
            alloc("y1", "root.p.y", {"memory": 40}, 1.0),
        ],
    )
    answer = plan_quota_change(c, "root.p", {"memory": 60}, now=0.0)
    assert (answer.status, answer.victims, dict(answer.leaves)) == ("does_not_help", (), {})
    assert sum(a.startswith("no child of root.p can release memory") for a in answer.alerts) == 1


def test_leaves_in_path_order_share_one_working_usage() -> None:
    """4.5 step 4: path order, and a shared ancestor's floor sees earlier leaves' victims."""
    c = cluster(
        [queue("p", queue("y"), queue("x"), g={"memory": 50})],
        [
            alloc("x1", "root.p.x", {"memory": 20}, 1.0),
            alloc("x2", "root.p.x", {"memory": 20}, 2.0),
            alloc("y1", "root.p.y", {"memory": 20}, 1.0),
            alloc("y2", "root.p.y", {"memory": 20}, 2.0),
        ],
    )
    answer = plan_quota_change(c, "root.p", {"memory": 20}, now=0.0)
    assert list(answer.leaves) == ["root.p.x", "root.p.y"]
    assert answer.victims == ("x2",)
    assert answer.leaves["root.p.y"].victims == ()


def test_multilevel_distribution_recurses() -> None:
    """4.5 step 4: a parent child recurses with its share down to its leaves."""
    c = cluster(
        [
            queue(
                "org",
                queue("team1", queue("svc1"), queue("svc2", g={"memory": 10}), g={"memory": 30}),
                queue("team2"),
            )
        ],
        [alloc(f"s1{i}", "root.org.team1.svc1", {"memory": 10}, float(i)) for i in (1, 2, 3)]
        + [alloc(f"s2{i}", "root.org.team1.svc2", {"memory": 10}, float(i)) for i in (1, 2)]
        + [alloc(f"t2{i}", "root.org.team2", {"memory": 10}, float(i)) for i in (1, 2, 3)],
    )
    answer = plan_quota_change(c, "root.org", {"memory": 50}, now=0.0)
    assert answer.shares["root.org"] == {
        "root.org.team1": {"memory": 12},
        "root.org.team2": {"memory": 18},
    }
    assert answer.shares["root.org.team1"] == {
        "root.org.team1.svc1": {"memory": 9},
        "root.org.team1.svc2": {"memory": 3},
    }
    assert answer.victims == ("s13", "s22", "t23", "t22")


# -- 4.6 answer ------------------------------------------------------------------------


def test_claimed_counts_victims_in_every_target_type() -> None:
    """4.6: a victim counts in every target type it frees, also one outside its leaf's share."""
    c = cluster(
        [queue("p", queue("x"), queue("y"))],
        [
            alloc("x1", "root.p.x", {"memory": 10, "vcore": 10}, 1.0),
            alloc("x2", "root.p.x", {"memory": 10, "vcore": 10}, 2.0),
            alloc("y1", "root.p.y", {"memory": 10, "vcore": 10}, 1.0),
            alloc("y2", "root.p.y", {"memory": 10, "vcore": 10}, 2.0),
        ],
    )
    # target {memory 10, vcore 1}: vcore shares 0.5/0.5 -> the tie gives x the unit
    answer = plan_quota_change(c, "root.p", {"memory": 30, "vcore": 39}, now=0.0)
    assert answer.leaves["root.p.y"].preemptable == {"memory": 5}
    assert answer.leaves["root.p.y"].claimed == {"memory": 10}
    assert dict(answer.claimed) == {"memory": 20, "vcore": 20}
    assert answer.victims == ("x2", "y2")


def test_answer_dict_has_the_contract_keys_and_round_trips() -> None:
    """Scenario-format 2: exactly the contract's keys plus the documented extras."""
    c = cluster(
        [queue("p", queue("x"), queue("y"))],
        [
            alloc("x1", "root.p.x", {"memory": 10}, 1.0),
            alloc("y1", "root.p.y", {"memory": 10}, 1.0),
        ],
    )
    answer = plan_quota_change(c, "root.p", {"memory": 5}, now=7.0)
    data = answer.to_dict()
    assert set(data) == CONTRACT_KEYS | EXTRA_KEYS
    assert {"preemptable", "claimed", "victims"} == set(data["leaves"]["root.p.x"])  # type: ignore[index]
    assert answer == QuotaAnswer.from_dict(data)


def test_from_dict_rejects_bad_data() -> None:
    """A stored answer that is not an answer raises ScenarioError naming the field."""
    good = plan_quota_change(_two_allocs(), "root.a", {"memory": 5}, now=0.0).to_dict()
    for field, value in [("status", "done"), ("victims", "a1"), ("claimed", {"memory": 1.5})]:
        with pytest.raises(ScenarioError) as err:
            QuotaAnswer.from_dict({**good, field: value})
        assert err.value.field.startswith(field)
    with pytest.raises(ScenarioError):
        QuotaAnswer.from_dict({k: v for k, v in good.items() if k != "queue"})


def test_plan_does_not_touch_the_snapshot() -> None:
    """Public functions never mutate inputs: a caller's snapshot keeps its usage."""
    c = _two_allocs()
    snap = build_snapshot(c)
    before = [dict(u) for u in snap.usage_by_index]
    answer = plan_quota_change(c, "root.a", {"memory": 0}, now=0.0, snapshot=snap)
    assert answer.victims == ("a2", "a1")
    assert before == [dict(u) for u in snap.usage_by_index]


def test_very_deep_trees_do_not_hit_the_recursion_limit() -> None:
    """The distribution walks down iteratively: a 3,000-level chain is planned like any other."""
    deep = queue("leaf")
    for i in range(3000):
        deep = queue(f"q{i}", deep)
    path = "root." + ".".join(f"q{i}" for i in reversed(range(3000))) + ".leaf"
    c = cluster([deep], [alloc("a", path, {"memory": 5}, 1.0)])
    answer = plan_quota_change(c, "root", {"memory": 1}, now=0.0)
    assert (answer.status, answer.victims, len(answer.shares)) == ("enforced", ("a",), 3001)
