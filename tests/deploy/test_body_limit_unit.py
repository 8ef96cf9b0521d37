"""The body limit in Django's request cycle (test client): what is refused before any
parser, and what still reaches the views."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _plain_http(settings: Any) -> None:
    settings.SECURE_SSL_REDIRECT = False


def test_an_anonymous_api_write_is_refused_before_its_body_is_parsed() -> None:
    """A NUL byte in a form field would be answered 400 naming it once parsed; without
    credentials the answer is DRF's 403, so nothing parsed the body."""
    answer = Client().post("/api/configs/", {"na\x00me": "x"})
    assert answer.status_code == 403
    # the body DRF's own refusal has through the API's exception handler
    assert answer.json() == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }


def test_a_signed_in_api_write_is_parsed() -> None:
    user = get_user_model().objects.create_user("ops", password="pw-12345-x", is_staff=True)
    client = Client()
    client.force_login(user)
    answer = client.post("/api/configs/", {"na\x00me": "x"})
    assert answer.status_code == 400
    assert "na\\x00me" in answer.json()


def test_the_token_endpoint_still_reads_its_body() -> None:
    answer = Client().post("/api/auth/token/", {"username": "nobody", "password": "nope"})
    assert answer.status_code == 400


def test_a_declared_length_over_the_limit_is_refused_unread(settings: Any) -> None:
    settings.DASHBOARD_MAX_BODY_BYTES = 1000
    user = get_user_model().objects.create_user("ops", password="pw-12345-x", is_staff=True)
    client = Client()
    client.force_login(user)
    answer = client.post("/api/snapshots/", b"{}" * 600, content_type="application/json")
    assert answer.status_code == 413
    assert answer.json()["limit_bytes"] == 1000


def test_a_huge_anonymous_body_is_told_the_anonymous_limit(settings: Any) -> None:
    """100 MB declared by a request not signed in (more than the signed-in limit too): the
    413 names the limit that applies to it, not the signed-in one."""
    anonymous = settings.DASHBOARD_ANONYMOUS_MAX_BODY_BYTES
    assert settings.DASHBOARD_MAX_BODY_BYTES < 100_000_000
    answer = Client().post(
        "/api/snapshots/", b"{}", content_type="application/json", CONTENT_LENGTH="100000000"
    )
    assert answer.status_code == 413
    assert answer.json() == {
        "detail": f"request body of 100000000 bytes is larger than the limit of {anonymous} "
        "bytes for requests that are not signed in (DASHBOARD_ANONYMOUS_MAX_BODY_BYTES)",
        "limit_bytes": anonymous,
    }
    page = Client().post("/login/", b"x", content_type="text/plain", CONTENT_LENGTH="100000000")
    assert page.status_code == 413
    assert b"DASHBOARD_ANONYMOUS_MAX_BODY_BYTES" in page.content
    assert b"(DASHBOARD_MAX_BODY_BYTES)" not in page.content


def test_a_huge_signed_in_body_is_told_the_signed_in_limit(settings: Any) -> None:
    user = get_user_model().objects.create_user("ops", password="pw-12345-x", is_staff=True)
    client = Client()
    client.force_login(user)
    answer = client.post(
        "/api/snapshots/", b"{}", content_type="application/json", CONTENT_LENGTH="100000000"
    )
    assert answer.status_code == 413
    assert answer.json()["limit_bytes"] == settings.DASHBOARD_MAX_BODY_BYTES
    assert "(DASHBOARD_MAX_BODY_BYTES)" in answer.json()["detail"]


def test_a_five_thousand_digit_quantity_is_too_long_not_a_python_setting() -> None:
    user = get_user_model().objects.create_user("ops", password="pw-12345-x", is_staff=True)
    client = Client()
    client.force_login(user)
    body = b'{"queue": "root.a", "new_max": {"vcore": ' + b"9" * 5000 + b"}}"
    answer = client.post("/api/quota-changes/", body, content_type="application/json")
    assert answer.status_code == 400
    text = answer.content.decode()
    assert "set_int_max_str_digits" not in text
    assert "5000 digits long, too long for a quantity" in text
