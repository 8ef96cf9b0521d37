"""Allocation span digests taken from the allocation's text in the snapshot checksum.

A poll compares each allocation's digest with those of the open spans (``gone_in``
null) and writes only what changed. The digest was the hash of ``repr`` of the
allocation's fields; it is now the hash of the allocation's text in the snapshot
checksum (``json.dumps`` of the allocation with sorted keys, ``created`` as a
float) followed by its gang extras, so that a poll writes one text per allocation
instead of two. The open spans' digests are recomputed here (both ways), so the
first poll after the upgrade still recognises every unchanged allocation. Closed
spans are never compared again: theirs are left as they are.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import migrations

BATCH = 2000


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


#: The columns hashed, in this order.
FIELDS = (
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


def new_digest(row: tuple[Any, ...]) -> str:
    # the same hash as dashboard.services.snapshots.spans.engine_allocation_digest (frozen here)
    key, app, queue, node, resources, priority, originator, allow, required, preempted = row[:10]
    text = json.dumps(
        {
            "key": key,
            "app": app,
            "queue": queue,
            "node": node,
            "resources": dict(resources),
            "priority": priority,
            "originator": originator,
            "allow_preemption": allow,
            "created": float(row[10]),
            "required_node": required,
            "preempted": preempted,
        },
        sort_keys=True,
    )
    return _hash(f"{text} {row[11:]!r}")


def old_digest(row: tuple[Any, ...]) -> str:
    # the hash of 0011_snapshot_spans.allocation_digest (frozen here)
    return _hash(repr((*row[:4], sorted(dict(row[4]).items()), *row[5:10], float(row[10]), *row[11:])))


def _redigest(apps: Any, schema_editor: Any, digest_of: Any) -> None:
    Span = apps.get_model("dashboard", "AllocationSpan")
    rows = (
        Span.objects.filter(gone_in__isnull=True)
        .order_by("pk")
        .values_list("pk", "digest", *FIELDS)
        .iterator(chunk_size=BATCH)
    )
    pk = schema_editor.quote_name(Span._meta.pk.column)
    sql = f"UPDATE {schema_editor.quote_name(Span._meta.db_table)} SET digest = %s WHERE {pk} = %s"
    changed: list[tuple[str, int]] = []
    with schema_editor.connection.cursor() as cursor:
        for span_id, was, *content in rows:
            digest = digest_of(tuple(content))
            if digest != was:
                changed.append((digest, span_id))
            if len(changed) >= BATCH:
                cursor.executemany(sql, changed)
                changed = []
        if changed:
            cursor.executemany(sql, changed)


def forward(apps: Any, schema_editor: Any) -> None:
    _redigest(apps, schema_editor, new_digest)


def backward(apps: Any, schema_editor: Any) -> None:
    _redigest(apps, schema_editor, old_digest)


class Migration(migrations.Migration):
    dependencies = [
        ("dashboard", "0014_read_caches"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
