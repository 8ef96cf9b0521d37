"""Scenario JSON -> validated frozen dataclasses, and back (scenario-format.md).

Owns the contract's "Validation rules": every bad input raises
:class:`~engine.errors.ScenarioError` whose ``field`` is the JSON path of the
offending value (``allocations[3].resources.vcore``, ``request.ask.queue``,
``queues.children[0].name``).  Parsing is a single lean pass because the
command line must stay within a small factor of plain ``json.load``.

This is also the only engine module that falls back to the wall clock (for a
missing ``now``).

The readers of single values are in :mod:`engine.scenario_fields`, the
cluster part (queues, nodes, allocations, partition) in
:mod:`engine.scenario_cluster`, the way back to JSON in
:mod:`engine.scenario_write`; this module reads the request and ``now`` and
re-exports the public names of the others.

>>> s = parse_scenario({"queues": {"name": "root", "children": [{"name": "a"}]},
...                     "request": {"type": "resources", "queue": "root.a"}}, default_now=5)
>>> s.request, s.now
(ResourcesRequest(queue='root.a', type='resources'), 5.0)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from engine.errors import ScenarioError
from engine.model import (
    Allocation,
    Ask,
    Cluster,
    PreemptRequest,
    QuotaChangeRequest,
    Request,
    ResourcesRequest,
    RoundRequest,
    Scenario,
)
from engine.scenario_cluster import (
    parse_cluster,
    queue_kinds,
    read_allocations,
    read_nodes,
    read_partition,
    read_queue_ref,
    read_queues,
)
from engine.scenario_fields import (
    read_bool,
    read_int32,
    read_key,
    read_list,
    read_number,
    read_object,
    read_optional_limit,
    read_resource,
    read_string,
)
from engine.scenario_write import (
    allocation_to_dict,
    ask_to_dict,
    cluster_to_dict,
    request_to_dict,
    scenario_to_dict,
)

__all__ = [
    "REQUEST_TYPES",
    "allocation_to_dict",
    "answer_from_dict",
    "ask_to_dict",
    "cluster_to_dict",
    "parse_ask",
    "parse_asks",
    "parse_cluster",
    "parse_now",
    "parse_scenario",
    "queue_kinds",
    "request_to_dict",
    "scenario_to_dict",
]

REQUEST_TYPES = ("preempt", "quota_change", "resources", "round")


def _ask(value: object, field: str, kinds: Mapping[str, bool]) -> Ask:
    raw = read_object(value, field)
    app = raw.get("app", "")
    return Ask(
        key=read_key(raw.get("key"), f"{field}.key"),
        queue=read_queue_ref(raw.get("queue"), f"{field}.queue", kinds, leaf=True),
        resources=read_resource(raw.get("resources"), f"{field}.resources", drop_zeros=True),
        app="" if app is None else read_string(app, f"{field}.app"),
        priority=read_int32(raw.get("priority", 0), f"{field}.priority"),
        allow_preempt_other=read_bool(
            raw.get("allow_preempt_other", True), f"{field}.allow_preempt_other"
        ),
        created=read_number(raw.get("created", 0.0), f"{field}.created"),
    )


def _request(value: object, kinds: Mapping[str, bool]) -> Request:
    if value is None:
        raise ScenarioError("request", "is required")
    raw = read_object(value, "request")
    rtype = raw.get("type")
    if rtype == "preempt":
        if raw.get("ask") is None:
            raise ScenarioError("request.ask", "is required")
        return PreemptRequest(ask=_ask(raw["ask"], "request.ask", kinds))
    if rtype == "quota_change":
        queue = read_queue_ref(raw.get("queue"), "request.queue", kinds, leaf=False)
        return QuotaChangeRequest(
            queue=queue, new_max=read_optional_limit(raw.get("new_max"), "request.new_max")
        )
    if rtype == "resources":
        return ResourcesRequest(
            queue=read_queue_ref(raw.get("queue"), "request.queue", kinds, leaf=False)
        )
    if rtype == "round":
        if raw.get("asks") is None:
            raise ScenarioError("request.asks", "is required")
        asks = parse_asks(raw["asks"], kinds, field="request.asks")
        cap = read_optional_limit(raw.get("max_preempted"), "request.max_preempted")
        return RoundRequest(asks=asks, max_preempted=cap)
    if rtype is None:
        raise ScenarioError("request.type", "is required")
    raise ScenarioError("request.type", f"must be one of {', '.join(REQUEST_TYPES)}")


def parse_scenario(
    data: object,
    *,
    default_now: float | None = None,
    built_allocations: Sequence[Allocation | None] | None = None,
) -> Scenario:
    """Validate a decoded scenario document and build its frozen dataclasses.

    Args:
        data: the JSON value (``json.load`` output).
        default_now: ``now`` when the document has none; the wall clock if ``None``.
        built_allocations: the allocations' objects made already (see
            :func:`~engine.scenario_cluster.parse_cluster`).

    Raises:
        ScenarioError: naming the offending field, for anything the contract rejects.
    """
    doc = read_object(data, "scenario")
    if doc.get("queues") is None:
        raise ScenarioError("queues", "is required")
    root, kinds = read_queues(doc["queues"])
    nodes = read_nodes(doc.get("nodes"))
    node_ids = {n.id for n in nodes}
    allocations = read_allocations(doc.get("allocations"), kinds, node_ids, built_allocations)
    request = _request(doc.get("request"), kinds)
    partition = read_partition(doc.get("partition"))
    now_raw = doc.get("now")
    if now_raw is None:
        now = float(time.time() if default_now is None else default_now)
    else:
        now = read_number(now_raw, "now")
    cluster = Cluster(root=root, nodes=nodes, allocations=allocations, partition=partition)
    return Scenario(cluster=cluster, request=request, now=now)


def parse_now(data: object) -> float | None:
    """The ``now`` of a scenario document (``None`` when it has none), checked as by
    :func:`parse_scenario`.

    Raises:
        ScenarioError: for a ``now`` that is not a finite number.
    """
    raw = read_object(data, "scenario").get("now")
    return None if raw is None else read_number(raw, "now")


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
    for i, raw in enumerate(read_list(data, field)):
        ask = _ask(raw, f"{field}[{i}]", kinds)
        if ask.key in seen:
            raise ScenarioError(f"{field}[{i}].key", f"duplicate ask key {ask.key!r}")
        seen.add(ask.key)
        asks.append(ask)
    return tuple(asks)


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
        from engine.quota_answer import QuotaAnswer

        return QuotaAnswer.from_dict(data)
    raise ValueError(f"unknown request type {request_type!r}")
