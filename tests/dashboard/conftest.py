"""Django fixtures for the dashboard tests: eager Celery, sample data.

Users and API clients (``staff``, ``viewer``, ``staff_client``, ...) come from the
shared plugin (tests/support/plugin.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import factories
import pytest
from django.conf import settings as django_settings
from django.core.cache import cache

from dashboard import models
from dashboard.celery import app as celery_app
from dashboard.pages import memo

FIXTURES = Path(django_settings.DASHBOARD_FIXTURES_DIR)
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _test_settings(settings: Any) -> Iterator[None]:
    """Plain HTTP test clients (no SSL redirect) and Celery tasks run in the test process."""
    settings.SECURE_SSL_REDIRECT = False
    settings.DASHBOARD_WHATIF_WAIT_SECONDS = 0.0  # runs never finish by themselves here
    settings.DASHBOARD_WARM_WEB = False  # no threads outliving a test's transaction
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    # per-snapshot page values are cached by id, checksum and import time, which a
    # test database hands out again from one test to the next
    cache.clear()
    memo.clear_all()
    yield
    celery_app.conf.task_always_eager = False


@pytest.fixture
def fixtures_dir() -> Path:
    assert FIXTURES.is_dir(), f"the shared YuniKorn fixtures are missing at {FIXTURES}"
    return FIXTURES


@pytest.fixture
def snapshot(db: None) -> models.ClusterSnapshot:
    """A small scenario snapshot (see factories.small_scenario)."""
    return factories.SnapshotFactory.create()
