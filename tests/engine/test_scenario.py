"""Scenario parsing and validation (scenario-format.md "Validation rules")."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import strategies as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.profiles import examples

from engine.errors import ScenarioError
from engine.model import Allocation, PreemptRequest, QuotaChangeRequest, RoundRequest
from engine.scenario import (
    answer_from_dict,
    parse_ask,
    parse_asks,
    parse_cluster,
    parse_now,
    parse_scenario,
    queue_kinds,
    scenario_to_dict,
)

Doc = dict[str, Any]


def base() -> Doc:
    return {
        "now": 100,
        "partition": {"quota_preemption_enabled": True, "miss": 0.25},
        "queues": {
            "name": "root",
            "children": [
                {"name": "b", "children": [{"name": "c"}], "max": {"vcore": 4}},
                {"name": "a", "guaranteed": {"vcore": 5, "gpu": 0}},
            ],
        },
        "nodes": [{"id": "n1", "capacity": {"vcore": 10}}],
        "allocations": [
            {"key": "x", "queue": "root.a", "node": "n1", "resources": {"vcore": 3, "gpu": 0}}
        ],
        "request": {"type": "preempt", "ask": {"key": "k", "queue": "root.b.c",
                                               "resources": {"vcore": 200.0}}},
    }  # fmt: skip


def test_defaults_and_normalisation() -> None:
    """Defaults of the contract; zero entries dropped from task resources, kept in limits."""
    s = parse_scenario(base())
    alloc = s.cluster.allocations[0]
    assert alloc.resources == {"vcore": 3}
    assert (alloc.priority, alloc.originator, alloc.allow_preemption) == (0, False, True)
    assert (alloc.created, alloc.required_node, alloc.preempted) == (0.0, False, False)
    assert alloc.app == ""
    a_queue = next(c for c in s.cluster.root.children if c.name == "a")
    assert a_queue.guaranteed == {"vcore": 5, "gpu": 0}
    assert [c.name for c in s.cluster.root.children] == ["a", "b"]  # name order
    assert s.cluster.nodes[0].schedulable is True
    assert s.cluster.partition.miss == 0.25
    assert isinstance(s.request, PreemptRequest)
    assert s.request.ask.resources == {"vcore": 200}
    assert s.request.ask.allow_preempt_other is True
    assert s.now == 100.0


def test_now_falls_back() -> None:
    """A missing now uses default_now (the caller's clock)."""
    doc = base()
    del doc["now"]
    assert parse_scenario(doc, default_now=42.0).now == 42.0
    assert parse_scenario(doc).now > 1.6e9


def test_optional_lists_and_empty_limits() -> None:
    """nodes/allocations may be missing; {} limits mean not set; empty cap means no cap."""
    doc: Doc = {
        "queues": {"name": "root", "max": {}, "children": [{"name": "a", "guaranteed": {}}]},
        "request": {"type": "round", "asks": [], "max_preempted": {}},
    }
    s = parse_scenario(doc, default_now=0)
    assert s.cluster.nodes == ()
    assert s.cluster.allocations == ()
    assert s.cluster.root.max is None
    assert s.cluster.root.children[0].guaranteed is None
    assert isinstance(s.request, RoundRequest)
    assert s.request.max_preempted is None


def test_quota_change_new_max_optional() -> None:
    """quota_change may name any queue; a missing new_max is 'not set'."""
    doc = base()
    doc["request"] = {"type": "quota_change", "queue": "root.b"}
    s = parse_scenario(doc)
    assert s.request == QuotaChangeRequest(queue="root.b", new_max=None)


def test_round_trip() -> None:
    """scenario_to_dict is the inverse of parse_scenario."""
    s = parse_scenario(base())
    assert parse_scenario(json.loads(json.dumps(scenario_to_dict(s)))) == s


def mutate(path: str, value: object) -> Callable[[Doc], None]:
    """Set (or with value ... delete) a nested key given as dotted path with [i] indices."""

    def apply(doc: Doc) -> None:
        parts = path.replace("]", "").replace("[", ".").split(".")
        target: Any = doc
        for p in parts[:-1]:
            target = target[int(p)] if p.isdigit() else target[p]
        last = parts[-1]
        key: Any = int(last) if last.isdigit() else last
        if value is ...:
            del target[key]
        else:
            target[key] = value

    return apply


def append(path: str, value: object) -> Callable[[Doc], None]:
    def apply(doc: Doc) -> None:
        target: Any = doc
        for p in path.replace("]", "").replace("[", ".").split("."):
            target = target[int(p)] if p.isdigit() else target[p]
        target.append(copy.deepcopy(value))

    return apply


BAD: list[tuple[str, Callable[[Doc], None], str]] = [
    ("negative", mutate("allocations[0].resources.vcore", -1), "allocations[0].resources.vcore"),
    ("fraction", mutate("allocations[0].resources.vcore", 1.5), "allocations[0].resources.vcore"),
    ("too big", mutate("allocations[0].resources.vcore", 2**63), "allocations[0].resources.vcore"),
    ("string qty", mutate("nodes[0].capacity.vcore", "5"), "nodes[0].capacity.vcore"),
    ("bool qty", mutate("queues.children[1].guaranteed.vcore", True),
     "queues.children[1].guaranteed.vcore"),
    ("unknown ask queue", mutate("request.ask.queue", "root.zz"), "request.ask.queue"),
    ("ask in parent", mutate("request.ask.queue", "root.b"), "request.ask.queue"),
    ("alloc in parent", mutate("allocations[0].queue", "root.b"), "allocations[0].queue"),
    ("alloc in root", mutate("allocations[0].queue", "root"), "allocations[0].queue"),
    ("unknown node", mutate("allocations[0].node", "n9"), "allocations[0].node"),
    ("missing key", mutate("allocations[0].key", ...), "allocations[0].key"),
    ("missing resources", mutate("allocations[0].resources", ...), "allocations[0].resources"),
    ("duplicate key", append("allocations", {"key": "x", "queue": "root.a", "node": "n1",
                                             "resources": {}}), "allocations[1].key"),
    ("duplicate node", append("nodes", {"id": "n1", "capacity": {}}), "nodes[1].id"),
    ("sibling clash", append("queues.children", {"name": "a"}), "queues.children[2].name"),
    ("dot in name", append("queues.children", {"name": "x.y"}), "queues.children[2].name"),
    ("empty name", append("queues.children", {"name": ""}), "queues.children[2].name"),
    ("root name", mutate("queues.name", "top"), "queues.name"),
    ("priority 2**31", mutate("allocations[0].priority", 2**31), "allocations[0].priority"),
    ("ask priority", mutate("request.ask.priority", -(2**31) - 1), "request.ask.priority"),
    ("offset 2**31", mutate("queues.children[1].properties", {"priority.offset": "2147483648"}),
     "queues.children[1].properties.priority.offset"),
    ("miss > 1", mutate("partition.miss", 1.5), "partition.miss"),
    ("miss < 0", mutate("partition.miss", -0.1), "partition.miss"),
    ("delay < 0", mutate("queues.children[1].quota_preemption_delay", -1),
     "queues.children[1].quota_preemption_delay"),
    ("flag type", mutate("allocations[0].preempted", "yes"), "allocations[0].preempted"),
    ("now type", mutate("now", "soon"), "now"),
    ("no request", mutate("request", ...), "request"),
    ("no queues", mutate("queues", ...), "queues"),
    ("request type", mutate("request.type", "explode"), "request.type"),
    ("nodes not list", mutate("nodes", {}), "nodes"),
    ("round dup ask", mutate("request", {"type": "round", "asks": [
        {"key": "k", "queue": "root.a", "resources": {}},
        {"key": "k", "queue": "root.a", "resources": {}}]}), "request.asks[1].key"),
    ("resources queue", mutate("request", {"type": "resources", "queue": "root.q"}),
     "request.queue"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "field"), [(b[1], b[2]) for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_names_the_field(change: Callable[[Doc], None], field: str) -> None:
    """Every contract violation raises ScenarioError naming the offending field."""
    doc = base()
    change(doc)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(doc)
    assert info.value.field == field
    assert str(info.value).startswith(field)


def test_not_an_object() -> None:
    """The document itself must be an object."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario([1, 2])
    assert info.value.field == "scenario"


def test_non_numeric_offset_reads_as_zero() -> None:
    """engine.md 0.1: an unparsable priority.offset is 0 (not an error); numbers are accepted."""
    doc = base()
    doc["queues"]["children"][1]["properties"] = {"priority.offset": "abc", "x": 3}
    s = parse_scenario(doc)
    props = next(c for c in s.cluster.root.children if c.name == "a").properties
    assert props == {"priority.offset": "abc", "x": "3"}


@pytest.mark.parametrize(
    ("rtype", "data"),
    [
        ("preempt", {"ask": "k", "status": "fits", "node": "n1", "fence": "root",
                     "victims": [], "reason": None}),
        ("round", {"results": [], "preempted_total": {"vcore": 2}, "capped": True}),
        ("resources", {"preemptable": {}, "remaining_guaranteed": None}),
    ],
)  # fmt: skip
def test_answer_from_dict_inverts_to_dict(rtype: str, data: dict[str, object]) -> None:
    """Stored answers read back into answer objects with the same JSON."""
    answer = answer_from_dict(rtype, data)
    assert answer.to_dict() == data  # type: ignore[attr-defined]  # every answer has to_dict


def test_answer_from_dict_unknown_type() -> None:
    """An unknown request type is refused."""
    with pytest.raises(ValueError, match="unknown request type"):
        answer_from_dict("explode", {})


def test_parse_cluster_reads_the_cluster_part_without_a_request() -> None:
    """The cluster of a document is the one parse_scenario builds; request and now are not read."""
    doc = base()
    expected = parse_scenario(doc).cluster
    del doc["request"]
    doc["now"] = "not read"
    assert expected == parse_cluster(doc)
    assert parse_now(base()) == 100.0
    with pytest.raises(ScenarioError, match="finite number") as err:
        parse_now(doc)
    assert err.value.field == "now"


def test_parse_cluster_takes_the_callers_allocations_checking_key_queue_and_node() -> None:
    """Allocations the caller built are taken as they are (None entries read as usual);
    their key, queue and node are still checked against the rest of the document."""
    doc = base()
    doc["allocations"].append({"key": "y", "queue": "root.b.c", "node": "n1", "resources": {}})
    expected = parse_cluster(doc)
    mine = Allocation("x", "root.a", "n1", {"vcore": 3})
    assert mine == expected.allocations[0]
    got = parse_cluster(doc, built_allocations=[mine, None])
    assert got == expected
    assert got.allocations[0] is mine
    for built, field, message in (
        ([None, mine], "allocations[1].key", "duplicate allocation key 'x'"),
        ([replace(mine, queue="root.b"), None], "allocations[0].queue", "parent queue"),
        ([replace(mine, queue="root.z"), None], "allocations[0].queue", "unknown queue"),
        ([replace(mine, node="n9"), None], "allocations[0].node", "unknown node"),
    ):
        with pytest.raises(ScenarioError, match=message) as err:
            parse_cluster(doc, built_allocations=built)
        assert err.value.field == field
    with pytest.raises(ValueError, match="1 built allocations for a list of 2"):
        parse_cluster(doc, built_allocations=[mine])


def test_parse_ask_checks_the_queue_against_the_tree() -> None:
    """An ask names a leaf of the cluster's tree; field names start at the given prefix."""
    kinds = queue_kinds(parse_cluster(base()).root)
    assert kinds == {"root": False, "root.a": True, "root.b": False, "root.b.c": True}
    ask = parse_ask({"key": "k", "queue": "root.a", "resources": {"vcore": 1}}, kinds)
    assert (ask.key, ask.queue, ask.resources) == ("k", "root.a", {"vcore": 1})
    with pytest.raises(ScenarioError) as err:
        parse_ask({"key": "k", "queue": "root.b", "resources": {}}, kinds)
    assert err.value.field == "ask.queue"
    with pytest.raises(ScenarioError) as err:
        parse_asks([{"key": "k", "queue": "root.a", "resources": {}}] * 2, kinds)
    assert err.value.field == "asks[1].key"


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(gen.any_preempt(), gen.any_round(), gen.quota_scenario()))
def test_cluster_once_then_asks_equals_the_whole_scenario(doc: Doc) -> None:
    """On any generated document, parse_cluster and then parse_ask / parse_asks against its
    queue tree build exactly what parse_scenario builds."""
    whole = parse_scenario(doc)
    cluster = parse_cluster(doc)
    assert cluster == whole.cluster
    kinds = queue_kinds(cluster.root)
    request = doc["request"]
    if isinstance(whole.request, PreemptRequest):
        assert parse_ask(request["ask"], kinds) == whole.request.ask
    if isinstance(whole.request, RoundRequest):
        assert parse_asks(request["asks"], kinds) == whole.request.asks
