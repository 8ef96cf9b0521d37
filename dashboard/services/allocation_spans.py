"""Allocations stored once per span of consecutive snapshots, and the snapshot views of them.

A poll of a busy cluster sees nearly the same hundred thousand allocations as the
poll before. Each allocation is stored once as an :class:`AllocationSpan` that
starts at the first snapshot holding it and ends (``gone_in``) at the first later
snapshot of its partition that no longer holds it unchanged; storing a snapshot
writes only the allocations that appeared or changed and closes the spans of those
that left or changed. Every reader of a snapshot's allocations goes through
:func:`snapshot_allocations`, and the stored scenario document (whose JSON keeps
everything but the allocations) is rebuilt whole by :func:`stored_scenario`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from django.db.models import Exists, OuterRef, Q, QuerySet

from dashboard import models
from dashboard.services.bulk import insert_rows
from engine import model as em
from engine.scenario import allocation_to_dict

#: The columns of a span holding the allocation itself (the engine's fields, then extras).
CONTENT_FIELDS = (
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
)

_CLOSE_BATCH = 2000

Extras = tuple[bool, bool, str]
_NO_EXTRAS: Extras = (False, False, "")


def held_by(snapshot_id: int) -> Q:
    """The spans (of the snapshot's partition) a snapshot with id *snapshot_id* holds."""
    return Q(first_seen__lte=snapshot_id) & (Q(gone_in__isnull=True) | Q(gone_in__gt=snapshot_id))


def snapshot_allocations(snapshot: models.ClusterSnapshot) -> QuerySet[models.AllocationSpan]:
    """The allocations of a stored snapshot (one row per allocation key)."""
    return models.AllocationSpan.objects.filter(
        held_by(snapshot.pk), partition=snapshot.partition_id
    )


def allocation_extras(scenario: Mapping[str, object]) -> dict[str, Extras]:
    """Allocation key -> (placeholder, placeholder used, task group) from a scenario's allocations.

    The importer may put these beside the engine's fields; absent, they are
    ``(False, False, "")``.
    """
    out: dict[str, Extras] = {}
    raw = scenario.get("allocations")
    if not isinstance(raw, list):
        return out
    for a in raw:
        if not isinstance(a, Mapping):
            continue
        extras = (
            bool(a.get("placeholder", False)),
            bool(a.get("placeholder_used", False)),
            str(a.get("task_group") or ""),
        )
        if extras != _NO_EXTRAS:
            out[str(a.get("key"))] = extras
    return out


def _content(a: em.Allocation, extras: Extras) -> tuple[object, ...]:
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


def _digest(content: Sequence[object]) -> str:
    # resources sorted and created a float: equal allocations hash equal however they were read
    resources = content[4]
    assert isinstance(resources, dict)
    created = content[10]
    assert isinstance(created, int | float)
    text = repr(
        (*content[:4], sorted(resources.items()), *content[5:10], float(created), *content[11:])
    )
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def write_allocations(
    partition: models.Partition,
    snapshot_id: int,
    allocations: Iterable[em.Allocation],
    extras: Mapping[str, Extras] | None = None,
) -> tuple[int, int]:
    """Store a new snapshot's allocations as spans: (spans written, spans closed).

    *snapshot_id* must be the newest snapshot of *partition* (the caller holds the
    partition's row lock inside its transaction, so two imports of one partition
    take turns). Allocations equal to a current span extend it for free; new or
    changed ones start a span; current spans not seen again end at *snapshot_id*.
    """
    extras = extras or {}
    current = {
        key: (pk, digest)
        for pk, key, digest in models.AllocationSpan.objects.filter(
            partition=partition, gone_in__isnull=True
        ).values_list("pk", "key", "digest")
    }
    closed: list[int] = []
    fresh: list[tuple[object, ...]] = []
    for a in allocations:
        content = _content(a, extras.get(a.key, _NO_EXTRAS))
        digest = _digest(content)
        was = current.pop(a.key, None)
        if was is not None:
            if was[1] == digest:
                continue
            closed.append(was[0])
        fresh.append((partition.pk, snapshot_id, digest, *content))
    closed.extend(pk for pk, _ in current.values())
    for i in range(0, len(closed), _CLOSE_BATCH):
        models.AllocationSpan.objects.filter(pk__in=closed[i : i + _CLOSE_BATCH]).update(
            gone_in=snapshot_id
        )
    insert_rows(
        models.AllocationSpan,
        ("partition", "first_seen", "digest", *CONTENT_FIELDS),
        fresh,
    )
    return len(fresh), len(closed)


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


def stored_scenario(snapshot: models.ClusterSnapshot) -> dict[str, object]:
    """The scenario document a snapshot was stored with, allocations (sorted by key) included.

    The snapshot's JSON column holds the document without its allocations; they are
    read back from the spans the snapshot holds.
    """
    doc = dict(snapshot.scenario)
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
    unused = models.AllocationSpan.objects.filter(
        (Q(gone_in__isnull=True) & ~Exists(in_window))
        | (Q(gone_in__isnull=False) & ~Exists(in_window.filter(pk__lt=OuterRef("gone_in"))))
    )
    if partition_ids is not None:
        unused = unused.filter(partition_id__in=list(partition_ids))
    deleted, _ = unused.delete()
    return deleted
