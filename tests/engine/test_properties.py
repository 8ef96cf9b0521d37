"""Property-based tests: the invariants of engine.md section 7 (1-7) and resource algebra.

The "no victim is unnecessary" part of invariant 4 is checked with
:func:`_blocked_by_spec`, written here from the text of engine.md 3.11 over the
scenario's own dataclasses, not with the engine's trimming code.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import strategies as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from engine import evaluate, parse_scenario, scenario_to_dict
from engine import resources as res
from engine.answers import PreemptAnswer, RoundAnswer
from engine.model import (
    Allocation,
    Ask,
    Cluster,
    PreemptRequest,
    QueueConfig,
    RoundRequest,
    Scenario,
)
from engine.preempt import preempt
from engine.queues import build_snapshot
from engine.rounds import run_round

# whole scenarios are costly to generate; 100 examples each keeps the suite fast
FAST = settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
ALGEBRA = settings(max_examples=examples(200), deadline=None)


def _preempt_request(s: Scenario) -> PreemptRequest:
    assert isinstance(s.request, PreemptRequest)
    return s.request


def _adjusted_priority_ok(s: Scenario, victim: Allocation, fence: str) -> bool:
    """engine.md 7.3: the victim's priority is within the adjusted ask priority, or it is fenced."""
    snap = build_snapshot(s.cluster)
    ask = _preempt_request(s).ask
    ask_chain = snap.ancestors(ask.queue, include_self=True)  # ask queue ... root
    prio: dict[str, int] = {}
    p = ask.priority
    for path in ask_chain:
        info = snap.queue(path)
        p = info.priority_offset if info.priority_fence else p + info.priority_offset
        prio[path] = p
        if path == fence:
            break
    down = [q for q in reversed(snap.ancestors(victim.queue, include_self=True))]
    below = down[down.index(fence) + 1 :]
    p = prio[fence]
    for path in below:
        info = snap.queue(path)
        if path in prio:
            p = prio[path]
        elif info.priority_fence:
            # fenced: any priority; a subtree with a larger offset is skipped entirely
            return info.priority_offset <= p
        else:
            p -= info.priority_offset
    return victim.priority <= p


def _parents(root: QueueConfig) -> dict[str, tuple[QueueConfig, str | None]]:
    """Every queue path with its configuration and its parent's path (None for root)."""
    out: dict[str, tuple[QueueConfig, str | None]] = {}
    stack: list[tuple[QueueConfig, str, str | None]] = [(root, root.name, None)]
    while stack:
        cfg, path, parent = stack.pop()
        out[path] = (cfg, parent)
        stack.extend((c, f"{path}.{c.name}", path) for c in cfg.children)
    return out


def _blocked_by_spec(cluster: Cluster, ask: Ask, node_id: str, sel: list[Allocation]) -> str | None:
    """engine.md 3.11 ``blocked(sel)`` read off the spec: a reason, or None when the ask runs.

    (a) the node had no room and ``fit_in(avail0 + sum(sel), ask)`` is false; (b) some queue
    from the ask queue to root with a max (root: its own max, else the sum of every node's
    capacity) has, in a type of both the ask and the max, ``U - sum(sel under it) + ask > max``,
    where U leaves out allocations already being preempted.
    """
    queues = _parents(cluster.root)

    def path_up(path: str) -> list[str]:
        out = []
        cur: str | None = path
        while cur is not None:
            out.append(cur)
            cur = queues[cur][1]
        return out

    node = next(n for n in cluster.nodes if n.id == node_id)
    avail0 = dict(node.capacity)
    for a in cluster.allocations:
        if a.node == node_id:
            for t, q in a.resources.items():
                avail0[t] = avail0.get(t, 0) - q
    need = {t: q for t, q in ask.resources.items() if q > 0}
    if any(avail0.get(t, 0) < q for t, q in need.items()):  # the node had no room
        free = dict(avail0)
        for v in sel:
            for t, q in v.resources.items():
                free[t] = free.get(t, 0) + q
        if any(free.get(t, 0) < q for t, q in need.items()):
            return "node"
    for path in path_up(ask.queue):
        cfg, parent = queues[path]
        limit: dict[str, int] | None = dict(cfg.max) if cfg.max else None
        if limit is None and parent is None:
            capacity: dict[str, int] = {}
            for n in cluster.nodes:
                for t, q in n.capacity.items():
                    capacity[t] = capacity.get(t, 0) + q
            limit = capacity or None
        if limit is None:
            continue
        after = dict(ask.resources)
        for a in cluster.allocations:
            if not a.preempted and path in path_up(a.queue):
                for t, q in a.resources.items():
                    after[t] = after.get(t, 0) + q
        for v in sel:
            if path in path_up(v.queue):
                for t, q in v.resources.items():
                    after[t] = after.get(t, 0) - q
        if any(t in limit and after.get(t, 0) > limit[t] for t in ask.resources):
            return path
    return None


