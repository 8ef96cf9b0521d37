"""Django fixtures for the dashboard tests (every sub-folder): test settings, sample data.

Users and API clients (``staff``, ``viewer``, ``staff_client``, ...), plain HTTP and
eager Celery tasks (``plain_http_eager_tasks``) come from the shared plugin
(tests/support/plugin.py).  Helpers the tests import (``factories``,
``rest_answers``, ``two_clusters``, ``shared_fixtures``) sit beside this file, which
puts this folder on ``sys.path``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import factories
import pytest
from alert_receivers import HttpReceiver, MailBox, http_receiver, smtp_server
from django.conf import settings as django_settings
from django.core.cache import cache

from dashboard import models
from dashboard.pages import memo

FIXTURES = Path(django_settings.DASHBOARD_FIXTURES_DIR)
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _test_settings(plain_http_eager_tasks: None, settings: Any) -> None:
    """The shared plugin's plain HTTP and eager Celery tasks, and the dashboard's own."""
    settings.DASHBOARD_WHATIF_WAIT_SECONDS = 0.0  # runs never finish by themselves here
    settings.DASHBOARD_WARM_WEB = False  # no threads outliving a test's transaction
    # per-snapshot page values are cached by id, checksum and import time, which a
    # test database hands out again from one test to the next
    cache.clear()
    memo.clear_all()


@pytest.fixture
def fixtures_dir() -> Path:
    assert FIXTURES.is_dir(), f"the shared YuniKorn fixtures are missing at {FIXTURES}"
    return FIXTURES


@pytest.fixture
def snapshot(db: None) -> models.ClusterSnapshot:
    """A small scenario snapshot (see factories.small_scenario)."""
    return factories.SnapshotFactory.create()


# The alerting tests' real local receivers (tests/alert_receivers.py). A module using
# ``webhook`` defines the ``webhook_secret`` fixture: the key the receiver checks each
# delivery's HMAC signature with.


@pytest.fixture
def webhook(webhook_secret: str) -> Iterator[HttpReceiver]:
    """A webhook receiver checking signatures made with *webhook_secret*."""
    with http_receiver(HttpReceiver(secret=webhook_secret)) as receiver:
        yield receiver


@pytest.fixture
def mailbox() -> Iterator[MailBox]:
    """An SMTP server keeping what it receives."""
    with smtp_server() as box:
        yield box
