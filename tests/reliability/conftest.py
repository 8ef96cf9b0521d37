"""Fixtures of the reliability suites: users, clients, a stored snapshot and config.

Passwords use a fast hasher here (the suites create many users and sign in
often; the production hasher is not what they test).  Test clients speak plain
HTTP, so the production SSL redirect is off.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from reliability_support import PASSWORD, QUEUES_YAML, scenario
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.celery import app as celery_app


@pytest.fixture(autouse=True)
def _plain_http_and_fast_hashes(settings: Any) -> Iterator[None]:
    settings.SECURE_SSL_REDIRECT = False
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = eager


@pytest.fixture
def staff(db: None) -> Any:
    return get_user_model().objects.create_user("ops-staff", password=PASSWORD, is_staff=True)


@pytest.fixture
def viewer(db: None) -> Any:
    return get_user_model().objects.create_user("ops-viewer", password=PASSWORD)


@pytest.fixture
def staff_api(staff: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(staff)
    return client


@pytest.fixture
def staff_browser(staff: Any) -> Client:
    """A signed-in staff session on the pages (CSRF not enforced: the inputs are the test)."""
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def stored(staff: Any) -> models.ClusterSnapshot:
    """The small scenario imported as a snapshot, and a config for its partition."""
    services.import_config(QUEUES_YAML.encode(), filename="queues.yaml", user=staff)
    return services.import_snapshot({"scenario.json": json.dumps(scenario()).encode()}, user=staff)
