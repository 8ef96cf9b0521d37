"""insert_rows: plain value tuples written as the model's fields would store them; update_rows:
many rows' fields written as their saves would.

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
from dashboard.plumbing.bulk import _json_text, update_rows

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


@pytest.mark.django_db
def test_update_rows_writes_what_save_would() -> None:
    """update_rows writes each row's fields as ``save(update_fields=...)`` would (JSON,
    SQL NULL, times, foreign keys, awkward text), other rows and fields untouched, in one
    statement per batch, and moves an ``auto_now`` field."""
    partition = models.Partition.objects.create(
        name="default", cluster=models.Cluster.objects.create(name="bulk")
    )
    made = [
        models.QuotaChange.objects.create(
            partition=partition,
            queue_path=f"root.q{n}",
            new_max={"vcore": n},
            changed_at=factories.T0,
            reason="before",
        )
        for n in range(6)
    ]
    before = {c.pk: c.updated_at for c in models.QuotaChange.objects.all()}
    changed = made[:5]  # the last row is left alone
    for n, change in enumerate(changed):
        change.state = models.QuotaChange.State.WAITING if n == 0 else models.QuotaChange.State.DONE
        change.deadline = factories.T0 + timedelta(seconds=n, microseconds=17) if n % 2 else None
        change.deadline_reason = {"rule": AWKWARD, "since": [n, None]} if n else {}
        change.new_max = None if n == 3 else {"vcore": 10 * n, "memory": 2**62}
        change.reason = AWKWARD * n
        change.delay = n / 3
        change.superseded_by = made[5] if n == 2 else None
    fields = ["state", "deadline", "deadline_reason", "new_max", "reason", "delay"]
    with CaptureQueriesContext(connection) as queries:
        update_rows(changed, [*fields, "superseded_by", "updated_at"], batch=2)
    updates = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(updates) == 3  # one per batch of 2
    stored = {c.pk: c for c in models.QuotaChange.objects.all()}
    for change in changed:
        row = stored[change.pk]
        assert [getattr(change, f) for f in fields] == [getattr(row, f) for f in fields]
        assert change.superseded_by_id == row.superseded_by_id
        assert row.updated_at > before[change.pk]
    untouched = stored[made[5].pk]
    assert (untouched.reason, untouched.new_max, untouched.updated_at) == (
        "before",
        {"vcore": 5},
        before[made[5].pk],
    )
    assert models.QuotaChange.objects.filter(new_max__isnull=True).count() == 1  # SQL NULL
