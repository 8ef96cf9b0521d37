"""Real processes for the integration tests: Celery workers and beat against real Redis.

The worker processes reach the same database as the test process: the
pytest-django test database (PostgreSQL in CI, the SQLite file var/test_db.sqlite3
locally), whose name is passed to them in DATABASE_URL.  Tests using them must be
``transaction=True`` so their rows are committed and visible to the workers.

Redis must answer (``redis_url``, this xdist worker's own database, from the shared
plugin): with CI=true an unreachable Redis fails the tests; elsewhere they are
skipped with the reason.  ``staff_api`` comes from the shared plugin too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from integration_support import Cluster, SharedCluster
from support.brokers import using_broker
from support.processes import FAILED


@pytest.fixture
def broker(redis_url: str, settings: Any) -> Iterator[str]:
    """The test process sends tasks to real Redis (no eager mode); the queue starts empty."""
    redis.Redis.from_url(redis_url).flushdb()
    settings.SECURE_SSL_REDIRECT = False
    with using_broker(redis_url):
        yield redis_url
    redis.Redis.from_url(redis_url).flushdb()


@pytest.fixture
def cluster(broker: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, broker)
    yield c
    c.stop_all()


@pytest.fixture(scope="module")
def _shared_pair(
    redis_url: str, django_db_setup: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SharedCluster]:
    """The worker and beat a module's tests share (``shared_cluster``); the queue starts
    empty and is emptied after them (never under running processes: the broker's
    routing keys go with it)."""
    redis.Redis.from_url(redis_url).flushdb()
    shared = SharedCluster(tmp_path_factory.mktemp("shared-cluster"), redis_url)
    yield shared
    shared.retire()
    redis.Redis.from_url(redis_url).flushdb()


@pytest.fixture
def shared_cluster(
    _shared_pair: SharedCluster, settings: Any, request: pytest.FixtureRequest
) -> Iterator[SharedCluster]:
    """A worker and beat shared with the module's other tests (``SharedCluster.ready``
    starts them, or keeps the running ones); the test process sends tasks to their
    broker. A test that starts its own processes uses ``cluster`` instead."""
    settings.SECURE_SSL_REDIRECT = False
    with using_broker(_shared_pair.broker):
        yield _shared_pair
    _shared_pair.quiesce(failed=request.node.stash.get(FAILED, False))