def _check_victims_needed(cluster: Cluster, ask: Ask, answer: PreemptAnswer) -> None:
    """Invariant 4's closing clause: the victims let the ask run, one fewer would not."""
    by_key = {a.key: a for a in cluster.allocations}
    victims = [by_key[k] for k in answer.victims]
    assert answer.node is not None
    assert _blocked_by_spec(cluster, ask, answer.node, victims) is None
    assert _blocked_by_spec(cluster, ask, answer.node, victims[:-1]) is not None, (
        f"{answer.victims[-1]} is not needed"
    )


def _check_preempt_invariants(s: Scenario, answer: PreemptAnswer) -> None:
    cluster = s.cluster
    ask = _preempt_request(s).ask
    snap = build_snapshot(cluster)
    by_key = {a.key: a for a in cluster.allocations}
    # 2: the fence is the ask queue or one of its ancestors
    assert answer.fence in snap.ancestors(ask.queue, include_self=True)
    # 5: outcomes
    if answer.status != "preempted":
        assert answer.victims == ()
    if answer.status == "not_possible":
        assert answer.reason
    if answer.status == "fits":
        node = next(n for n in cluster.nodes if n.id == answer.node)
        load = res.total(a.resources for a in cluster.allocations if a.node == node.id)
        assert node.schedulable
        assert res.fit_in(res.sub(node.capacity, load), ask.resources)
    if answer.status != "preempted":
        return
    # 1: distinct, existing, eligible victims inside the fence
    assert answer.victims
    assert len(set(answer.victims)) == len(answer.victims)
    fence_tree = set(snap.subtree(answer.fence))
    victims = [by_key[k] for k in answer.victims]
    for v in victims:
        assert not v.preempted
        assert not v.required_node
        assert v.queue != ask.queue
        assert snap.queue(v.queue).preemption_policy != "disabled"
        assert v.queue in fence_tree
        assert res.match_any(ask.resources, v.resources)
        # 3: priorities
        assert _adjusted_priority_ok(s, v, answer.fence)
    # 4: the node can hold the ask, and the queues stay within max
    node = next(n for n in cluster.nodes if n.id == answer.node)
    assert node.schedulable
    assert res.fit_in(node.capacity, ask.resources)
    load = res.total(a.resources for a in cluster.allocations if a.node == node.id)
    avail0 = res.sub(node.capacity, load)
    if not res.fit_in(avail0, ask.resources):
        assert all(v.node == node.id for v in victims)
        freed = res.total(v.resources for v in victims)
        assert res.fit_in(res.add(avail0, freed), ask.resources)
    for path in snap.ancestors(ask.queue, include_self=True):
        limit = snap.max(path)
        if limit is None:
            continue
        under = set(snap.subtree(path))
        freed = res.total(v.resources for v in victims if v.queue in under)
        after = res.add(res.sub(snap.usage(path), freed), ask.resources)
        for t in ask.resources:
            if t in limit:
                assert after.get(t, 0) <= limit[t], (path, t)
    # 4: no victim is unnecessary
    _check_victims_needed(cluster, ask, answer)


@FAST
@given(st.one_of(gen.any_preempt(), gen.trimming_preempt_scenario()))
def test_preempt_invariants(doc: dict[str, Any]) -> None:
    """Invariants 1-5 of engine.md 7 hold for every preempt answer (4 in full)."""
    s = parse_scenario(doc)
    ask = _preempt_request(s).ask
    answer = preempt(s.cluster, ask, s.now)
    _check_preempt_invariants(s, answer)


