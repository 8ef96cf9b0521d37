"""Real processes for the integration tests: Celery workers and beat against real Redis.

The worker processes reach the same database as the test process: the
pytest-django test database (PostgreSQL in CI, the SQLite file var/test_db.sqlite3
locally), whose name is passed to them in DATABASE_URL.  Tests using them must be
``transaction=True`` so their rows are committed and visible to the workers.

Redis must answer: with CI=true an unreachable Redis fails the tests; elsewhere
they are skipped with the reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from integration_support import Cluster
from rest_framework.test import APIClient

from dashboard.celery import app as celery_app

DEFAULT_REDIS = "redis://127.0.0.1:6379/14"


def _redis_url() -> str:
    return os.environ.get("REDIS_URL") or DEFAULT_REDIS


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = _redis_url()
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis at {url} cannot be reached in CI: {exc}")
        pytest.skip(f"Redis at {url} cannot be reached: {exc}")
    return url


def _drop_broker_pools() -> None:
    """Forget connection and producer pools made for another broker (both are cached)."""
    celery_app.close()
    celery_app.amqp._producer_pool = None  # type: ignore[attr-defined]  # a private cache


@pytest.fixture
def broker(redis_url: str, settings: Any) -> Iterator[str]:
    """The test process sends tasks to real Redis (no eager mode); the queue starts empty."""
    redis.Redis.from_url(redis_url).flushdb()
    settings.SECURE_SSL_REDIRECT = False
    old = (celery_app.conf.broker_url, celery_app.conf.task_always_eager)
    celery_app.conf.update(broker_url=redis_url, task_always_eager=False)
    _drop_broker_pools()
    yield redis_url
    celery_app.conf.update(broker_url=old[0], task_always_eager=old[1])
    _drop_broker_pools()
    redis.Redis.from_url(redis_url).flushdb()


@pytest.fixture
def cluster(broker: str, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, broker)
    yield c
    c.stop_all()


@pytest.fixture
def staff_api(transactional_db: None) -> APIClient:
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("ops", password="pw", is_staff=True)
    client = APIClient()
    client.force_authenticate(user)
    return client
