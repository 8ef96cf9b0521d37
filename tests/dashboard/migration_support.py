"""Data migration tests: the database taken back to a migration, and forward again.

A test gets an executor with the database at *before* (:func:`at_migration`, used
as the body of a fixture), writes rows through the historical models of that
state, migrates to the migration under test (:func:`migrate`) and reads the rows
through the models of the new state. The database returns to the latest
migrations afterwards, whatever the test did.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db import connection
from django.db.migrations.executor import MigrationExecutor

Targets = Sequence[tuple[str, str]]


def at_migration(before: Targets) -> Iterator[MigrationExecutor]:
    """Yield an executor with the database at *before*; back to the latest after."""
    ex = MigrationExecutor(connection)
    latest = ex.loader.graph.leaf_nodes()
    ex.migrate(list(before))
    try:
        yield ex
    finally:
        MigrationExecutor(connection).migrate(latest)


def migrate(executor: MigrationExecutor, targets: Targets) -> Any:
    """Migrate to *targets*; the historical apps of that state."""
    executor.loader.build_graph()
    executor.migrate(list(targets))
    return executor.loader.project_state(list(targets)).apps
