"""Data migration tests: the database taken back to a migration, and forward again.

A test gets an executor with the database at *before* (:func:`at_migration`, the
body of the ``executor`` fixture :func:`executor_fixture` makes), writes rows
through the historical models of that state (:func:`models_at`), migrates to the
migration under test (:func:`migrate`) and reads the rows through the models of
the new state. Every table is emptied after each test.

On PostgreSQL the ``executor`` tests run on a database of their own, one per test
process (the worker's database name with ``_migrations``, dropped at its end), switched
to for the test and back after it: it starts empty and goes from one test's migrations
to the next's (a few migrations apart) and never back to the latest, and the worker's
own database keeps the latest migrations and its rows of ``post_migrate``. Elsewhere
(SQLite's test database is in memory) they run on the worker's database, which returns
to the latest migrations after the module's last test, whatever the tests did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.contenttypes.models import ContentType
from django.core.management.color import no_style
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from dashboard import models, services

Targets = Sequence[tuple[str, str]]
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


def at_migration(before: Targets) -> Iterator[MigrationExecutor]:
    """Yield an executor with the database at *before*; back to the latest after."""
    ex = MigrationExecutor(connection)
    latest = ex.loader.graph.leaf_nodes()
    ex.migrate(list(before))
    try:
        yield ex
    finally:
        MigrationExecutor(connection).migrate(latest)


def executor_fixture(before: Targets) -> Callable[..., Iterator[MigrationExecutor]]:
    """A test module's ``executor`` fixture: each test starts with the database at *before*
    and with every table empty.

    On PostgreSQL the database is the test process's migrations database (see above),
    moved from where the last test left it. Elsewhere it is the worker's database, which
    goes back to the latest migrations once, after the module's last test: the next test
    of the module only goes back from where the last one left it (a migration or two)
    instead of from the latest and back there again.
    """

    @pytest.fixture
    def executor(
        request: pytest.FixtureRequest, django_db_setup: None, django_db_blocker: Any
    ) -> Iterator[MigrationExecutor]:
        with django_db_blocker.unblock(), _migrations_database(request, django_db_blocker) as own:
            if not own:
                module = request.node.getparent(pytest.Module)
                if not module.stash.get(_BACK_TO_LATEST, False):
                    module.stash[_BACK_TO_LATEST] = True
                    module.addfinalizer(lambda: _back_to_latest(django_db_blocker))
            _move_to(list(before))
            ex = MigrationExecutor(connection)
            try:
                yield ex
            finally:
                empty_every_table()

    return executor


def _move_to(targets: Targets) -> None:
    """Migrate to *targets*: first back to those already applied, then forward to the
    rest (Django's executor refuses one plan going both ways, as the move from one
    test's migrations to another's may)."""
    applied = MigrationExecutor(connection).loader.applied_migrations
    back = [t for t in targets if t in applied]
    if back:
        MigrationExecutor(connection).migrate(back)
    MigrationExecutor(connection).migrate(list(targets))


#: The test process's migrations database, once made (PostgreSQL only).
_MIGRATIONS_DATABASE = pytest.StashKey[str]()


@contextmanager
def _migrations_database(request: pytest.FixtureRequest, django_db_blocker: Any) -> Iterator[bool]:
    """On PostgreSQL, the default connection on the test process's migrations database
    (made empty on first use, dropped when the process ends) for the block, back on the
    worker's database after it; True then. Elsewhere nothing is switched: False."""
    if connection.vendor != "postgresql":
        yield False
        return
    main = connection.settings_dict["NAME"]
    stash = request.config.stash
    if _MIGRATIONS_DATABASE not in stash:
        name = f"{main}_migrations"
        with connection._nodb_cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            cursor.execute(f'CREATE DATABASE "{name}"')
        stash[_MIGRATIONS_DATABASE] = name

        def drop() -> None:
            with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
                cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        request.config.add_cleanup(drop)
    _switch(stash[_MIGRATIONS_DATABASE])
    try:
        yield True
    finally:
        _switch(main)


def _switch(name: str) -> None:
    """The default connection on the database *name* from its next query on (its settings
    are ``settings.DATABASES``'s own: a child process started meanwhile would get it too)."""
    connection.close()
    connection.settings_dict["NAME"] = name
    ContentType.objects.clear_cache()  # ids of the other database


#: Set on a test module once its return to the latest migrations is registered.
_BACK_TO_LATEST = pytest.StashKey[bool]()


def _back_to_latest(django_db_blocker: Any) -> None:
    """The database as ``migrate`` leaves it, for the worker's next tests: the latest
    migrations, then the rows ``post_migrate`` makes (content types, permissions),
    which emptying every table removed; and no content type kept in memory with an id
    from before (a later admin log row would point at a missing one)."""
    with django_db_blocker.unblock():
        empty_every_table()
        ex = MigrationExecutor(connection)
        ex.migrate(ex.loader.graph.leaf_nodes())
        ContentType.objects.clear_cache()
        emit_post_migrate_signal(verbosity=0, interactive=False, db=connection.alias)


def empty_every_table() -> None:
    """Empty every table of the database as it is now (whatever its migrations), as
    pytest-django's flush does for the tables of the latest models.

    Every table is named, so no cascade is needed (SQLite's would look tables up in a
    cache of the schema as it was earlier in the session).
    """
    tables = [t for t in connection.introspection.table_names() if t != "django_migrations"]
    statements = connection.ops.sql_flush(no_style(), tables, reset_sequences=True)
    connection.ops.execute_sql_flush(statements)


def models_at(executor: MigrationExecutor, targets: Targets) -> Any:
    """The historical apps of the state *targets* (the database is not moved)."""
    return executor.loader.project_state(list(targets)).apps


def migrate(executor: MigrationExecutor, targets: Targets) -> Any:
    """Migrate to *targets*; the historical apps of that state."""
    executor.loader.build_graph()
    executor.migrate(list(targets))
    return models_at(executor, targets)


def default_partition(apps: Any) -> Any:
    """A partition named ``default``, made with the historical models *apps*."""
    return apps.get_model("dashboard", "Partition").objects.create(name="default")


def store_rest_snapshot(
    scenario: Mapping[str, object],
    minutes: int,
    applications: Sequence[Mapping[str, object]] = (),
) -> models.ClusterSnapshot:
    """A REST snapshot of *scenario* (with *applications*) stored through today's
    services, captured and imported *minutes* after :data:`T0`."""
    at = T0 + timedelta(minutes=minutes)
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.REST,
        captured_at=at,
        scenario=scenario,
        applications=applications,
        now=at,
    )
