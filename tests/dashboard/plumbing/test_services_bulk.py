"""insert_rows: plain value tuples written as the model's fields would store them.

On PostgreSQL the rows go through COPY, elsewhere through INSERTs; both read back
the same values (text with the characters COPY escapes, JSON with ``None`` as SQL
NULL, dates, booleans, foreign keys) and a failure leaves nothing behind.
"""

from __future__ import annotations

import json
from datetime import timedelta

import factories
import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import JSONField
from django.test.utils import CaptureQueriesContext
from hypothesis import given, settings
from hypothesis import strategies as st
from support.profiles import examples

from dashboard import models, services
from dashboard.plumbing.bulk import _json_text

NAMES = (
    "partition",
    "number",
    "filename",
    "text",
    "checksum",
    "quota_preemption_enabled",
    "warnings",
    "parsed",
    "imported_at",
    "imported_by",
    "planned",
)
AWKWARD = "tab\there\nnew line \\N backslash \\ quote \" ' comma, ünïcödé ☃ \r end"


@pytest.mark.django_db(transaction=True)
def test_rows_read_back_as_written() -> None:
    """Every column reads back as given, whichever way the rows were written."""
    partition = models.Partition.objects.create(
        name="default", cluster=models.Cluster.objects.create(name="bulk")
    )
    user = factories.UserFactory.create()
    rows = [
        (
            partition.pk,
            n,
            f"file-{n}.yaml",
            AWKWARD * (n + 1),
            f"{n:064d}",
            n % 2 == 0,
            [AWKWARD, {"nested": [1, None, True]}] if n else [],
            {"memory": 2**62, "nvidia.com/gpu": n, "text": AWKWARD, "none": None},
            factories.T0 + timedelta(seconds=n, microseconds=17),
            user.pk if n % 2 else None,
            False,
        )
        for n in range(5)
    ]
    with CaptureQueriesContext(connection) as queries, transaction.atomic():
        services.insert_rows(models.ConfigVersion, NAMES, iter(rows), batch=2)
    inserts = [q["sql"] for q in queries.captured_queries if "INSERT INTO" in q["sql"]]
    # COPY on PostgreSQL: no INSERT statement at all; batches of 2 elsewhere
    assert len(inserts) == (0 if connection.vendor == "postgresql" else 3)
    stored = {v.number: v for v in models.ConfigVersion.objects.all()}
    assert sorted(stored) == [0, 1, 2, 3, 4]
    for row in rows:
        v = stored[row[1]]
        assert (
            v.partition_id,
            v.number,
            v.filename,
            v.text,
            v.checksum,
            v.quota_preemption_enabled,
            v.warnings,
            v.parsed,
            v.imported_at,
            v.imported_by_id,
            v.planned,
        ) == row
    # a real JSON column: lookups into the stored values work
    assert models.ConfigVersion.objects.filter(parsed__memory=2**62).count() == 5


@pytest.mark.django_db(transaction=True)
def test_null_json_is_sql_null() -> None:
    """``None`` in a nullable JSON column is SQL NULL, as the ORM stores it."""
    partition = models.Partition.objects.create(
        name="default", cluster=models.Cluster.objects.create(name="bulk")
    )
    version = models.ConfigVersion.objects.create(
        partition=partition, number=1, text="", checksum="", imported_at=factories.T0
    )
    with transaction.atomic():
        services.insert_rows(
            models.ConfigQueue,
            (
                "version",
                "path",
                "name",
                "depth",
                "guaranteed",
                "max",
                "properties",
                "quota_preemption_delay",
                "is_leaf",
                "is_parent_flag",
            ),
            [(version.pk, "root", "root", 0, None, {"memory": 1}, {}, 0.0, True, False)],
        )
    assert models.ConfigQueue.objects.filter(guaranteed__isnull=True).count() == 1
    queue = models.ConfigQueue.objects.get()
    assert (queue.guaranteed, queue.max) == (None, {"memory": 1})


@pytest.mark.django_db(transaction=True)
def test_a_failing_row_leaves_nothing() -> None:
    """A row breaking a constraint raises Django's IntegrityError; the transaction keeps
    none of the rows before it."""
    partition = models.Partition.objects.create(
        name="default", cluster=models.Cluster.objects.create(name="bulk")
    )
    row: tuple[object, ...] = (
        partition.pk,
        1,
        "",
        "",
        "",
        False,
        [],
        {},
        factories.T0,
        None,
        False,
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        services.insert_rows(models.ConfigVersion, NAMES, [row, row])
    assert not models.ConfigVersion.objects.exists()


@settings(max_examples=examples(300), deadline=None)
@given(
    st.dictionaries(st.text(), st.integers() | st.booleans() | st.none() | st.floats())
    | st.lists(st.integers())
    | st.text()
)
def test_json_text_is_what_django_writes(value: object) -> None:
    """The JSON text written for a value is json.dumps' (Django's own adaptation), the
    fast form for resource maps included, character for character."""
    field = models.NodeSpan._meta.get_field("capacity")
    assert isinstance(field, JSONField)
    assert _json_text(field)(value) == json.dumps(value)