@FAST
@given(gen.any_preempt())
def test_pruned_node_search_agrees_with_plain_algorithm(doc: dict[str, Any]) -> None:
    """Pruning nodes that cannot beat the best one never changes the answer."""
    s = parse_scenario(doc)
    ask = _preempt_request(s).ask
    assert preempt(s.cluster, ask, s.now, prune=True) == preempt(s.cluster, ask, s.now, prune=False)


@FAST
@given(gen.any_round())
def test_pruned_round_agrees_with_plain_algorithm(doc: dict[str, Any]) -> None:
    """Rounds are unchanged by pruning as well."""
    s = parse_scenario(doc)
    assert isinstance(s.request, RoundRequest)
    r = s.request
    assert run_round(s.cluster, r.asks, r.max_preempted, s.now, prune=True) == run_round(
        s.cluster, r.asks, r.max_preempted, s.now, prune=False
    )


@st.composite
def _doc_and_permutation(
    draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    doc = draw(base)
    return doc, gen.permute(doc, draw)


@FAST
@given(
    st.one_of(
        _doc_and_permutation(gen.any_preempt()),
        _doc_and_permutation(gen.any_round()),
        _doc_and_permutation(gen.resources_scenario()),
    )
)
def test_answers_do_not_depend_on_input_order(pair: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """Invariant 6: permuting nodes, allocations, children and asks changes nothing."""
    doc, permuted = pair
    assert evaluate(parse_scenario(doc)).to_dict() == evaluate(parse_scenario(permuted)).to_dict()


@FAST
@given(st.one_of(gen.any_preempt(), gen.any_round(), gen.resources_scenario()))
def test_json_round_trips(doc: dict[str, Any]) -> None:
    """Invariant 6: scenarios and answers survive a JSON round trip."""
    s = parse_scenario(doc)
    again = parse_scenario(json.loads(json.dumps(scenario_to_dict(s))))
    assert again == s
    answer = evaluate(s)
    data = json.loads(json.dumps(answer.to_dict()))
    back = type(answer).from_dict(data)  # type: ignore[attr-defined]  # every answer class has it
    assert back == answer


@FAST
@given(gen.any_round())
def test_round_invariants(doc: dict[str, Any]) -> None:
    """Invariant 7: no allocation is a victim twice and the pace cap holds."""
    s = parse_scenario(doc)
    assert isinstance(s.request, RoundRequest)
    r = s.request
    answer = run_round(s.cluster, r.asks, r.max_preempted, s.now)
    assert isinstance(answer, RoundAnswer)
    all_victims = [v for result in answer.results for v in result.victims]
    assert len(all_victims) == len(set(all_victims))
    by_key = {a.key: a for a in s.cluster.allocations}
    total = res.total(by_key[v].resources for v in all_victims)
    assert {t: q for t, q in total.items() if q} == dict(answer.preempted_total)
    if r.max_preempted is not None:
        for t, limit in r.max_preempted.items():
            assert total.get(t, 0) <= limit
    else:
        assert not answer.capped
    assert sorted(x.ask for x in answer.results) == sorted(a.key for a in r.asks)
    for result in answer.results:
        if result.status == "not_possible":
            assert result.reason
            assert not result.victims


@FAST
@given(st.one_of(gen.any_round(), gen.trimming_round_scenario()))
def test_round_victims_are_all_needed(doc: dict[str, Any]) -> None:
    """Invariant 4 for every ask of a round, against the state the asks before it left.

    That state is rebuilt as a cluster: earlier victims are preempted (still on their
    node) and every placed ask is an allocation of its queue on its node.
    """
    s = parse_scenario(doc)
    assert isinstance(s.request, RoundRequest)
    r = s.request
    answer = run_round(s.cluster, r.asks, r.max_preempted, s.now)
    asks = {a.key: a for a in r.asks}
    cluster = s.cluster
    for result in answer.results:
        ask = asks[result.ask]
        if result.status == "preempted":
            assert result.victims
            _check_victims_needed(cluster, ask, result)
        if result.status == "not_possible" or result.node is None:
            continue
        gone = set(result.victims)
        placed = Allocation(
            f"placed {ask.key}", ask.queue, result.node, ask.resources, required_node=True
        )
        cluster = dataclasses.replace(
            cluster,
            allocations=(
                *(
                    dataclasses.replace(a, preempted=True) if a.key in gone else a
                    for a in cluster.allocations
                ),
                placed,
            ),
        )


@FAST
@given(gen.any_preempt())
def test_first_ask_of_a_round_is_a_plain_preempt(doc: dict[str, Any]) -> None:
    """A one-ask round without a cap answers exactly like ``preempt``."""
    s = parse_scenario(doc)
    ask = _preempt_request(s).ask
    single = preempt(s.cluster, ask, s.now)
    rnd = run_round(s.cluster, (ask,), None, s.now)
    assert rnd.results == (single,)


@FAST
@given(gen.cluster_doc())
def test_usage_is_never_negative_and_sums_add_up(doc: dict[str, Any]) -> None:
    """U = A - P per queue, never negative, and a parent's A is the sum of its children's."""
    doc["request"] = {"type": "resources", "queue": "root"}
    s = parse_scenario(doc)
    snap = build_snapshot(s.cluster)
    for q in snap:
        assert all(v > 0 for v in q.usage.values())
        assert res.equals(res.sub(q.allocated, q.preempting), q.usage)
        if q.children:
            own = res.total(a.resources for a in q.allocations)
            kids = res.total(snap.allocated(c) for c in q.children)
            assert res.equals(res.add(own, kids), q.allocated)


# -- resource algebra ---------------------------------------------------------------

maybe_resource = st.one_of(st.none(), gen.resource(max_value=10))
signed = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(gen.TYPES), st.integers(-10, 10), max_size=3)
)


