"""Property tests of quota-decrease preemption: engine.md section 7, invariants 8-12."""

from __future__ import annotations

import json
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import Doc, permute, queue_paths, quota_scenario
from support.profiles import examples

from engine import evaluate, parse_scenario
from engine.explain import explain_victims
from engine.model import Allocation, QuotaChangeRequest, Scenario
from engine.queues import Snapshot, build_snapshot
from engine.quota import QuotaAnswer, plan_quota_change, quota_victim_key, releasable
from engine.timers import TimerState, due_queues

PROPERTY = settings(max_examples=examples(150), deadline=None)


def _plan(doc: Doc, running: frozenset[str] = frozenset()) -> tuple[Scenario, QuotaAnswer]:
    scenario = parse_scenario(doc)
    request = scenario.request
    assert isinstance(request, QuotaChangeRequest)
    answer = plan_quota_change(
        scenario.cluster, request.queue, request.new_max, scenario.now, running=running
    )
    return scenario, answer


def _in_subtree(path: str, queue: str) -> bool:
    return path == queue or path.startswith(queue + ".")


def _by_key(scenario: Scenario) -> dict[str, Allocation]:
    return {a.key: a for a in scenario.cluster.allocations}


def _usage_after(snap: Snapshot, victims: list[Allocation]) -> list[dict[str, int]]:
    usage = [dict(u) for u in snap.usage_by_index]
    for v in victims:
        for x in snap.chain[snap.index[v.queue]]:
            for t, q in v.resources.items():
                usage[x][t] = usage[x].get(t, 0) - q
    return usage


@PROPERTY
@given(quota_scenario(), st.data())
def test_no_queue_goes_below_its_guarantee_in_a_used_type(doc: Doc, data: st.DataObject) -> None:
    """Invariant 8: changed queue, ancestors, descendants keep their guarantee in victim types."""
    scenario, answer = _plan(doc, _draw_running(doc, data))
    snap = build_snapshot(scenario.cluster)
    allocs = _by_key(scenario)
    victims = [allocs[k] for k in answer.victims]
    after = _usage_after(snap, victims)
    for i, g in enumerate(snap.guaranteed_by_index):
        if not g:
            continue
        path = snap.paths[i]
        used_types = {
            t for v in victims if _in_subtree(v.queue, path) for t, q in v.resources.items() if q
        }
        for t in used_types & set(g):
            assert after[i].get(t, 0) >= g[t], (path, t)


@PROPERTY
@given(quota_scenario(), st.data())
def test_victims_are_eligible_and_in_the_subtree(doc: Doc, data: st.DataObject) -> None:
    """Invariant 9: in the subtree, distinct, not bound/preempted, share a type with the leaf share.

    Queues reported as running (and everything below them) never give victims.
    """
    running = _draw_running(doc, data)
    scenario, answer = _plan(doc, running)
    request = scenario.request
    assert isinstance(request, QuotaChangeRequest)
    allocs = _by_key(scenario)
    assert len(set(answer.victims)) == len(answer.victims)
    assert list(answer.victims) == [k for leaf in answer.leaves.values() for k in leaf.victims]
    assert list(answer.leaves) == sorted(answer.leaves)
    for leaf_path, leaf in answer.leaves.items():
        assert _in_subtree(leaf_path, request.queue)
        if leaf_path != request.queue:
            assert not any(_in_subtree(leaf_path, r) for r in running)
        for key in leaf.victims:
            v = allocs[key]
            assert v.queue == leaf_path
            assert not v.required_node
            assert not v.preempted
            assert set(v.resources) & set(leaf.preemptable)


@PROPERTY
@given(quota_scenario())
def test_each_victim_reduced_an_unmet_type_in_the_seed_order(doc: Doc) -> None:
    """Invariant 10: each victim helped an unmet type of its leaf; leaf victims in 4.3 order."""
    scenario, answer = _plan(doc)
    allocs = _by_key(scenario)
    for leaf in answer.leaves.values():
        need = dict(leaf.preemptable)
        taken = [allocs[k] for k in leaf.victims]
        for v in taken:
            assert any(need[t] > 0 and v.resources.get(t, 0) > 0 for t in need)
            for t in need:
                need[t] -= v.resources.get(t, 0)
        assert {t: leaf.preemptable[t] - n for t, n in need.items()} == dict(leaf.claimed)
        assert taken == sorted(taken, key=quota_victim_key)


