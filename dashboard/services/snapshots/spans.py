"""A snapshot's nodes, applications and allocations, each stored once per span of snapshots.

A poll of a busy cluster sees nearly the same hundred thousand allocations (and
thousands of nodes and applications) as the poll before. Each item is stored once
as a span (:class:`~dashboard.models.AllocationSpan`, ``NodeSpan``,
``ApplicationSpan``) that starts at the first snapshot holding it and ends
(``gone_in``) at the first later snapshot of its partition that no longer holds it
unchanged; storing a snapshot writes only what appeared or changed and closes the
spans of what left or changed. Every reader goes through :func:`snapshot_allocations`,
:func:`snapshot_nodes` and :func:`snapshot_applications`, and the stored scenario
document (whose JSON column keeps everything but the nodes and allocations) is
rebuilt whole by :func:`stored_scenario`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from json.encoder import encode_basestring_ascii  # in C
from typing import Any, TypeVar, cast

import msgspec
from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet

from dashboard import models
from dashboard.plumbing.bulk import insert_rows
from engine import model as em
from engine.scenario import allocation_to_dict

#: The columns of an allocation span holding the allocation (the engine's fields, then extras).
ALLOCATION_FIELDS = (
    "key",
    "app",
    "queue",
    "node",
    "resources",
    "priority",
    "originator",
    "allow_preemption",
    "required_node",
    "preempted",
    "created",
    "placeholder",
    "placeholder_used",
    "task_group",
    "pod",
)
NODE_FIELDS = (
    "node_id",
    "capacity",
    "allocated",
    "schedulable",
    "reported_capacity",
    "occupied",
    "foreign_pods",
)
APPLICATION_FIELDS = ("app_id", "queue", "state", "used", "pending", "details")
#: Every span model, for the clean-up after snapshots are deleted.
SPAN_MODELS: tuple[type[models.Span], ...] = (
    models.AllocationSpan,
    models.NodeSpan,
    models.ApplicationSpan,
)

_CLOSE_BATCH = 2000

Extras = tuple[bool, bool, str]
_NO_EXTRAS: Extras = (False, False, "")
S = TypeVar("S", bound=models.Span)
T = TypeVar("T")


def held_by(snapshot_id: int) -> Q:
    """The spans (of the snapshot's partition) a snapshot with id *snapshot_id* holds."""
    return Q(first_seen__lte=snapshot_id) & (Q(gone_in__isnull=True) | Q(gone_in__gt=snapshot_id))


def _held(model: type[S], snapshot: models.ClusterSnapshot) -> QuerySet[S]:
    return model._default_manager.filter(held_by(snapshot.pk), partition=snapshot.partition_id)


def snapshot_allocations(snapshot: models.ClusterSnapshot) -> QuerySet[models.AllocationSpan]:
    """The allocations of a stored snapshot (one row per allocation key)."""
    return _held(models.AllocationSpan, snapshot)


def snapshot_nodes(snapshot: models.ClusterSnapshot) -> QuerySet[models.NodeSpan]:
    """The nodes of a stored snapshot (one row per node id)."""
    return _held(models.NodeSpan, snapshot)


def snapshot_applications(snapshot: models.ClusterSnapshot) -> QuerySet[models.ApplicationSpan]:
    """The applications of a stored snapshot (one row per application id)."""
    return _held(models.ApplicationSpan, snapshot)


def write_spans(
    model: type[models.Span],
    partition: models.Partition,
    snapshot_id: int,
    fields: Sequence[str],
    items: Iterable[tuple[str, str, T]],
    content: Callable[[T], Sequence[object]],
) -> tuple[int, int]:
    """Store a new snapshot's items of one kind as spans: (spans written, spans closed).

    *items* are (key, digest, item) triples; ``content(item)`` gives the item's columns
    in *fields* order starting with its key (asked only of the items written: on a
    poll, the few that changed). *snapshot_id* must be the newest
    snapshot of *partition* (the caller holds the partition's row lock inside its
    transaction, so two imports of one partition take turns). Items equal to a
    current span extend it for free; new or changed ones start a span; current
    spans not seen again end at *snapshot_id*.
    """
    key_field = fields[0]
    # unordered: the models' default order would join the partition and cluster to
    # every row and sort a big cluster's hundred thousand of them, for a dict
    open_spans = (
        model._default_manager.filter(partition=partition, gone_in__isnull=True)
        .order_by()
        .values_list(key_field, "digest")
    )
    # a big cluster's hundred thousand rows: fetched at once, without Django's rows
    sql, params = open_spans.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        current: dict[str, str] = dict(cursor.fetchall())  # key -> digest
    closed: list[str] = []  # keys whose open span ends here
    written = 0

    def fresh() -> Iterable[tuple[object, ...]]:
        # streamed into the table (a first import is every item): the spans they
        # replace are closed afterwards, their first_seen differs
        nonlocal written
        for key, digest, item in items:
            was = current.pop(key, None)
            if was is not None:
                if was == digest:
                    continue
                closed.append(key)
            written += 1
            yield (partition.pk, snapshot_id, digest, *content(item))

    insert_rows(model, ("partition", "first_seen", "digest", *fields), fresh())
    closed.extend(current)
    # the open spans of those keys from before this snapshot (not the ones just written)
    before = model._default_manager.filter(
        partition=partition, gone_in__isnull=True, first_seen__lt=snapshot_id
    )
    for i in range(0, len(closed), _CLOSE_BATCH):
        before.filter(**{f"{key_field}__in": closed[i : i + _CLOSE_BATCH]}).update(
            gone_in=snapshot_id
        )
    return written, len(closed)


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


#: Compact JSON with dict keys sorted, UTF-8, floats in their shortest form: for the
#: common row (ASCII text, no float past 1e16) byte for byte what ``json.dumps(...,
#: sort_keys=True, separators=(",", ":"))`` writes, and faster.
_SORTED_JSON = msgspec.json.Encoder(order="sorted")


def json_digest(content: Sequence[object]) -> str:
    """The digest of JSON-able content (dict keys sorted: equal values hash equal).

    A poll digests every node and application it read (a big cluster's fifteen
    thousand rows): the text is msgspec's. Content msgspec does not write sorted (a
    dict with keys that are not text) takes the standard library's text. msgspec
    writes a NaN or an infinity as ``null``, so such a value would digest as None
    does; none reaches a row: the importers' JSON refuses NaN, Infinity and numbers
    past the largest float, and every float of a row is computed from checked
    integers (times in ns or ms).
    """
    try:
        return hashlib.blake2b(_SORTED_JSON.encode(content), digest_size=8).hexdigest()
    except (TypeError, ValueError, OverflowError, msgspec.MsgspecError):
        pass
    try:
        text = json.dumps(content, sort_keys=True, separators=(",", ":"))
    except TypeError:  # keys of mixed types do not sort: a changed order is then a change
        text = json.dumps(content, separators=(",", ":"))
    return _hash(text)


def _allocation_content(a: em.Allocation, extras: Extras) -> tuple[object, ...]:
    return (
        a.key,
        a.app,
        a.queue,
        a.node,
        dict(a.resources),
        a.priority,
        a.originator,
        a.allow_preemption,
        a.required_node,
        a.preempted,
        a.created,
        *extras,
    )


def allocation_digest(content: Sequence[object]) -> str:
    """The digest of an allocation's content (in :data:`ALLOCATION_FIELDS` order).

    The pod's name is not part of it: it is the name of the pod whose uid is the
    allocation's key, which never changes.
    """
    fields = dict(zip(ALLOCATION_FIELDS[:11], content[:11], strict=True))
    a = em.Allocation(**fields)  # type: ignore[arg-type]
    return engine_allocation_digest(a, cast(Extras, tuple(content[11:14])))


def engine_allocation_digest(a: em.Allocation, extras: Extras) -> str:
    """The digest of an allocation span holding *a* with its *extras*.

    It hashes the allocation's text in the snapshot checksum (:func:`allocation_json`,
    what ``json.dumps(sort_keys=True)`` writes), its creation time written as a float
    (equal allocations hash equal however they were read), then the extras: the
    checksum gives each allocation's text to :func:`allocation_text_digest` as it
    writes it, so a poll writes that text once per allocation.
    """
    if type(a.created) is not float:
        a = replace(a, created=float(a.created))
    return allocation_text_digest(allocation_json(a), extras)


#: The text of an allocation without gang extras after its checksum text.
_NO_EXTRAS_TEXT = f" {_NO_EXTRAS!r}"


def allocation_text_digest(text: str, extras: Extras) -> str:
    """The span digest of an allocation whose :func:`allocation_json` text is *text*
    (its ``created`` a float) with gang *extras*."""
    more = _NO_EXTRAS_TEXT if extras is _NO_EXTRAS or extras == _NO_EXTRAS else f" {extras!r}"
    return hashlib.blake2b((text + more).encode(), digest_size=8).hexdigest()


_JSON_BOOL = {True: "true", False: "false"}
#: A resource map's JSON text (keys sorted) by its items: a cluster's pods ask alike.
_RESOURCE_JSON: dict[tuple[tuple[str, int], ...], str] = {}
_MAX_RESOURCE_JSON = 4096


def allocation_json(a: em.Allocation) -> str:
    """``json.dumps(allocation_to_dict(a), sort_keys=True)``, written directly.

    The checksum of a big cluster's snapshot writes a hundred thousand of these:
    built from one format string instead of a dict and the encoder's walk. Any value
    of an unexpected type (for which the text could differ) takes ``json.dumps``.
    """
    return allocation_json_with(a, resource_json(a.resources))


def resource_json(res: Mapping[str, int]) -> str | None:
    """The JSON text of a resource map of names and integers (keys sorted, without the
    braces); None for a map holding anything else (``json.dumps`` then writes it)."""
    items = tuple(res.items())
    if not all(type(t) is str and type(q) is int for t, q in items):
        return None
    text = _RESOURCE_JSON.get(items)  # (1 == True == 1.0: only int maps get here)
    if text is None:
        q = encode_basestring_ascii
        text = ", ".join([f"{q(t)}: {res[t]}" for t in sorted(res)])
        if len(_RESOURCE_JSON) >= _MAX_RESOURCE_JSON:
            _RESOURCE_JSON.clear()
        _RESOURCE_JSON[items] = text
    return text


def allocation_json_with(a: em.Allocation, resources: str | None) -> str:
    """:func:`allocation_json` of *a*, *resources* being :func:`resource_json` of its
    resource map (a caller writing many allocations sharing maps takes it once per map)."""
    created = a.created
    if resources is None or not (
        type(a.key) is str
        and type(a.app) is str
        and type(a.queue) is str
        and type(a.node) is str
        and type(a.priority) is int
        and type(a.originator) is bool
        and type(a.allow_preemption) is bool
        and type(a.required_node) is bool
        and type(a.preempted) is bool
        and (type(created) is int or (type(created) is float and -_FINITE <= created <= _FINITE))
    ):
        return json.dumps(allocation_to_dict(a), sort_keys=True)
    q = encode_basestring_ascii
    return (
        f'{{"allow_preemption": {_JSON_BOOL[a.allow_preemption]}, "app": {q(a.app)}, '
        f'"created": {created!r}, "key": {q(a.key)}, "node": {q(a.node)}, '
        f'"originator": {_JSON_BOOL[a.originator]}, "preempted": {_JSON_BOOL[a.preempted]}, '
        f'"priority": {a.priority}, "queue": {q(a.queue)}, '
        f'"required_node": {_JSON_BOOL[a.required_node]}, "resources": {{{resources}}}}}'
    )


#: The largest float: a float within +-this is finite (json.dumps writes it as repr).
_FINITE = 1.7976931348623157e308


def write_allocations(
    partition: models.Partition,
    snapshot_id: int,
    allocations: Iterable[em.Allocation],
    extras: Mapping[str, Extras] | None = None,
    digests: Mapping[str, str] | None = None,
    pods: Mapping[str, str] | None = None,
) -> tuple[int, int]:
    """Store a new snapshot's allocations as spans (see :func:`write_spans`).

    *pods*: allocation key -> ``namespace/name`` of its pod, where known. A span's pod
    is written when the span starts and is not part of its digest (the allocation key
    is the pod's uid: its name never changes).

    *digests*: allocation key -> its :func:`engine_allocation_digest`, where the caller
    has taken them already (the checksum does, from the text it writes); the others
    are taken here.
    """
    extras = extras or {}
    digests = digests or {}
    pod_of = (pods or {}).get

    def items() -> Iterable[tuple[str, str, em.Allocation]]:
        for a in allocations:
            digest = digests.get(a.key) or engine_allocation_digest(
                a, extras.get(a.key, _NO_EXTRAS)
            )
            yield a.key, digest, a

    def content(a: em.Allocation) -> Sequence[object]:
        return (*_allocation_content(a, extras.get(a.key, _NO_EXTRAS)), pod_of(a.key, "")[:600])

    return write_spans(
        models.AllocationSpan, partition, snapshot_id, ALLOCATION_FIELDS, items(), content
    )


def write_json_spans(
    model: type[models.Span],
    partition: models.Partition,
    snapshot_id: int,
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
) -> tuple[int, int]:
    """Store a new snapshot's nodes or applications (JSON-able rows) as spans."""
    return write_spans(
        model,
        partition,
        snapshot_id,
        fields,
        ((str(r[0]), json_digest(r), r) for r in rows),
        tuple,
    )


def engine_allocations(snapshot: models.ClusterSnapshot) -> tuple[em.Allocation, ...]:
    """The engine's allocations of a stored snapshot, sorted by key."""
    rows = (
        snapshot_allocations(snapshot)
        .order_by("key")
        .values_list(
            "key",
            "queue",
            "node",
            "resources",
            "app",
            "priority",
            "originator",
            "allow_preemption",
            "created",
            "required_node",
            "preempted",
        )
    )
    return tuple(
        em.Allocation(
            key=key,
            queue=queue,
            node=node,
            resources=dict(resources),
            app=app,
            priority=priority,
            originator=originator,
            allow_preemption=allow,
            created=created,
            required_node=required,
            preempted=was_preempted,
        )
        for (
            key,
            queue,
            node,
            resources,
            app,
            priority,
            originator,
            allow,
            created,
            required,
            was_preempted,
        ) in rows.iterator(chunk_size=5000)
    )


def engine_nodes(snapshot: models.ClusterSnapshot) -> tuple[em.Node, ...]:
    """The engine's nodes of a stored snapshot, sorted by id."""
    return tuple(
        em.Node(id=node_id, capacity=dict(capacity), schedulable=schedulable)
        for node_id, capacity, schedulable in snapshot_nodes(snapshot)
        .order_by("node_id")
        .values_list("node_id", "capacity", "schedulable")
        .iterator(chunk_size=5000)
    )


def stored_scenario(snapshot: models.ClusterSnapshot) -> dict[str, object]:
    """The scenario document a snapshot was stored with, nodes and allocations included.

    The snapshot's JSON column holds the document without them; they are read back
    from the spans the snapshot holds (nodes sorted by id, allocations by key, as
    they were stored).
    """
    doc = dict(snapshot.scenario)
    doc["nodes"] = [
        {"id": n.id, "capacity": dict(n.capacity), "schedulable": n.schedulable}
        for n in engine_nodes(snapshot)
    ]
    doc["allocations"] = [allocation_to_dict(a) for a in engine_allocations(snapshot)]
    return doc


def drop_unused_spans(partition_ids: Iterable[int] | None = None) -> int:
    """Delete the spans no remaining snapshot of their partition holds; how many went.

    Run after snapshots are deleted (retention), on the partitions they were of
    (all partitions when *partition_ids* is None).
    """
    in_window = models.ClusterSnapshot.objects.filter(
        partition_id=OuterRef("partition_id"), pk__gte=OuterRef("first_seen")
    )
    unused = (Q(gone_in__isnull=True) & ~Exists(in_window)) | (
        Q(gone_in__isnull=False) & ~Exists(in_window.filter(pk__lt=OuterRef("gone_in")))
    )
    ids = None if partition_ids is None else list(partition_ids)
    deleted = 0
    for model in SPAN_MODELS:
        qs = model._default_manager.filter(unused)
        if ids is not None:
            qs = qs.filter(partition_id__in=ids)
        count, _ = qs.delete()
        deleted += count
    return deleted
