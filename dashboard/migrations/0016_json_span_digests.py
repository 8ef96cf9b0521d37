"""Node and application span digests taken from msgspec's sorted JSON text.

A poll compares each node's and application's digest with those of the open spans
(``gone_in`` null) and writes only what changed. The digest was the hash of
``json.dumps(row, sort_keys=True, separators=(",", ":"))``; it is now the hash of
msgspec's writing of the same row with sorted keys, the same bytes for the common row
but not for text beyond ASCII or floats written with an exponent. The open spans'
digests are recomputed here (both ways), so that the first poll after the upgrade
still recognises every unchanged node and application. Closed spans are never compared
again: theirs are left as they are.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import msgspec
from django.db import migrations

BATCH = 2000

#: The columns hashed, in this order, per span model.
FIELDS = {
    "NodeSpan": (
        "node_id",
        "capacity",
        "allocated",
        "schedulable",
        "reported_capacity",
        "occupied",
        "foreign_pods",
    ),
    "ApplicationSpan": ("app_id", "queue", "state", "used", "pending", "details"),
}

_SORTED = msgspec.json.Encoder(order="sorted")


def _old_text(row: tuple[Any, ...]) -> str:
    try:
        return json.dumps(row, sort_keys=True, separators=(",", ":"))
    except TypeError:
        return json.dumps(row, separators=(",", ":"))


def new_digest(row: tuple[Any, ...]) -> str:
    # the same hash as dashboard.services.snapshots.spans.json_digest (frozen here)
    try:
        return hashlib.blake2b(_SORTED.encode(row), digest_size=8).hexdigest()
    except (TypeError, ValueError, OverflowError, msgspec.MsgspecError):
        return old_digest(row)


def old_digest(row: tuple[Any, ...]) -> str:
    # the hash of json_digest before this migration (frozen here)
    return hashlib.blake2b(_old_text(row).encode(), digest_size=8).hexdigest()


def _redigest(apps: Any, schema_editor: Any, digest_of: Any) -> None:
    for model_name, fields in FIELDS.items():
        Span = apps.get_model("dashboard", model_name)
        rows = (
            Span.objects.filter(gone_in__isnull=True)
            .order_by("pk")
            .values_list("pk", "digest", *fields)
            .iterator(chunk_size=BATCH)
        )
        table = schema_editor.quote_name(Span._meta.db_table)
        pk = schema_editor.quote_name(Span._meta.pk.column)
        sql = f"UPDATE {table} SET digest = %s WHERE {pk} = %s"
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
        ("dashboard", "0015_allocation_span_digests"),
    ]

    operations = [
        migrations.RunPython(forward, backward),
    ]
