"""Fixtures of the deployment tests: Redis and PostgreSQL for the entry points' processes.

The processes get databases of their own (a SQLite file, or a PostgreSQL database made
and dropped here), never the pytest-django test database: the tests talk to them over
HTTP only, as an operator would.  Redis and PostgreSQL must answer: with CI=true an
unreachable one fails the tests; elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from deploy_support import Deployment, sqlite_site, with_database
from support import testdb
from support.processes import database_url

# Redis: the shared plugin's ``redis_url`` (each xdist worker its own database), so
# this suite's flushes never empty another worker's queues.
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/dashboard"


def _unreachable(what: str, exc: Exception) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} cannot be reached in CI: {exc}")
    pytest.skip(f"{what} cannot be reached: {exc}")


@pytest.fixture
def broker(redis_url: str) -> Iterator[str]:
    """The broker, empty at the start and at the end of the test."""
    redis.Redis.from_url(redis_url).flushdb()
    yield redis_url
    redis.Redis.from_url(redis_url).flushdb()


def _server_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    return url if url.startswith(("postgres://", "postgresql://")) else DEFAULT_POSTGRES


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database (named after DATABASE_URL's, with a suffix), dropped after."""
    server = _server_url()
    base = server.rsplit("/", 1)[-1] or "dashboard"
    name = f"{base}_deploy_{os.getpid()}"
    admin = with_database(server, "postgres")
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        _unreachable(f"PostgreSQL at {admin}", exc)
    yield with_database(server, name)
    with psycopg.connect(admin, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_deployment(broker: str, tmp_path: Path, migrated_sqlite: Path) -> Iterator[Deployment]:
    """Processes on a SQLite file and the test's Redis; migrated (a copy of the test
    process's migrated file, ``migrated_sqlite``: ``entrypoint.sh migrate`` is tested on a
    fresh file in test_entrypoints.py)."""
    deployment = sqlite_site(broker, tmp_path, migrated_sqlite)
    yield deployment
    deployment.stop_all()


@pytest.fixture
def postgres_deployment(
    request: pytest.FixtureRequest,
    broker: str,
    postgres_url: str,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    django_db_setup: None,
    django_db_blocker: Any,
) -> Iterator[Deployment]:
    """Processes on a fresh PostgreSQL database and the test's Redis; migrated: a copy of
    the run's migrated test template (``support.testdb``, the migrations every test
    database has) when the test databases are on the same server, else by ``migrate``
    (``entrypoint.sh migrate`` on a fresh database is tested in test_entrypoints.py)."""
    deployment = Deployment(
        tmp_path,
        {"DATABASE_URL": postgres_url, "REDIS_URL": broker, "CELERY_BROKER_URL": broker},
    )
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    shared = tmp_path_factory.getbasetemp().parent if worker else None
    with django_db_blocker.unblock():
        same_server = _server_url().rsplit("/", 1)[0] == database_url().rsplit("/", 1)[0]
        copied = same_server and testdb.copy_template(shared, postgres_url.rsplit("/", 1)[-1])
    if not copied:
        deployment.run("migrate")
    yield deployment
    deployment.stop_all()