@ALGEBRA
@given(signed, gen.resource(max_value=10))
def test_fit_in_implies_fit_undef(big: dict[str, int] | None, small: dict[str, int]) -> None:
    """Missing-is-zero fitting is stricter than missing-is-unlimited fitting."""
    if res.fit_in(big, small):
        assert res.fit_undef(big, small)


@ALGEBRA
@given(signed, signed)
def test_cmin_is_symmetric(a: dict[str, int] | None, b: dict[str, int] | None) -> None:
    """cmin(a, b) == cmin(b, a), including None handling."""
    assert res.cmin(a, b) == res.cmin(b, a)


@ALGEBRA
@given(signed, signed)
def test_sub_existing_keeps_exactly_the_base_types(
    base: dict[str, int] | None, d: dict[str, int] | None
) -> None:
    """sub_existing never adds or drops a type of its base."""
    out = res.sub_existing(base, d)
    if base is None:
        assert out is None
    else:
        assert out is not None
        assert set(out) == set(base)


@ALGEBRA
@given(signed, signed)
def test_add_then_sub_restores(a: dict[str, int] | None, b: dict[str, int] | None) -> None:
    """add and sub are inverse up to zero entries."""
    assert res.equals(res.sub(res.add(a, b), b), a or {})


@ALGEBRA
@given(signed, signed)
def test_gt_existing_false_when_covered(r: dict[str, int] | None, s: dict[str, int] | None) -> None:
    """If s covers r in every type of r (and they share one), r is not greater than s."""
    r = r or {}
    s = s or {}
    if r and s and all(t in s and s[t] >= q for t, q in r.items()):
        assert not res.gt_existing(r, s)


@FAST
@given(gen.any_preempt())
def test_reused_state_answers_like_a_fresh_one(doc: dict[str, Any]) -> None:
    """A PreemptionState serving several decisions (caches warm) answers like a fresh one."""
    from engine.preempt_state import PreemptionState

    s = parse_scenario(doc)
    ask = _preempt_request(s).ask
    state = PreemptionState(s.cluster)
    fresh = preempt(s.cluster, ask, s.now, prune=False)
    assert [preempt(state, ask, s.now) for _ in range(3)] == [fresh] * 3
    run_round(state, (ask, dataclasses.replace(ask, key="other")), None, s.now)
    assert preempt(state, ask, s.now) == fresh  # a round works on a fork
