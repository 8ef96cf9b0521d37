"""Property tests: the engine's fast paths give exactly what the straightforward code gives.

Each fast path (engine/preempt.py, engine/queues.py) is compared with the
plain computation it replaces, over random inputs with many ties.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping
from typing import Any

import strategies as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from engine import parse_scenario
from engine import resources as res
from engine.model import Allocation
from engine.preempt import victim_order_key, youngest_first
from engine.preempt_state import PreemptionState
from engine.queues import Snapshot, build_snapshot

PROPS = settings(max_examples=examples(300), deadline=None)

#: ``created`` values with many ties, built once (a strategy built per draw costs more
#: than the draw).
_CREATED = st.one_of(
    st.integers(-3, 3).map(float),
    st.floats(-1e9, 1e9, allow_nan=False),
    st.sampled_from((0.0, -0.0)),
)


@st.composite
def _allocations(draw: st.DrawFn) -> list[list[Allocation]]:
    """Groups of allocations with unique keys and few distinct ``created`` values (ties)."""
    groups: list[list[Allocation]] = []
    number = itertools.count()
    for _ in range(draw(st.integers(0, 4))):
        group = []
        for _ in range(draw(st.integers(0, 12))):
            i = next(number)
            group.append(
                Allocation(
                    key=f"a{draw(st.integers(0, 999)):03d}-{i}",
                    queue="root.q",
                    node="n",
                    resources={"vcore": 1},
                    originator=draw(st.booleans()),
                    allow_preemption=draw(st.sampled_from((True, True, True, False))),
                    created=draw(_CREATED),
                )
            )
        groups.append(group)
    return groups


@PROPS
@given(_allocations(), st.integers(1, 5), st.integers(0, 3))
def test_youngest_first_is_the_sorted_filtered_order(
    groups: list[list[Allocation]], batch: int, modulo: int
) -> None:
    """Bands of ``created`` give exactly sorted(filter(keep, all), key=victim_order_key)."""

    def keep(a: Allocation) -> bool:
        return modulo == 0 or int(a.key.rsplit("-", 1)[1]) % (modulo + 1) != 0

    expected = sorted(filter(keep, itertools.chain(*groups)), key=victim_order_key)
    assert list(youngest_first(groups, keep, batch=batch)) == expected


@PROPS
@given(_allocations(), st.integers(1, 5), st.integers(0, 30))
def test_youngest_first_prefix_is_lazy_and_exact(
    groups: list[list[Allocation]], batch: int, take: int
) -> None:
    """Stopping early (as the additional-victims loop does) gives the sorted prefix."""
    expected = sorted(itertools.chain(*groups), key=victim_order_key)[:take]
    got = list(itertools.islice(youngest_first(groups, lambda a: True, batch=batch), take))
    assert got == expected


def test_youngest_first_with_nan_falls_back_to_a_plain_sort() -> None:
    """A NaN ``created`` (library callers only: JSON has none) still gives the sorted order."""
    allocs = [
        Allocation(f"k{i}", "root.q", "n", {"vcore": 1}, created=c)
        for i, c in enumerate((1.0, float("nan"), 3.0, 2.0))
    ]
    expected = sorted(allocs, key=victim_order_key)
    assert list(youngest_first([allocs], lambda a: True)) == expected


def _snapshot_facts(snap: Snapshot) -> list[tuple[object, ...]]:
    """Every field of every queue, resources as item lists (type order included)."""
    out: list[tuple[object, ...]] = []
    for q in snap:
        row: list[object] = []
        for f in dataclasses.fields(q):
            value = getattr(q, f.name)
            row.append(list(value.items()) if isinstance(value, dict) else value)
        out.append(tuple(row))
    return out


def _nonzero(r: Mapping[str, int]) -> dict[str, int]:
    return {t: q for t, q in r.items() if q != 0}


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gen.any_preempt(), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_one_pass_state_equals_the_plain_definitions(
    doc: dict[str, Any], stray_queue: bool, parent_queue: bool, stray_node: bool, odd: bool
) -> None:
    """PreemptionState's one pass gives build_snapshot's snapshot and the plain node sums.

    Library callers may also pass allocations in unknown or parent queues or on
    unknown nodes, or zero and negative quantities, which the JSON parser rejects: the
    snapshot must still be build_snapshot's, key order included.
    """
    cluster = parse_scenario(doc).cluster
    extra = []
    if odd:
        leaf = next(q.path for q in build_snapshot(cluster) if q.is_leaf)
        extra.append(Allocation("zeros", leaf, "n0", {"gpu": 0, "vcore": 2}))
        extra.append(Allocation("minus", leaf, "n0", {"memory": -1, "gpu": 0}))
    if stray_queue:
        extra.append(Allocation("stray", "root.nowhere", "n0", {"vcore": 1, "gpu": 2}))
    if parent_queue:
        extra.append(Allocation("parent", "root", "n0", {"memory": 3}, preempted=True))
    if stray_node:
        extra.append(Allocation("lost", "root.nowhere", "n-none", {"vcore": 4}))
    allocations = (*extra, *cluster.allocations)
    cluster = dataclasses.replace(cluster, allocations=allocations)
    snap = build_snapshot(cluster)
    for state in (PreemptionState(cluster), PreemptionState(cluster, snap)):
        assert _snapshot_facts(state.snap) == _snapshot_facts(snap)

        def victim(a: Allocation) -> bool:
            return not (a.preempted or a.required_node)

        assert state.leaf_candidates == [
            [a for a in allocations if a.queue == path and victim(a)] for path in snap.paths
        ]
        for node in cluster.nodes:
            on_node = [a for a in allocations if a.node == node.id]
            cands = [a for a in on_node if victim(a)]
            assert state.node_candidates.get(node.id, []) == cands
            if cands:
                assert _nonzero(state.node_sum[node.id]) == _nonzero(
                    res.total(a.resources for a in cands)
                )
                largest = {
                    t: max(q for a in cands for u, q in a.resources.items() if u == t)
                    for t in {t for a in cands for t in a.resources}
                }
                assert state.node_max[node.id] == {t: q for t, q in largest.items() if q > 0}
            free = res.sub(node.capacity, res.total(a.resources for a in on_node))
            assert _nonzero(state.node_avail[node.id]) == _nonzero(free)
