"""Fixtures of the reliability suites: a stored snapshot and config, users, clients.

The snapshot and config every test reads (``stored``) are imported once per test
module, inside a transaction that is rolled back after the module; each test runs
in a savepoint of it (pytest-django's ``db``), so whatever a test writes is undone
before the next one, which gets fresh objects read from the database.  Users,
clients and the test settings (fast password hasher) come from the shared plugin
(tests/support/plugin.py), as does ``plain_http_eager_tasks``: test clients speak
plain HTTP, so the production SSL redirect is off, and Celery tasks run in the test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from reliability_support import PASSWORD, QUEUES_YAML, scenario

from dashboard import models, services
from dashboard.pages import memo
from dashboard.services.engine_state_cache import forget_engine_states


@pytest.fixture(autouse=True)
def _test_settings(plain_http_eager_tasks: None) -> None:
    """The shared plugin's plain HTTP and eager Celery tasks, and emptied caches."""
    # values cached by snapshot id would outlive the rows a test changed and rolled back
    cache.clear()
    memo.clear_all()
    forget_engine_states()


@pytest.fixture(scope="module")
def _module_data(django_db_setup: None, django_db_blocker: Any) -> Iterator[tuple[int, int]]:
    """(staff user id, snapshot id): the staff user, the config and the small scenario's
    snapshot, made once for the module and rolled back after it."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            user = get_user_model().objects.create_user(
                "ops-staff", password=PASSWORD, is_staff=True
            )
            services.import_config(QUEUES_YAML.encode(), filename="queues.yaml", user=user)
            snapshot = services.import_snapshot(
                {"scenario.json": json.dumps(scenario()).encode()}, user=user
            )
        except BaseException:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)
            raise
    try:
        yield user.pk, snapshot.pk
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def staff(db: None, _module_data: tuple[int, int]) -> Any:
    """The staff user who imported ``stored``."""
    return get_user_model().objects.get(pk=_module_data[0])


@pytest.fixture
def stored(db: None, _module_data: tuple[int, int]) -> models.ClusterSnapshot:
    """The small scenario imported as a snapshot, and a config for its partition."""
    return models.ClusterSnapshot.objects.get(pk=_module_data[1])


@pytest.fixture
def staff_browser(staff: Any) -> Client:
    """A signed-in staff session on the pages (CSRF not enforced: the inputs are the test)."""
    client = Client()
    client.force_login(staff)
    return client
