"""Fixtures for the cluster-source tests: the YuniKorn test server, an admin user.

Users and API clients (``staff``, ``viewer``, ``staff_client``, ...) come from the
shared plugin (tests/support/plugin.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from sources_helpers import REST, FakeYuniKorn, make_handler, rest_server_state, serving


@pytest.fixture
def yunikorn() -> Iterator[FakeYuniKorn]:
    """A YuniKorn REST server on 127.0.0.1 (free port) serving the fixture files."""
    assert REST.is_dir(), f"the shared YuniKorn fixtures are missing at {REST}"
    state = rest_server_state()
    with serving(make_handler(state)) as url:
        state.url = url
        try:
            yield state
        finally:
            state.release.set()  # before the server stops: a hanging answer ends first


@pytest.fixture(autouse=True)
def _test_settings(plain_http_eager_tasks: None, settings: Any) -> None:
    """The shared plugin's plain HTTP and eager Celery tasks, and quick HTTP timeouts."""
    settings.SOURCES_HTTP_TIMEOUT = 2.0
    settings.SOURCES_HTTP_RETRIES = 2
    settings.SOURCES_HTTP_BACKOFF = 0.5
    settings.SOURCES_HTTP_BACKOFF_MAX = 1.0


@pytest.fixture
def admin_user_(db: None) -> Any:
    return get_user_model().objects.create_superuser("root", email=None, password=None)
