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
from integration_support import Cluster
from support.brokers import using_broker


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
