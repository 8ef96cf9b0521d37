"""A snapshot's checksum: SHA-256 of its scenario document as ``json.dumps(sort_keys=True)``
writes it, whichever way each allocation's text is produced; an allocation span's digest,
whichever way it is taken."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from dashboard.services.snapshots.checksum import cluster_checksum, stored_rest
from dashboard.services.snapshots.spans import (
    _allocation_content,
    allocation_digest,
    allocation_json,
    engine_allocation_digest,
)
from engine import model as em
from engine.scenario import allocation_to_dict, cluster_to_dict, parse_cluster

ALLOCATIONS = st.builds(
    em.Allocation,
    key=st.text(min_size=1),
    queue=st.text(min_size=1),
    node=st.text(min_size=1),
    resources=st.dictionaries(st.text(), st.integers(min_value=-(2**70), max_value=2**70)),
    app=st.text(),
    priority=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    originator=st.booleans(),
    allow_preemption=st.booleans(),
    created=st.floats() | st.integers(min_value=-(2**64), max_value=2**64),
    required_node=st.booleans(),
    preempted=st.booleans(),
)


@settings(max_examples=examples(500), deadline=None)
@given(ALLOCATIONS)
def test_allocation_text_is_what_json_dumps_writes(a: em.Allocation) -> None:
    """Any text, any number (non-finite and integer times included), byte for byte."""
    assert allocation_json(a) == json.dumps(allocation_to_dict(a), sort_keys=True)


def test_values_of_other_types_take_json_dumps() -> None:
    """A value of a type the direct text does not write (an int subclass, a float
    resource) is written by json.dumps itself."""

    class Count(int):
        pass

    odd = em.Allocation(
        key="a", queue="root.q", node="n", resources={"vcore": Count(3)}, priority=Count(1)
    )
    assert allocation_json(odd) == json.dumps(allocation_to_dict(odd), sort_keys=True)
    inf = em.Allocation(key="a", queue="root.q", node="n", resources={}, created=math.inf)
    assert '"created": Infinity' in allocation_json(inf)


def test_checksum_is_the_whole_documents_sha256() -> None:
    """Hashed a slice at a time, the checksum is that of the whole sorted document."""
    scenario = {
        "now": 1788000000.5,
        "partition": {"quota_preemption_enabled": True, "miss": 0.0},
        "queues": {"name": "root", "children": [{"name": "a"}, {"name": "é"}]},
        "nodes": [{"id": f"n{i}", "capacity": {"vcore": 8000, "memory": 2**34}} for i in range(3)],
        "allocations": [
            {
                "key": f"alloc-{i:05d}-ü",
                "queue": "root.a" if i % 2 else "root.é",
                "node": f"n{i % 3}",
                "resources": {"vcore": 1, "memory": 2**20 + i},
                "app": f"app-{i % 7}",
                "priority": i % 3 - 1,
                "created": 1788000000 + i / 8,
                "preempted": i % 5 == 0,
            }
            for i in range(12_000, 0, -1)  # more than one slice, given out of order
        ],
    }
    cluster = parse_cluster(scenario)
    doc: dict[str, Any] = cluster_to_dict(cluster)
    doc["now"] = scenario["now"]
    doc["nodes"].sort(key=lambda n: n["id"])
    doc["allocations"].sort(key=lambda a: a["key"])
    whole = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    assert cluster_checksum(stored_rest(scenario, cluster), cluster) == whole


@settings(max_examples=examples(300), deadline=None)
@given(ALLOCATIONS, st.tuples(st.booleans(), st.booleans(), st.text()))
def test_allocation_digest_without_its_content(
    a: em.Allocation, extras: tuple[bool, bool, str]
) -> None:
    """The digest a poll compares with the stored spans is the one they were stored with."""
    assert engine_allocation_digest(a, extras) == allocation_digest(_allocation_content(a, extras))


def test_allocation_digest_of_maps_equal_in_value_but_not_in_type() -> None:
    """A resource map equal to a remembered one but holding a bool or a float is hashed
    as its own text (the stored digest's), not as the remembered map's."""
    extras = (False, False, "")
    quantities: tuple[Any, ...] = (1, True, 1.0, 1)  # not what the engine holds: the point
    for quantity in quantities:
        a = em.Allocation(key="k", queue="root.q", node="n", resources={"pods": quantity})
        assert engine_allocation_digest(a, extras) == allocation_digest(
            _allocation_content(a, extras)
        )


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(ALLOCATIONS, max_size=8, unique_by=lambda a: a.key),
    st.dictionaries(st.text(min_size=1), st.tuples(st.booleans(), st.booleans(), st.text())),
)
def test_span_digests_taken_from_the_checksums_text(
    allocations: list[em.Allocation], gang: dict[str, tuple[bool, bool, str]]
) -> None:
    """The digests the checksum hands on are each allocation's own digest (those with an
    integer creation time are left to be taken apart), and the checksum is unchanged."""
    cluster = em.Cluster(root=em.QueueConfig(name="root"), allocations=tuple(allocations))
    extras = {a.key: gang[k] for a, k in zip(allocations, gang, strict=False)}
    digests: dict[str, str] = {}
    rest: dict[str, object] = {"partition": {}}
    assert cluster_checksum(rest, cluster, digests, extras) == cluster_checksum(rest, cluster)
    assert digests == {
        a.key: engine_allocation_digest(a, extras.get(a.key, (False, False, "")))
        for a in allocations
        if type(a.created) is float
    }


def test_allocation_digest_takes_the_creation_time_as_a_float() -> None:
    a = em.Allocation(key="k", queue="root.q", node="n", resources={"vcore": 1}, created=5)
    extras = (False, False, "")
    assert engine_allocation_digest(a, extras) == engine_allocation_digest(
        replace(a, created=5.0), extras
    )
    assert engine_allocation_digest(a, extras) != engine_allocation_digest(
        replace(a, created=5.5), extras
    )
    assert engine_allocation_digest(a, extras) != engine_allocation_digest(a, (True, False, ""))


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(ALLOCATIONS, min_size=1, max_size=8, unique_by=lambda a: a.key))
def test_checksum_of_allocations_sharing_resource_maps(allocations: list[em.Allocation]) -> None:
    """An import's allocations share equal resource maps (one object): each map's text,
    taken once, is the one json.dumps writes for every allocation holding it."""
    pool = [allocations[0].resources, {"vcore": 1, "memory": 2**40}, {"pods": True}]
    shared = [replace(a, resources=pool[i % len(pool)]) for i, a in enumerate(allocations)]
    cluster = em.Cluster(root=em.QueueConfig(name="root"), allocations=tuple(shared))
    doc = {
        "nodes": [],
        "allocations": [allocation_to_dict(a) for a in sorted(shared, key=lambda a: a.key)],
    }
    whole = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()
    assert cluster_checksum({}, cluster) == whole
