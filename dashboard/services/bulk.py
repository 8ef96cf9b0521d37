"""Bulk inserts of plain value tuples (a large snapshot is a hundred thousand rows)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Field, JSONField, Model


def insert_rows(
    model: type[Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    batch: int = 2000,
) -> None:
    """Write plain value tuples into *model*'s table, without model instances.

    ``bulk_create`` spends ≈ 100 µs of Python per row building and compiling model
    instances; a snapshot of a 100,000-allocation cluster is that many rows. On
    PostgreSQL (psycopg 3) the rows are streamed with ``COPY ... FROM STDIN``;
    elsewhere they are INSERTed in batches of *batch*. The SQL is built from the
    model's own table and column names, JSON values are written as their field would
    (JSON text; ``None`` is SQL NULL), and a foreign key takes the related row's
    primary key. Must run inside the caller's transaction: a failure part-way
    leaves nothing once it rolls back.
    """
    fields: list[Field[Any, Any]] = []
    for name in names:
        field = model._meta.get_field(name)
        if not isinstance(field, Field) or not field.column:
            raise TypeError(f"{model.__name__}.{name} is not a concrete column")
        fields.append(field)
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    columns = ", ".join(quote(str(f.column)) for f in fields)
    json_at = [i for i, f in enumerate(fields) if isinstance(f, JSONField)]
    with connection.cursor() as cursor:
        raw = cursor.cursor
        if connection.vendor == "postgresql" and hasattr(raw, "copy"):
            _copy_rows(raw, f"COPY {table} ({columns}) FROM STDIN", fields, json_at, rows)
            return
        placeholders = ", ".join(["%s"] * len(fields))
        sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
        pending: list[list[Any]] = []
        for values in rows:
            out = list(values)
            for i in json_at:
                out[i] = fields[i].get_db_prep_save(out[i], connection)
            pending.append(out)
            if len(pending) >= batch:
                cursor.executemany(sql, pending)
                pending.clear()
        if pending:
            cursor.executemany(sql, pending)


def _copy_rows(
    raw: Any,
    sql: str,
    fields: Sequence[Field[Any, Any]],
    json_at: Sequence[int],
    rows: Iterable[Sequence[Any]],
) -> None:
    """Stream *rows* through psycopg 3's ``COPY`` (text format: PostgreSQL parses each
    column as its own type, JSON text included); errors become Django's."""
    encoders: dict[int, json.JSONEncoder] = {}
    for i in json_at:
        encoder = getattr(fields[i], "encoder", None)  # the field's own, as Django would
        encoders[i] = encoder() if encoder is not None else json.JSONEncoder()
    with connection.wrap_database_errors, raw.copy(sql) as copy:
        if not json_at:
            for values in rows:
                copy.write_row(values)
            return
        for values in rows:
            out = list(values)
            for i, enc in encoders.items():
                if out[i] is not None:
                    out[i] = enc.encode(out[i])
            copy.write_row(out)
