"""Data migration tests: the database taken back to a migration, and forward again.

A test gets an executor with the database at *before* (:func:`at_migration`, the
body of the ``executor`` fixture :func:`executor_fixture` makes), writes rows
through the historical models of that state (:func:`models_at`), migrates to the
migration under test (:func:`migrate`) and reads the rows through the models of
the new state. The database returns to the latest migrations afterwards, whatever
the test did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
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
    """A test module's ``executor`` fixture: each test starts with the database at *before*."""

    @pytest.fixture
    def executor(transactional_db: None) -> Iterator[MigrationExecutor]:
        yield from at_migration(before)

    return executor


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