@PROPERTY
@given(quota_scenario())
def test_status_matches_claimed_target_and_miss(doc: Doc) -> None:
    """Invariant 11: status from claimed vs preemptable vs miss; flag off / fits => not_needed."""
    scenario, answer = _plan(doc)
    request = scenario.request
    assert isinstance(request, QuotaChangeRequest)
    snap = build_snapshot(scenario.cluster)
    usage = snap.usage(request.queue)
    limit = request.new_max or {}
    target = {t: usage.get(t, 0) - m for t, m in limit.items() if usage.get(t, 0) > m}
    assert dict(answer.preemptable) == target
    if not scenario.cluster.partition.quota_preemption_enabled or not target:
        assert answer.status == "not_needed"
        assert answer.victims == ()
        assert dict(answer.leaves) == {}
        return
    allocs = _by_key(scenario)
    claimed = {t: sum(allocs[k].resources.get(t, 0) for k in answer.victims) for t in target}
    assert dict(answer.claimed) == claimed
    short = [max(0, target[t] - claimed[t]) / target[t] for t in target]
    miss = scenario.cluster.partition.miss
    if all(s == 0 for s in short):
        assert answer.status == "enforced"
    elif all(s <= miss for s in short):
        assert answer.status == "best_effort"
    else:
        assert answer.status == "does_not_help"
    assert {t: target[t] - claimed[t] for t in target if claimed[t] < target[t]} == dict(
        answer.missed
    )


@PROPERTY
@given(quota_scenario())
def test_first_level_shares_sum_to_the_target(doc: Doc) -> None:
    """Invariant 12: for a parent, shares sum exactly to the target in every releasable type."""
    scenario, answer = _plan(doc)
    request = scenario.request
    assert isinstance(request, QuotaChangeRequest)
    snap = build_snapshot(scenario.cluster)
    info = snap.queue(request.queue)
    if info.is_leaf or answer.status == "not_needed":
        return
    kids = [c for c in info.children if snap.usage(c)]
    rel = {c: releasable(snap.usage(c), snap.guaranteed(c)) for c in kids}
    shares = answer.shares.get(request.queue, {})
    for t, want in answer.preemptable.items():
        if any(r.get(t, 0) > 0 for r in rel.values()):
            assert sum(s.get(t, 0) for s in shares.values()) == want
        else:
            assert all(t not in s for s in shares.values())
            assert any(f"no child of {request.queue} can release" in a for a in answer.alerts)


@PROPERTY
@given(quota_scenario(), st.data())
def test_answers_do_not_depend_on_input_order(doc: Doc, data: st.DataObject) -> None:
    """Invariant 6 for quota: permuting allocations, nodes and children changes nothing."""
    first = evaluate(parse_scenario(doc)).to_dict()
    again = evaluate(parse_scenario(permute(doc, data.draw))).to_dict()  # type: ignore[arg-type]  # DataObject.draw is a DrawFn at run time
    assert first == again


@PROPERTY
@given(quota_scenario())
def test_answer_round_trips_through_json(doc: Doc) -> None:
    """to_dict -> JSON -> from_dict gives the same answer."""
    _, answer = _plan(doc)
    data = json.loads(json.dumps(answer.to_dict()))
    assert QuotaAnswer.from_dict(data) == answer
    assert QuotaAnswer.from_dict(data).to_dict() == answer.to_dict()


@PROPERTY
@given(quota_scenario())
def test_plan_never_takes_what_the_explanation_excludes(doc: Doc) -> None:
    """One order, one floor: victims are explained candidates, in the explained order."""
    scenario, answer = _plan(doc)
    request = scenario.request
    assert isinstance(request, QuotaChangeRequest)
    exp = explain_victims(scenario.cluster, request.queue, answer.preemptable)
    rank = {(c.queue, c.key): c.rank for c in exp.candidates}
    excluded = {e.key for e in exp.exclusions if e.quota_excluded}
    for leaf_path, leaf in answer.leaves.items():
        ranks = [rank[(leaf_path, k)] for k in leaf.victims]
        assert ranks == sorted(ranks)
        assert not excluded & set(leaf.victims)


def _draw_running(doc: Doc, data: st.DataObject) -> frozenset[str]:
    """Up to two queues strictly below the changed one, reported as running."""
    queue = doc["request"]["queue"]
    below = [p for p in queue_paths(doc["queues"]) if p.startswith(queue + ".")]
    if not below:
        return frozenset()
    return frozenset(data.draw(st.sets(st.sampled_from(below), max_size=2)))


@st.composite
def _timer_states(draw: st.DrawFn) -> dict[str, TimerState]:
    names = ["root", "root.a", "root.a.b", "root.a.b.c", "root.ab", "root.ab.x", "root.c"]
    out: dict[str, TimerState] = {}
    for name in names:
        kind = draw(st.sampled_from(["idle", "waiting", "running", "absent"]))
        if kind == "waiting":
            out[name] = TimerState.waiting(float(draw(st.integers(0, 10))))
        elif kind == "running":
            out[name] = TimerState.running(0.0, {"memory": 1})
        elif kind == "idle":
            out[name] = TimerState.idle()
    return out


@PROPERTY
@given(_timer_states(), st.integers(0, 10))
def test_due_queues_invariants(states: Mapping[str, TimerState], now: int) -> None:
    """5: exactly the due queues without a running ancestor, deepest first, then by path."""
    due = due_queues(states, float(now))
    running = {p for p, s in states.items() if s.is_running}
    expected = {
        p
        for p, s in states.items()
        if s.is_waiting
        and s.deadline is not None
        and s.deadline <= now
        and not any(p.startswith(r + ".") for r in running)
    }
    assert set(due) == expected
    assert due == sorted(due, key=lambda p: (-p.count("."), p))
