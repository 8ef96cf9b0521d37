"""Real Redis for the tests: each xdist worker its own database, and Celery pointed at it.

``REDIS_URL`` names the first database (default ``redis://127.0.0.1:6379/12``); xdist
worker ``gwN`` uses the database N above it (modulo Redis's 16), so two workers never
flush or consume each other's queues.  Without xdist the one process uses the first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from dashboard.celery import app as celery_app

DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
REDIS_DATABASES = 16


def worker_index() -> int:
    """This process's xdist worker number (0 without xdist)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def worker_redis_url(base: str | None = None) -> str:
    """*base* (default ``REDIS_URL``) with this worker's own database number."""
    parts = urlsplit(base or os.environ.get("REDIS_URL") or DEFAULT_REDIS)
    first = int(parts.path.strip("/") or 0)
    db = (first + worker_index()) % REDIS_DATABASES
    return urlunsplit(parts._replace(path=f"/{db}"))


def reachable_redis(url: str) -> str:
    """*url* if Redis answers there; else fail (with CI=true) or skip, naming it."""
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis at {url} cannot be reached in CI: {exc}")
        pytest.skip(f"Redis at {url} cannot be reached: {exc}")
    return url


def drop_broker_pools() -> None:
    """Forget connections and producers made for another broker URL.

    ``app.close()`` only drops the connection pool; the producer pool cached on
    ``app.amqp`` would keep publishing to the broker it was first made for.
    """
    celery_app.close()
    celery_app.amqp._producer_pool = None  # type: ignore[attr-defined]  # private, untyped


@contextmanager
def using_broker(url: str) -> Iterator[str]:
    """The test process sends tasks to *url* (no eager mode) inside the block."""
    conf = celery_app.conf
    # the read and write URLs too: Celery copies the configured broker URL into both,
    # and a send goes to the write URL (an xdist worker's own database is not the
    # configured one)
    keys = ("broker_url", "broker_read_url", "broker_write_url", "task_always_eager")
    old = {k: conf[k] for k in keys}
    conf.update(broker_url=url, broker_read_url=url, broker_write_url=url, task_always_eager=False)
    drop_broker_pools()
    try:
        yield url
    finally:
        conf.update(old)
        drop_broker_pools()
