"""The one fixtures plugin of the test suites (registered by ``tests/conftest.py``).

Fixtures: ``staff`` and ``viewer`` users, API clients for them (``staff_client`` /
``staff_api``, ``viewer_client``, ``anon_client``), ``redis_url`` (this xdist
worker's own Redis database), ``plain_http_eager_tasks`` (plain HTTP test clients,
Celery tasks in the test process).  Hooks: the test settings for every test, the
Hypothesis profile, and the ``migration`` and ``subprocess`` markers put on the
tests they describe (see docs/development/testing.md).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import override_settings
from rest_framework.test import APIClient

from support import datastack, flush, profiles, testdb
from support.brokers import reachable_redis, worker_redis_url
from support.processes import FAILED, ROOT
from support.settings import TEST_SETTINGS

#: The password of the users the fixtures make.
PASSWORD = "pw-for-tests"

#: Fixtures that start other processes: a test using one is a ``subprocess`` test.
PROCESS_FIXTURES = frozenset(
    {"worker", "cluster", "shared_cluster", "stack", "browser", "chromium", "processes"}
)

# factory_boy imports its SQLAlchemy factories whenever SQLAlchemy is installed (it is:
# the embedded broker's kombu transport), so every test process that imported the
# dashboard's factories imported SQLAlchemy too, about 130 ms of CPU each (at each xdist
# worker's collection). No factory here is an SQLAlchemy one; a None in sys.modules
# makes factory_boy's ``from . import alchemy`` fail at once, which it expects.
sys.modules.setdefault("factory.alchemy", None)  # type: ignore[arg-type]


def pytest_configure(config: pytest.Config) -> None:
    profiles.load()
    flush.install()


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> object:
    """The test loop (pytest's own, or an xdist worker's), every hook below it included,
    run on a reserved stretch of CPython's frame stack (``support.datastack``)."""
    rest = session.config.pluginmanager.subset_hook_caller(
        "pytest_runtestloop", remove_plugins=[sys.modules[__name__]]
    )
    return datastack.run_on_reserved_stack(rest, session=session)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark migration tests (``test_migration_*.py``) and tests that start processes, and
    put the modules holding them first."""
    for item in items:
        if item.path.name.startswith("test_migration_"):
            item.add_marker(pytest.mark.migration)
        starts_processes = (
            item.get_closest_marker("integration") is not None
            or item.get_closest_marker("browser") is not None
            or bool(PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())))
        )
        if starts_processes and item.get_closest_marker("subprocess") is None:
            item.add_marker(pytest.mark.subprocess)
    # Modules that start processes or migrate go first: their tests are the long ones,
    # mostly waiting (on workers, beat, gunicorn, Chromium, a fake scheduler's polls), so
    # under pytest-xdist they overlap with the quick rest instead of ending the run with
    # a tail of waits on one worker.  A module keeps its own order (its module-scoped
    # fixtures are built once).
    slow = {
        item.path
        for item in items
        if item.get_closest_marker("subprocess") or item.get_closest_marker("migration")
    }
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Note a failed set-up or call on the test (``support.processes.FAILED``)."""
    report = yield
    if report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="session", autouse=True)
def _session_test_settings() -> Iterator[None]:
    """support.settings.TEST_SETTINGS for the whole session."""
    with override_settings(**TEST_SETTINGS):
        yield


@pytest.fixture
def plain_http_eager_tasks(settings: Any) -> Iterator[None]:
    """Test clients speak plain HTTP (no production SSL redirect) and Celery tasks run in
    the test process, raising their errors there; Celery's options are put back after.

    The dashboard, sources and reliability suites' own autouse fixtures start from it.
    """
    from dashboard.celery import app as celery_app

    settings.SECURE_SSL_REDIRECT = False
    conf = celery_app.conf
    before = (conf.task_always_eager, conf.task_eager_propagates)
    conf.task_always_eager = True
    conf.task_eager_propagates = True
    yield
    conf.task_always_eager, conf.task_eager_propagates = before


@pytest.fixture
def staff(db: None) -> Any:
    return get_user_model().objects.create_user("staff", password=PASSWORD, is_staff=True)


@pytest.fixture
def viewer(db: None) -> Any:
    """A non-staff user who reads every queue (``dashboard.view_every_queue``): the
    queue ACLs restrict users without it (tests/dashboard/access)."""
    from support.readers import reads_every_queue

    return reads_every_queue(get_user_model().objects.create_user("viewer", password=PASSWORD))


@pytest.fixture
def anon_client() -> APIClient:
    return APIClient()


@pytest.fixture
def staff_client(staff: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.fixture
def staff_api(staff_client: APIClient) -> APIClient:
    """The same as ``staff_client`` (the name the reliability and integration suites use)."""
    return staff_client


@pytest.fixture
def viewer_client(viewer: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(viewer)
    return client


@pytest.fixture(scope="session")
def redis_url() -> str:
    """This xdist worker's own Redis database (see support.brokers); skipped when Redis
    is unreachable, failed instead with CI=true."""
    return reachable_redis(worker_redis_url())


@pytest.fixture(scope="session")
def migrated_sqlite(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A SQLite file migrated by ``manage.py migrate`` in a process of its own, once per
    run (the first xdist worker to need it migrates it, under a lock the run's workers
    share): the tests that run the product in processes of their own on SQLite
    (deployments, commands, ``scripts/run``) each start from a copy of it instead of
    migrating a fresh file (``migrate`` itself is tested on fresh files where it is
    the subject). Nothing writes to it."""
    worker = getattr(request.config, "workerinput", {}).get("workerid")
    shared = tmp_path_factory.getbasetemp().parent if worker else tmp_path_factory.getbasetemp()
    folder = shared / "migrated-sqlite"
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "db.sqlite3"
    with (folder / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not database.exists():
            partial = folder / "partial.sqlite3"
            partial.unlink(missing_ok=True)
            env = {**os.environ, "DATABASE_URL": f"sqlite:///{partial}"}
            done = subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 0, f"manage.py migrate failed: {done.stdout}{done.stderr}"
            partial.rename(database)  # whole or not there: a failed migrate is built again
    return database


@pytest.fixture(scope="session")
def django_db_setup(
    request: pytest.FixtureRequest,
    django_test_environment: None,
    django_db_blocker: Any,
    django_db_modify_db_settings: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """pytest-django's test database set-up, with each xdist worker's database copied from
    one template migrated once per run (``support.testdb``) instead of each worker
    migrating its own. pytest-django's ``--reuse-db`` and ``--nomigrations`` are not
    used by this project and are not honoured here."""
    workerinput = getattr(request.config, "workerinput", None)
    worker = workerinput.get("workerid") if workerinput else None
    # the run's base temporary folder, shared by its workers (each has popen-gwN in it)
    shared = tmp_path_factory.getbasetemp().parent if worker else None
    verbosity = request.config.option.verbose
    with django_db_blocker.unblock():
        config = testdb.setup(shared, worker, verbosity)
    yield
    with django_db_blocker.unblock():
        testdb.teardown(config, shared, worker, verbosity)
