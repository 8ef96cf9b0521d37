"""Scenario JSON -> validated frozen dataclasses, and back (scenario-format.md).

Owns the contract's "Validation rules": every bad input raises
:class:`~engine.errors.ScenarioError` whose ``field`` is the JSON path of the
offending value (``allocations[3].resources.vcore``, ``request.ask.queue``,
``queues.children[0].name``).  Parsing is a single lean pass because the
command line must stay within a small factor of plain ``json.load``.

This is also the only engine module that falls back to the wall clock (for a
missing ``now``).

>>> s = parse_scenario({"queues": {"name": "root", "children": [{"name": "a"}]},
...                     "request": {"type": "resources", "queue": "root.a"}}, default_now=5)
>>> s.request, s.now
(ResourcesRequest(queue='root.a', type='resources'), 5.0)
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import ScenarioError
from engine.model import (
    Allocation,
    Ask,
    Cluster,
    Node,
    Partition,
    PreemptRequest,
    QueueConfig,
    QuotaChangeRequest,
    Request,
    ResourcesRequest,
    RoundRequest,
    Scenario,
)
from engine.queues import INT32_MAX, INT32_MIN, parse_priority_offset
from engine.resources import MAX_QUANTITY, Resource

REQUEST_TYPES = ("preempt", "quota_change", "resources", "round")

_QUANTITY_MSG = "must be an integer between 0 and 2**63-1"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _object(value: object, field: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise ScenarioError(field, f"must be an object, not {_type_name(value)}")
    return value


def _list(value: object, field: str) -> list[Any]:
    if type(value) is not list:
        raise ScenarioError(field, f"must be a list, not {_type_name(value)}")
    return value


def _string(value: object, field: str) -> str:
    if type(value) is not str:
        raise ScenarioError(field, f"must be a string, not {_type_name(value)}")
    return value


def _key(value: object, field: str) -> str:
    if type(value) is not str:
        if value is None:
            raise ScenarioError(field, "is required")
        raise ScenarioError(field, f"must be a string, not {_type_name(value)}")
    if not value:
        raise ScenarioError(field, "must not be empty")
    return value


def _bool(value: object, field: str) -> bool:
    if type(value) is not bool:
        raise ScenarioError(field, f"must be true or false, not {_type_name(value)}")
    return value


def _number(value: object, field: str) -> float:
    if type(value) is int:
        if abs(value) > 2**1000:  # float() would overflow
            raise ScenarioError(field, "is too large")
        return float(value)
    if type(value) is float and math.isfinite(value):
        return value
    raise ScenarioError(field, f"must be a finite number, not {_type_name(value)}")


def _int32(value: object, field: str) -> int:
    if type(value) is int:
        q = value
    elif type(value) is float and value.is_integer():
        q = int(value)
    else:
        raise ScenarioError(field, "must be a 32-bit signed integer")
    if q < INT32_MIN or q > INT32_MAX:
        raise ScenarioError(field, "must be a 32-bit signed integer")
    return q


def _resource(value: object, field: str, *, drop_zeros: bool) -> dict[str, int]:
    """A JSON resource object; raises naming ``field.type`` for a bad quantity."""
    if type(value) is not dict:
        if value is None:
            raise ScenarioError(field, "is required")
        raise ScenarioError(field, f"must be an object, not {_type_name(value)}")
    out: dict[str, int] = {}
    for t, q in value.items():
        if type(q) is not int:
            if type(q) is float and q.is_integer():
                q = int(q)
            else:
                raise ScenarioError(f"{field}.{t}", _QUANTITY_MSG)
        if q < 0 or q > MAX_QUANTITY:
            raise ScenarioError(f"{field}.{t}", _QUANTITY_MSG)
        if q or not drop_zeros:
            out[t] = q
    return out


def _optional_limit(value: object, field: str) -> dict[str, int] | None:
    # guaranteed/max: missing, null or {} mean "not set"; zeros are kept ({"gpu": 0} forbids GPUs)
    if value is None:
        return None
    return _resource(value, field, drop_zeros=False) or None


def _properties(value: object, field: str) -> dict[str, str]:
    if value is None:
        return {}
    raw = _object(value, field)
    out: dict[str, str] = {}
    for k, v in raw.items():
        if type(v) is str:
            out[k] = v
        elif type(v) is int or (type(v) is float and math.isfinite(v)):
            # YuniKorn properties are strings; accept a bare JSON number as its text
            out[k] = str(int(v)) if type(v) is float and v.is_integer() else str(v)
        else:
            raise ScenarioError(f"{field}.{k}", "must be a string")
    offset = out.get("priority.offset")
    if offset is not None:
        parsed = parse_priority_offset(offset)
        # an integer outside 32 bits is bad input; a non-numeric text is read as 0 (engine.md 0.1)
        if parsed is not None and not INT32_MIN <= parsed <= INT32_MAX:
            raise ScenarioError(f"{field}.priority.offset", "must be a 32-bit signed integer")
    return out


def _queues(value: object) -> tuple[QueueConfig, dict[str, bool]]:
    """The queue tree and a map path -> is_leaf."""
    root_raw = _object(value, "queues")
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
            for j, child in enumerate(_list(children_raw, f"{field}.children")):
                cfield = f"{field}.children[{j}]"
                craw = _object(child, cfield)
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
            delay = _number(delay_raw, f"{field}.quota_preemption_delay")
            if delay < 0:
                raise ScenarioError(f"{field}.quota_preemption_delay", "must not be negative")
        children = tuple(sorted((_built(built, k) for k in kids), key=lambda c: c.name))
        built[number] = QueueConfig(
            name=path.rsplit(".", 1)[-1],
            guaranteed=_optional_limit(raw.get("guaranteed"), f"{field}.guaranteed"),
            max=_optional_limit(raw.get("max"), f"{field}.max"),
            properties=_properties(raw.get("properties"), f"{field}.properties"),
            quota_preemption_delay=delay,
            children=children,
        )
    return _built(built, 0), kinds


def _built(built: list[QueueConfig | None], number: int) -> QueueConfig:
    q = built[number]
    assert q is not None  # children are numbered after their parent and built first
    return q


def _nodes(value: object) -> tuple[Node, ...]:
    if value is None:
        return ()
    out: list[Node] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(value, "nodes")):
        field = f"nodes[{i}]"
        n = _object(raw, field)
        nid = _key(n.get("id"), f"{field}.id")
        if nid in seen:
            raise ScenarioError(f"{field}.id", f"duplicate node id {nid!r}")
        seen.add(nid)
        sched = n.get("schedulable", True)
        out.append(
            Node(
                id=nid,
                capacity=_resource(n.get("capacity"), f"{field}.capacity", drop_zeros=False),
                schedulable=_bool(sched, f"{field}.schedulable"),
            )
        )
    return tuple(out)


def _queue_ref(value: object, field: str, kinds: Mapping[str, bool], *, leaf: bool) -> str:
    path = _key(value, field)
    is_leaf = kinds.get(path)
    if is_leaf is None:
        raise ScenarioError(field, f"unknown queue {path!r}")
    if leaf and not is_leaf:
        raise ScenarioError(field, f"{path!r} is a parent queue; only leaf queues hold tasks")
    return path


_FINITE = 1.7976931348623157e308  # the largest float: -_FINITE <= x <= _FINITE excludes inf, nan


def _allocations(
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
    raws = _list(value, "allocations")
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
                _queue_ref(known.queue, f"allocations[{i}].queue", kinds, leaf=True)
            if known.node not in node_ids:
                raise ScenarioError(f"allocations[{i}].node", f"unknown node {known.node!r}")
            append(known)
            continue
        if type(raw) is not dict:
            raise ScenarioError(f"allocations[{i}]", f"must be an object, not {_type_name(raw)}")
        get = raw.get
        key = get("key")
        if type(key) is not str or not key:
            key = _key(key, f"allocations[{i}].key")
        if key in seen:
            raise ScenarioError(f"allocations[{i}].key", f"duplicate allocation key {key!r}")
        add_seen(key)
        queue = get("queue")
        if type(queue) is not str or queue not in leaves:
            queue = _queue_ref(queue, f"allocations[{i}].queue", kinds, leaf=True)
        node = get("node")
        if type(node) is not str or node not in node_ids:
            if type(node) is str and node:
                raise ScenarioError(f"allocations[{i}].node", f"unknown node {node!r}")
            node = _key(node, f"allocations[{i}].node")
        raw_res = get("resources")
        r: dict[str, int] = {}
        if type(raw_res) is dict:
            for t, q in raw_res.items():
                if type(q) is int and 0 < q <= max_q:
                    r[t] = q
                elif q != 0 or type(q) is not int:
                    # floats, zeros as 0.0 and every error: the general, slower path
                    r = _resource(raw_res, f"allocations[{i}].resources", drop_zeros=True)
                    break
        else:
            r = _resource(raw_res, f"allocations[{i}].resources", drop_zeros=True)
        # the defaults of scenario-format.md "Validation rules"; checked only when present
        app = get("app", "")
        priority = get("priority", 0)
        originator = get("originator", False)
        allow = get("allow_preemption", True)
        created = get("created", 0.0)
        required = get("required_node", False)
        preempted = get("preempted", False)
        if type(app) is not str:
            app = "" if app is None else _string(app, f"allocations[{i}].app")
        if type(priority) is not int or priority < lo or priority > hi:
            priority = _int32(priority, f"allocations[{i}].priority")
        if type(originator) is not bool:
            _bool(originator, f"allocations[{i}].originator")
        if type(allow) is not bool:
            _bool(allow, f"allocations[{i}].allow_preemption")
        if type(created) is not float or not -_FINITE <= created <= _FINITE:
            created = _number(created, f"allocations[{i}].created")
        if type(required) is not bool:
            _bool(required, f"allocations[{i}].required_node")
        if type(preempted) is not bool:
            _bool(preempted, f"allocations[{i}].preempted")
        append(
            Allocation(
                key, queue, node, r, app, priority, originator, allow, created, required, preempted
            )
        )
    return tuple(out)


def _ask(value: object, field: str, kinds: Mapping[str, bool]) -> Ask:
    raw = _object(value, field)
    app = raw.get("app", "")
    return Ask(
        key=_key(raw.get("key"), f"{field}.key"),
        queue=_queue_ref(raw.get("queue"), f"{field}.queue", kinds, leaf=True),
        resources=_resource(raw.get("resources"), f"{field}.resources", drop_zeros=True),
        app="" if app is None else _string(app, f"{field}.app"),
        priority=_int32(raw.get("priority", 0), f"{field}.priority"),
        allow_preempt_other=_bool(
            raw.get("allow_preempt_other", True), f"{field}.allow_preempt_other"
        ),
        created=_number(raw.get("created", 0.0), f"{field}.created"),
    )


def _request(value: object, kinds: Mapping[str, bool]) -> Request:
    if value is None:
        raise ScenarioError("request", "is required")
    raw = _object(value, "request")
    rtype = raw.get("type")
    if rtype == "preempt":
        if raw.get("ask") is None:
            raise ScenarioError("request.ask", "is required")
        return PreemptRequest(ask=_ask(raw["ask"], "request.ask", kinds))
    if rtype == "quota_change":
        queue = _queue_ref(raw.get("queue"), "request.queue", kinds, leaf=False)
        return QuotaChangeRequest(
            queue=queue, new_max=_optional_limit(raw.get("new_max"), "request.new_max")
        )
    if rtype == "resources":
        return ResourcesRequest(
            queue=_queue_ref(raw.get("queue"), "request.queue", kinds, leaf=False)
        )
    if rtype == "round":
        if raw.get("asks") is None:
            raise ScenarioError("request.asks", "is required")
        asks = parse_asks(raw["asks"], kinds, field="request.asks")
        cap = _optional_limit(raw.get("max_preempted"), "request.max_preempted")
        return RoundRequest(asks=asks, max_preempted=cap)
    if rtype is None:
        raise ScenarioError("request.type", "is required")
    raise ScenarioError("request.type", f"must be one of {', '.join(REQUEST_TYPES)}")


def _partition(value: object) -> Partition:
    if value is None:
        return Partition()
    raw = _object(value, "partition")
    enabled = _bool(
        raw.get("quota_preemption_enabled", False), "partition.quota_preemption_enabled"
    )
    miss = _number(raw.get("miss", 0.0), "partition.miss")
    if not 0.0 <= miss <= 1.0:
        raise ScenarioError("partition.miss", "must be between 0.0 and 1.0")
    return Partition(quota_preemption_enabled=enabled, miss=miss)


def parse_scenario(data: object, *, default_now: float | None = None) -> Scenario:
    """Validate a decoded scenario document and build its frozen dataclasses.

    Args:
        data: the JSON value (``json.load`` output).
        default_now: ``now`` when the document has none; the wall clock if ``None``.

    Raises:
        ScenarioError: naming the offending field, for anything the contract rejects.
    """
    doc = _object(data, "scenario")
    if doc.get("queues") is None:
        raise ScenarioError("queues", "is required")
    root, kinds = _queues(doc["queues"])
    nodes = _nodes(doc.get("nodes"))
    node_ids = {n.id for n in nodes}
    allocations = _allocations(doc.get("allocations"), kinds, node_ids)
    request = _request(doc.get("request"), kinds)
    partition = _partition(doc.get("partition"))
    now_raw = doc.get("now")
    if now_raw is None:
        now = float(time.time() if default_now is None else default_now)
    else:
        now = _number(now_raw, "now")
    cluster = Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)
    return Scenario(cluster=cluster, request=request, now=now)


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
    doc = _object(data, "scenario")
    if doc.get("queues") is None:
        raise ScenarioError("queues", "is required")
    root, kinds = _queues(doc["queues"])
    nodes = _nodes(doc.get("nodes"))
    allocations = _allocations(
        doc.get("allocations"), kinds, {n.id for n in nodes}, built_allocations
    )
    partition = _partition(doc.get("partition"))
    return Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)


def parse_now(data: object) -> float | None:
    """The ``now`` of a scenario document (``None`` when it has none), checked as by
    :func:`parse_scenario`.

    Raises:
        ScenarioError: for a ``now`` that is not a finite number.
    """
    raw = _object(data, "scenario").get("now")
    return None if raw is None else _number(raw, "now")


def queue_kinds(root: QueueConfig) -> dict[str, bool]:
    """Path -> is_leaf for every queue of the tree under *root*."""
    kinds: dict[str, bool] = {}
    stack: list[tuple[QueueConfig, str]] = [(root, root.name)]
    while stack:
        queue, path = stack.pop()
        kinds[path] = not queue.children
        stack.extend((child, f"{path}.{child.name}") for child in queue.children)
    return kinds


def parse_ask(data: object, kinds: Mapping[str, bool], *, field: str = "ask") -> Ask:
    """Validate one ask against a queue tree (*kinds*: :func:`queue_kinds`); its queue is a leaf.

    Raises:
        ScenarioError: naming the offending field under *field*.
    """
    return _ask(data, field, kinds)


def parse_asks(data: object, kinds: Mapping[str, bool], *, field: str = "asks") -> tuple[Ask, ...]:
    """Validate a list of asks as a round's ``asks``: each a valid ask, keys unique.

    Raises:
        ScenarioError: naming the offending field under *field*.
    """
    asks: list[Ask] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list(data, field)):
        ask = _ask(raw, f"{field}[{i}]", kinds)
        if ask.key in seen:
            raise ScenarioError(f"{field}[{i}].key", f"duplicate ask key {ask.key!r}")
        seen.add(ask.key)
        asks.append(ask)
    return tuple(asks)


# -- back to JSON --------------------------------------------------------------


def _queue_to_dict(q: QueueConfig) -> dict[str, object]:
    out: dict[str, object] = {"name": q.name}
    if q.guaranteed is not None:
        out["guaranteed"] = dict(q.guaranteed)
    if q.max is not None:
        out["max"] = dict(q.max)
    if q.properties:
        out["properties"] = dict(q.properties)
    if q.quota_preemption_delay is not None:
        out["quota_preemption_delay"] = q.quota_preemption_delay
    if q.children:
        out["children"] = [_queue_to_dict(c) for c in q.children]
    return out


def ask_to_dict(a: Ask) -> dict[str, object]:
    """An ask as its JSON object."""
    return {
        "key": a.key,
        "app": a.app,
        "queue": a.queue,
        "resources": dict(a.resources),
        "priority": a.priority,
        "allow_preempt_other": a.allow_preempt_other,
        "created": a.created,
    }


def allocation_to_dict(a: Allocation) -> dict[str, object]:
    """An allocation as its JSON object."""
    return {
        "key": a.key,
        "app": a.app,
        "queue": a.queue,
        "node": a.node,
        "resources": dict(a.resources),
        "priority": a.priority,
        "originator": a.originator,
        "allow_preemption": a.allow_preemption,
        "created": a.created,
        "required_node": a.required_node,
        "preempted": a.preempted,
    }


def request_to_dict(r: Request) -> dict[str, object]:
    """A request as its JSON object."""
    if isinstance(r, PreemptRequest):
        return {"type": r.type, "ask": ask_to_dict(r.ask)}
    if isinstance(r, QuotaChangeRequest):
        return {
            "type": r.type,
            "queue": r.queue,
            "new_max": None if r.new_max is None else dict(r.new_max),
        }
    if isinstance(r, ResourcesRequest):
        return {"type": r.type, "queue": r.queue}
    cap: Resource | None = r.max_preempted
    return {
        "type": r.type,
        "asks": [ask_to_dict(a) for a in r.asks],
        "max_preempted": None if cap is None else dict(cap),
    }


def cluster_to_dict(c: Cluster) -> dict[str, object]:
    """The cluster part of a scenario document."""
    return {
        "partition": {
            "quota_preemption_enabled": c.partition.quota_preemption_enabled,
            "miss": c.partition.miss,
        },
        "queues": _queue_to_dict(c.root),
        "nodes": [
            {"id": n.id, "capacity": dict(n.capacity), "schedulable": n.schedulable}
            for n in c.nodes
        ],
        "allocations": [allocation_to_dict(a) for a in c.allocations],
    }


def scenario_to_dict(s: Scenario) -> dict[str, object]:
    """The JSON document of *s*; ``parse_scenario`` of it gives back an equal scenario."""
    out = cluster_to_dict(s.cluster)
    out["now"] = s.now
    out["request"] = request_to_dict(s.request)
    return out


def answer_from_dict(request_type: str, data: Mapping[str, object]) -> object:
    """The answer object of a *request_type* request from its JSON object (``to_dict``'s inverse).

    Used to read stored answers back (the dashboard keeps them as JSON).

    Raises:
        ValueError: unknown request type or a malformed answer.
    """
    if request_type in ("preempt", "round"):
        from engine.answers import PreemptAnswer, RoundAnswer

        if request_type == "preempt":
            return PreemptAnswer.from_dict(data)
        return RoundAnswer.from_dict(data)
    if request_type == "resources":
        from engine.queues import ResourcesAnswer

        return ResourcesAnswer.from_dict(data)
    if request_type == "quota_change":
        from engine.quota import QuotaAnswer

        return QuotaAnswer.from_dict(data)
    raise ValueError(f"unknown request type {request_type!r}")
