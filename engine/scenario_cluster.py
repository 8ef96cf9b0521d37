"""The cluster part of a scenario: queue tree, nodes, allocations, partition (scenario-format.md).

:func:`parse_cluster` reads and validates them exactly as
:func:`engine.scenario.parse_scenario` does (which calls the same readers);
:func:`queue_kinds` gives the path -> is_leaf map that asks are checked
against.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import ScenarioError
from engine.model import Allocation, Cluster, Node, Partition, QueueConfig
from engine.queues import INT32_MAX, INT32_MIN
from engine.resources import MAX_QUANTITY
from engine.scenario_fields import (
    read_bool,
    read_int32,
    read_key,
    read_list,
    read_number,
    read_object,
    read_optional_limit,
    read_properties,
    read_resource,
    read_string,
    type_name,
)


def read_queues(value: object) -> tuple[QueueConfig, dict[str, bool]]:
    """The queue tree and a map path -> is_leaf."""
    root_raw = read_object(value, "queues")
    name = root_raw.get("name")
    if name != "root":
        raise ScenarioError("queues.name", "the top queue must be named 'root'")
    kinds: dict[str, bool] = {}
    # iterative: absurdly deep trees must not hit Python's recursion limit
    order: list[tuple[dict[str, Any], str, str, list[int]]] = []
    stack: list[tuple[dict[str, Any], str, str, int]] = [(root_raw, "queues", "root", -1)]
    while stack:
        raw, field, path, parent_no = stack.pop()
        number = len(order)
        order.append((raw, field, path, []))
        if parent_no >= 0:
            order[parent_no][3].append(number)
        children_raw = raw.get("children")
        has_children = False
        if children_raw is not None:
            seen: set[str] = set()
            for j, child in enumerate(read_list(children_raw, f"{field}.children")):
                cfield = f"{field}.children[{j}]"
                craw = read_object(child, cfield)
                cname = craw.get("name")
                if type(cname) is not str:
                    raise ScenarioError(f"{cfield}.name", "is required and must be a string")
                if not cname:
                    raise ScenarioError(f"{cfield}.name", "must not be empty")
                if "." in cname:
                    raise ScenarioError(f"{cfield}.name", f"queue name {cname!r} contains a dot")
                if cname in seen:
                    raise ScenarioError(
                        f"{cfield}.name", f"duplicate queue name {cname!r} under {path}"
                    )
                seen.add(cname)
                has_children = True
                stack.append((craw, cfield, f"{path}.{cname}", number))
        kinds[path] = not has_children
    # a child is numbered after its parent: build from the last number back to root
    built: list[QueueConfig | None] = [None] * len(order)
    for number in range(len(order) - 1, -1, -1):
        raw, field, path, kids = order[number]
        delay_raw = raw.get("quota_preemption_delay")
        delay: float | None = None
        if delay_raw is not None:
            delay = read_number(delay_raw, f"{field}.quota_preemption_delay")
            if delay < 0:
                raise ScenarioError(f"{field}.quota_preemption_delay", "must not be negative")
        children = tuple(sorted((_built(built, k) for k in kids), key=lambda c: c.name))
        built[number] = QueueConfig(
            name=path.rsplit(".", 1)[-1],
            guaranteed=read_optional_limit(raw.get("guaranteed"), f"{field}.guaranteed"),
            max=read_optional_limit(raw.get("max"), f"{field}.max"),
            properties=read_properties(raw.get("properties"), f"{field}.properties"),
            quota_preemption_delay=delay,
            children=children,
        )
    return _built(built, 0), kinds


def _built(built: list[QueueConfig | None], number: int) -> QueueConfig:
    q = built[number]
    assert q is not None  # children are numbered after their parent and built first
    return q


def read_nodes(value: object) -> tuple[Node, ...]:
    if value is None:
        return ()
    out: list[Node] = []
    seen: set[str] = set()
    for i, raw in enumerate(read_list(value, "nodes")):
        field = f"nodes[{i}]"
        n = read_object(raw, field)
        nid = read_key(n.get("id"), f"{field}.id")
        if nid in seen:
            raise ScenarioError(f"{field}.id", f"duplicate node id {nid!r}")
        seen.add(nid)
        sched = n.get("schedulable", True)
        out.append(
            Node(
                id=nid,
                capacity=read_resource(n.get("capacity"), f"{field}.capacity", drop_zeros=False),
                schedulable=read_bool(sched, f"{field}.schedulable"),
            )
        )
    return tuple(out)


def read_queue_ref(value: object, field: str, kinds: Mapping[str, bool], *, leaf: bool) -> str:
    path = read_key(value, field)
    is_leaf = kinds.get(path)
    if is_leaf is None:
        raise ScenarioError(field, f"unknown queue {path!r}")
    if leaf and not is_leaf:
        raise ScenarioError(field, f"{path!r} is a parent queue; only leaf queues hold tasks")
    return path


_FINITE = 1.7976931348623157e308  # the largest float: -_FINITE <= x <= _FINITE excludes inf, nan


def read_allocations(
    value: object,
    kinds: Mapping[str, bool],
    node_ids: set[str],
    built: Sequence[Allocation | None] | None = None,
) -> tuple[Allocation, ...]:
    """The allocation list.  The hot loop of parsing: checks are inlined, each value is
    tested with one fast type check, and the general helpers (which build the error
    message) run only when that check fails.

    *built*, when given, holds for each entry of the list the caller's own
    :class:`Allocation` of it, or None (see :func:`parse_cluster`)."""
    if value is None:
        return ()
    out: list[Allocation] = []
    append = out.append
    seen: set[str] = set()
    add_seen = seen.add
    leaves = {path for path, is_leaf in kinds.items() if is_leaf}
    max_q = MAX_QUANTITY
    lo, hi = INT32_MIN, INT32_MAX
    raws = read_list(value, "allocations")
    if built is not None and len(built) != len(raws):
        raise ValueError(f"{len(built)} built allocations for a list of {len(raws)}")
    for i, raw in enumerate(raws):
        known = None if built is None else built[i]
        if known is not None:
            # the caller's object of this entry, its values of the contract's types:
            # what depends on the rest of the document is checked here all the same
            if known.key in seen:
                raise ScenarioError(
                    f"allocations[{i}].key", f"duplicate allocation key {known.key!r}"
                )
            add_seen(known.key)
            if known.queue not in leaves:
                read_queue_ref(known.queue, f"allocations[{i}].queue", kinds, leaf=True)
            if known.node not in node_ids:
                raise ScenarioError(f"allocations[{i}].node", f"unknown node {known.node!r}")
            append(known)
            continue
        if type(raw) is not dict:
            raise ScenarioError(f"allocations[{i}]", f"must be an object, not {type_name(raw)}")
        get = raw.get
        key = get("key")
        if type(key) is not str or not key:
            key = read_key(key, f"allocations[{i}].key")
        if key in seen:
            raise ScenarioError(f"allocations[{i}].key", f"duplicate allocation key {key!r}")
        add_seen(key)
        queue = get("queue")
        if type(queue) is not str or queue not in leaves:
            queue = read_queue_ref(queue, f"allocations[{i}].queue", kinds, leaf=True)
        node = get("node")
        if type(node) is not str or node not in node_ids:
            if type(node) is str and node:
                raise ScenarioError(f"allocations[{i}].node", f"unknown node {node!r}")
            node = read_key(node, f"allocations[{i}].node")
        raw_res = get("resources")
        r: dict[str, int] = {}
        if type(raw_res) is dict:
            for t, q in raw_res.items():
                if type(q) is int and 0 < q <= max_q:
                    r[t] = q
                elif q != 0 or type(q) is not int:
                    # floats, zeros as 0.0 and every error: the general, slower path
                    r = read_resource(raw_res, f"allocations[{i}].resources", drop_zeros=True)
                    break
        else:
            r = read_resource(raw_res, f"allocations[{i}].resources", drop_zeros=True)
        # the defaults of scenario-format.md "Validation rules"; checked only when present
        app = get("app", "")
        priority = get("priority", 0)
        originator = get("originator", False)
        allow = get("allow_preemption", True)
        created = get("created", 0.0)
        required = get("required_node", False)
        preempted = get("preempted", False)
        if type(app) is not str:
            app = "" if app is None else read_string(app, f"allocations[{i}].app")
        if type(priority) is not int or priority < lo or priority > hi:
            priority = read_int32(priority, f"allocations[{i}].priority")
        if type(originator) is not bool:
            read_bool(originator, f"allocations[{i}].originator")
        if type(allow) is not bool:
            read_bool(allow, f"allocations[{i}].allow_preemption")
        if type(created) is not float or not -_FINITE <= created <= _FINITE:
            created = read_number(created, f"allocations[{i}].created")
        if type(required) is not bool:
            read_bool(required, f"allocations[{i}].required_node")
        if type(preempted) is not bool:
            read_bool(preempted, f"allocations[{i}].preempted")
        append(
            Allocation(
                key, queue, node, r, app, priority, originator, allow, created, required, preempted
            )
        )
    return tuple(out)


def read_partition(value: object) -> Partition:
    if value is None:
        return Partition()
    raw = read_object(value, "partition")
    enabled = read_bool(
        raw.get("quota_preemption_enabled", False), "partition.quota_preemption_enabled"
    )
    miss = read_number(raw.get("miss", 0.0), "partition.miss")
    if not 0.0 <= miss <= 1.0:
        raise ScenarioError("partition.miss", "must be between 0.0 and 1.0")
    return Partition(quota_preemption_enabled=enabled, miss=miss)


def parse_cluster(
    data: object, *, built_allocations: Sequence[Allocation | None] | None = None
) -> Cluster:
    """Validate the cluster part of a scenario document and build its frozen dataclasses.

    Reads ``queues``, ``nodes``, ``allocations`` and ``partition`` exactly as
    :func:`parse_scenario` does; ``request`` and ``now`` are not read, so a
    stored cluster is checked without a request made up for the purpose.

    *built_allocations* is for a caller that made most allocations' objects while
    writing the document (an importer reading a hundred thousand): one entry per
    entry of ``allocations``, the :class:`Allocation` this function would build of
    it, else None. Those are taken as they are, their key, queue and node still
    checked against the rest of the document (unique, a known leaf, a known node);
    the caller vouches for their values' types and ranges. The None entries are
    read and validated as usual.

    Raises:
        ScenarioError: naming the offending field.
    """
    doc = read_object(data, "scenario")
    if doc.get("queues") is None:
        raise ScenarioError("queues", "is required")
    root, kinds = read_queues(doc["queues"])
    nodes = read_nodes(doc.get("nodes"))
    allocations = read_allocations(
        doc.get("allocations"), kinds, {n.id for n in nodes}, built_allocations
    )
    partition = read_partition(doc.get("partition"))
    return Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)


def queue_kinds(root: QueueConfig) -> dict[str, bool]:
    """Path -> is_leaf for every queue of the tree under *root*."""
    kinds: dict[str, bool] = {}
    stack: list[tuple[QueueConfig, str]] = [(root, root.name)]
    while stack:
        queue, path = stack.pop()
        kinds[path] = not queue.children
        stack.extend((child, f"{path}.{child.name}") for child in queue.children)
    return kinds
