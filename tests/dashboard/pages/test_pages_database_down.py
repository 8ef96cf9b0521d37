"""Issue 37, item 11: while the database cannot be reached the pages answer a 503 page
(Retry-After), as the API answers its JSON 503, never an HTML 500; other errors stay 500."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import Client

pytestmark = pytest.mark.django_db

DOWN = mock.patch(
    "django.db.backends.utils.CursorWrapper.execute",
    side_effect=OperationalError("could not connect to server: Connection refused"),
)


@pytest.fixture
def client(staff: Any, settings: Any) -> Client:
    settings.DEBUG = False
    signed_in = Client(raise_request_exception=False)
    signed_in.force_login(staff)
    return signed_in


@pytest.mark.parametrize("path", ["/", "/changes/", "/import/", "/admin/"])
def test_pages_answer_503_while_the_database_is_down(client: Client, path: str) -> None:
    with DOWN:
        answer = client.get(path)
    assert answer.status_code == 503, (path, answer.status_code)
    assert answer["Retry-After"] == "30"
    assert answer["Content-Type"].startswith("text/html")
    assert b"The database cannot be reached." in answer.content
    assert b"could not connect" not in answer.content  # no internals shown


def test_the_api_keeps_its_json_503(client: Client) -> None:
    with DOWN:
        answer = client.get("/api/snapshots/")
    assert answer.status_code == 503
    assert answer.json()["code"] == "database_unavailable"


def test_another_error_is_still_a_500(client: Client) -> None:
    with mock.patch(
        "django.db.backends.utils.CursorWrapper.execute", side_effect=RuntimeError("a bug")
    ):
        answer = client.get("/")
    assert answer.status_code == 500
