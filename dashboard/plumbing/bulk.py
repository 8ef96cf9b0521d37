"""Bulk writes: inserts of plain value tuples (a large snapshot is a hundred thousand
rows) and updates of many rows' fields in one statement."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring_ascii  # in C
from typing import Any

from django.db import connection
from django.db.models import Field, JSONField, Model
from django.utils import timezone


def insert_rows(
    model: type[Model],
    names: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    batch: int = 2000,
) -> None:
    """Write plain value tuples into *model*'s table, without model instances.

    ``bulk_create`` builds and compiles a model instance per row, in Python, and
    a snapshot of a 100,000-allocation cluster is that many rows. On
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
    json_at = {i: _json_text(f) for i, f in enumerate(fields) if isinstance(f, JSONField)}
    with connection.cursor() as cursor:
        raw = cursor.cursor
        if connection.vendor == "postgresql" and hasattr(raw, "copy"):
            _copy_rows(raw, f"COPY {table} ({columns}) FROM STDIN", json_at, rows)
            return
        placeholders = ", ".join(["%s"] * len(fields))
        sql = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"
        pending: list[list[Any]] = []
        for values in rows:
            pending.append(_json_as_text(values, json_at))
            if len(pending) >= batch:
                cursor.executemany(sql, pending)
                pending.clear()
        if pending:
            cursor.executemany(sql, pending)


def _copy_rows(
    raw: Any,
    sql: str,
    json_at: dict[int, Callable[[Any], str]],
    rows: Iterable[Sequence[Any]],
) -> None:
    """Stream *rows* through psycopg 3's ``COPY`` (text format: PostgreSQL parses each
    column as its own type, JSON text included); errors become Django's."""
    with connection.wrap_database_errors, raw.copy(sql) as copy:
        if not json_at:
            for values in rows:
                copy.write_row(values)
            return
        for values in rows:
            copy.write_row(_json_as_text(values, json_at))


def _json_as_text(values: Sequence[Any], json_at: dict[int, Callable[[Any], str]]) -> list[Any]:
    """*values* with the JSON columns at *json_at* written as their text (None kept)."""
    out = list(values)
    for i, text in json_at.items():
        if out[i] is not None:
            out[i] = text(out[i])
    return out


def _json_text(field: JSONField[Any]) -> Callable[[Any], str]:
    """The JSON text *field* stores for a value, as Django writes it (``json.dumps`` with
    the field's encoder; ``None`` is SQL NULL and never reaches this).

    Resource maps (names -> integers) are most of a snapshot's JSON values: they are
    written here directly, character for character what ``json.dumps`` writes, without
    building an encoder per value.
    """
    if field.encoder is not None:
        encoder = field.encoder()
        return encoder.encode
    encode = json.JSONEncoder().encode

    def text(value: Any) -> str:
        if type(value) is dict:
            parts = []
            for k, q in value.items():
                if type(k) is not str or type(q) is not int:
                    return encode(value)
                parts.append(f"{encode_basestring_ascii(k)}: {q}")
            return "{" + ", ".join(parts) + "}"
        return encode(value)

    return text


def update_rows(objs: Sequence[Model], names: Sequence[str], *, batch: int = 2000) -> None:
    """Write the fields *names* of every one of *objs* (saved rows of one model) in one
    statement per *batch* rows, as ``save(update_fields=names)`` of each would (an
    ``auto_now`` field among *names* takes the time now).

    ``bulk_update`` writes one ``CASE WHEN id = ... THEN ...`` per field, which the
    server evaluates row by row against every branch: on PostgreSQL the values are
    joined instead (``UPDATE ... FROM (VALUES ...)``, each value cast to its column's
    type); elsewhere ``bulk_update`` serves.
    """
    if not objs:
        return
    model = type(objs[0])
    fields: list[Field[Any, Any]] = []
    for name in names:
        field = model._meta.get_field(name)
        if not isinstance(field, Field) or not field.column or field.primary_key:
            raise TypeError(f"{model.__name__}.{name} is not a concrete column")
        fields.append(field)
    stamped = [f for f in fields if getattr(f, "auto_now", False)]
    if stamped:
        moment = timezone.now()
        for obj in objs:
            for f in stamped:
                setattr(obj, f.attname, moment)
    if connection.vendor != "postgresql":
        model._default_manager.bulk_update(objs, [f.name for f in fields], batch_size=batch)
        return
    quote = connection.ops.quote_name
    pk = model._meta.pk
    assert pk is not None  # every model has one
    table = quote(model._meta.db_table)
    names_sql = ", ".join(quote(f"v{i}") for i in range(len(fields) + 1))
    sets = ", ".join(
        f"{quote(str(f.column))} = v.{quote(f'v{i + 1}')}" for i, f in enumerate(fields)
    )
    casts = [pk.db_type(connection), *(f.db_type(connection) for f in fields)]
    row_sql = "(" + ", ".join(f"%s::{cast}" for cast in casts) + ")"
    batch = max(1, min(batch, 65535 // (len(fields) + 1)))  # PostgreSQL's parameter limit
    with connection.cursor() as cursor:
        for start in range(0, len(objs), batch):
            chunk = objs[start : start + batch]
            params: list[Any] = []
            for obj in chunk:
                params.append(obj.pk)
                for f in fields:
                    params.append(f.get_db_prep_save(getattr(obj, f.attname), connection))
            values = ", ".join([row_sql] * len(chunk))
            cursor.execute(
                f"UPDATE {table} SET {sets} FROM (VALUES {values}) AS v({names_sql}) "
                f"WHERE {table}.{quote(str(pk.column))} = v.{quote('v0')}",
                params,
            )
