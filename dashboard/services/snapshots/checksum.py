"""A snapshot's scenario validated by the engine, and the checksum it is stored with.

The checksum is SHA-256 of the validated scenario's JSON with nodes and
allocations sorted (the scheduler lists them in map order), hashed a slice at a
time; :func:`dashboard.services.snapshots.store.store_snapshot` takes each
allocation's span digest from the same text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from operator import attrgetter
from typing import cast

from dashboard.importers.quantities import QuantityError, check_resource_type
from dashboard.plumbing.errors import ImportRejected
from dashboard.services.snapshots.spans import (
    _NO_EXTRAS,
    Extras,
    allocation_json_with,
    allocation_text_digest,
    resource_json,
)
from engine import model as em
from engine.errors import ScenarioError
from engine.scenario import cluster_to_dict, parse_asks, parse_cluster, parse_now, queue_kinds


def validated_cluster(scenario: Mapping[str, object], field: str) -> em.Cluster:
    """Run the engine's own validation over a scenario's cluster part (and its ``now``)."""
    try:
        parse_now(scenario)
        cluster = parse_cluster(scenario)
    except ScenarioError as exc:
        raise ImportRejected(f"{field}.{exc.field}" if exc.field else field, exc.message) from exc
    check_resource_types(cluster, field)
    return cluster


def check_resource_types(cluster: em.Cluster, field: str) -> None:
    """Hold every resource type of *cluster* to the one rule for their names
    (``quantities.check_resource_type``: the what-if's and the file imports' rule)."""
    seen: set[str] = set()

    def check(resource: Mapping[str, int] | None, where: str) -> None:
        for name in resource or ():
            if name in seen:
                continue
            try:
                check_resource_type(name)
            except QuantityError as exc:
                raise ImportRejected(f"{field}.{where}", str(exc)) from None
            seen.add(name)

    stack = [cluster.root]
    while stack:
        queue = stack.pop()
        check(queue.guaranteed, f"queues {queue.name} guaranteed")
        check(queue.max, f"queues {queue.name} max")
        stack.extend(queue.children)
    for node in cluster.nodes:
        check(node.capacity, "nodes capacity")
    for allocation in cluster.allocations:
        check(allocation.resources, "allocations resources")


def validated_asks(
    cluster: em.Cluster, asks: Sequence[Mapping[str, object]], field: str
) -> tuple[em.Ask, ...]:
    try:
        return parse_asks([dict(a) for a in asks], queue_kinds(cluster.root))
    except ScenarioError as exc:
        raise ImportRejected(f"{field}.{exc.field}", exc.message) from exc


def scenario_checksum(scenario: Mapping[str, object], cluster: em.Cluster | None = None) -> str:
    """The checksum a snapshot of *scenario* is stored with (its validated cluster).

    *cluster* is the engine's cluster of *scenario* when the caller has it (an
    import validated it already); otherwise the scenario is validated here.
    """
    cluster = cluster or validated_cluster(scenario, "scenario")
    return cluster_checksum(stored_rest(scenario, cluster), cluster)


def stored_rest(scenario: Mapping[str, object], cluster: em.Cluster) -> dict[str, object]:
    """The validated scenario a snapshot stands for, less its nodes and allocations.

    Those are stored once per span of snapshots (:mod:`dashboard.services.snapshots.spans`)
    and read back sorted (nodes by id, allocations by key): the scheduler lists them
    in map order, one order makes equal clusters equal documents (and checksums).
    """
    doc = cluster_to_dict(replace(cluster, nodes=(), allocations=()))
    del doc["nodes"], doc["allocations"]
    if "now" in scenario:
        doc["now"] = scenario["now"]
    return doc


_CHECKSUM_CHUNK = 5000


#: an allocation, its checksum text and its span digest without gang extras (if taken)
_Text = tuple[em.Allocation, str, str | None]


class AllocationTexts:
    """Each allocation's checksum text (and span digest without gang extras) by the
    allocation object, kept from one checksum to the next of one source: a poller's
    parse takes the objects of unchanged nodes from its memo
    (:mod:`dashboard.importers.snapshot.memo`), and their texts are not written again.
    It holds the objects of the last checksum only; an allocation is immutable, so its
    text is a function of the object."""

    def __init__(self) -> None:
        self.known: dict[int, _Text] = {}
        self.reused = 0


def cluster_checksum(
    rest: Mapping[str, object],
    cluster: em.Cluster,
    digests: dict[str, str] | None = None,
    extras: Mapping[str, Extras] | None = None,
    texts: AllocationTexts | None = None,
) -> str:
    """SHA-256 of ``json.dumps(document, sort_keys=True)``, the document being *rest*
    with the cluster's nodes and allocations (sorted), hashed a slice at a time
    instead of held whole (on a big cluster, hundreds of MB of dicts and text).

    *digests*, when given, receives each allocation's span digest (with its gang
    *extras*) taken from the text written here (see
    :func:`~dashboard.services.snapshots.spans.engine_allocation_digest`). *texts*
    keeps the texts for the next checksum of the same source (see :class:`AllocationTexts`).
    """
    h = hashlib.sha256()

    def allocation_texts() -> Iterator[str]:
        # whole-list steps (sort, look-ups, the kept texts' dict) run in C; the Python
        # loops visit only the allocations whose text or digest is not kept
        more = extras or {}
        order = sorted(cluster.allocations, key=attrgetter("key"))
        before = texts.known if texts is not None else {}
        found: list[_Text | None] = [before.get(k) for k in map(id, order)]
        # each resource map's text by the map's identity (an import's allocations share
        # equal maps): the maps are held here, so no other map takes one's id meanwhile
        maps: dict[int, tuple[Mapping[str, int], str | None]] = {}
        new = [
            i
            for i, (hit, a) in enumerate(zip(found, order, strict=True))
            if hit is None or hit[0] is not a
        ]
        for i in new:
            a = order[i]
            res = a.resources
            known = maps.get(id(res))
            if known is None or known[0] is not res:
                known = maps[id(res)] = (res, resource_json(res))
            found[i] = (a, allocation_json_with(a, known[1]), None)
        got = cast(list[_Text], found)  # each one filled above
        if digests is not None:
            gangs = {k for k, g in more.items() if not (g is _NO_EXTRAS or g == _NO_EXTRAS)}
            todo = [i for i, hit in enumerate(got) if hit[2] is None]
            if gangs:
                todo.extend(i for i, a in enumerate(order) if a.key in gangs)
            with_gang: dict[str, str] = {}
            for i in todo:
                a, text, digest = got[i]
                if type(a.created) is not float:  # else written as a float: not kept
                    continue
                gang = more.get(a.key, _NO_EXTRAS)
                digest = allocation_text_digest(text, gang)
                if a.key in gangs:
                    with_gang[a.key] = digest  # kept without its digest
                else:
                    got[i] = (a, text, digest)
            digests.update({a.key: digest for a, _, digest in got if digest is not None})
            digests.update(with_gang)
        if texts is not None:
            texts.reused += len(order) - len(new)
            texts.known = dict(zip(map(id, order), got, strict=True))
        return iter([text for _, text, _ in got])

    # each item's text as json.dumps writes it within a list
    lists: dict[str, Callable[[], Iterator[str]]] = {
        "nodes": lambda: (
            json.dumps(
                {"id": n.id, "capacity": dict(n.capacity), "schedulable": n.schedulable},
                sort_keys=True,
            )
            for n in sorted(cluster.nodes, key=attrgetter("id"))
        ),
        "allocations": allocation_texts,
    }
    h.update(b"{")
    for i, key in enumerate(sorted([*rest, *lists])):
        h.update(f"{', ' if i else ''}{json.dumps(key)}: ".encode())
        if key not in lists:
            h.update(json.dumps(rest[key], sort_keys=True).encode())
            continue
        h.update(b"[")
        items = lists[key]()
        first = True
        while chunk := list(islice(items, _CHECKSUM_CHUNK)):
            h.update(f"{'' if first else ', '}{', '.join(chunk)}".encode())
            first = False
        h.update(b"]")
    h.update(b"}")
    return h.hexdigest()
