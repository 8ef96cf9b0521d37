"""The migration tests' way back to the latest migrations leaves the database as
``migrate`` does, for the tests the same worker runs next."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection, connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder
from migration_support import _back_to_latest, executor_fixture

from dashboard.sources.models import ClusterSource


def test_the_way_back_keeps_content_types_and_permissions(
    transactional_db: None, django_db_blocker: Any
) -> None:
    types = set(ContentType.objects.values_list("app_label", "model"))
    permissions = set(Permission.objects.values_list("content_type__model", "codename"))
    cached = ContentType.objects.get_for_model(ClusterSource)  # kept in memory
    assert types
    assert permissions

    _back_to_latest(django_db_blocker)  # empties every table on its way

    assert set(ContentType.objects.values_list("app_label", "model")) == types
    assert set(Permission.objects.values_list("content_type__model", "codename")) == permissions
    again = ContentType.objects.get_for_model(ClusterSource)
    assert ContentType.objects.filter(pk=again.pk).exists()
    assert (again.app_label, again.model) == (cached.app_label, cached.model)


TO = [("dashboard", "0012_snapshot_preemptable")]
executor = executor_fixture(TO)


def test_an_executor_test_moves_a_database_of_its_own_on_postgresql(
    executor: MigrationExecutor,
) -> None:
    """The test's connection is at its migrations; on PostgreSQL it is the process's
    migrations database, and the worker's database keeps the latest migrations."""
    applied = set(MigrationRecorder(connection).applied_migrations())
    assert set(TO) <= applied
    assert ("dashboard", "0013_alert_kind_words") not in applied
    name = connection.settings_dict["NAME"]
    if connection.vendor != "postgresql":  # SQLite's in-memory test database: the worker's
        assert not str(name).endswith("_migrations")
        return
    assert name.endswith("_migrations")
    worker_db = name.removesuffix("_migrations")
    wrapper = type(connections[connection.alias])
    other = wrapper({**connection.settings_dict, "NAME": worker_db}, alias="worker")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT app, name FROM django_migrations")
            on_worker_db = set(cursor.fetchall())
    finally:
        other.close()
    assert set(executor.loader.graph.leaf_nodes()) <= on_worker_db
