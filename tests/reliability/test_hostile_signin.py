"""Hostile input, third round, before sign-in: malformed credentials on every sign-in path
(``/api/auth/token/``, ``/login/``, HTTP Basic) are a clean 4xx, and failed logins are
throttled per address and overall as well as per username and address.

Run on PostgreSQL as well (CI does): an over-long username and a NUL byte only broke there.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from django.test import Client
from reliability_support import PASSWORD
from rest_framework.test import APIClient

WRONG = "not-the-password"

BAD_USERNAMES: list[tuple[str, str]] = [
    ("x" * 256, "long"),
    ("y" * 5000, "long"),
    ("ops\x00staff", "NUL"),
    ("ops\ud800staff", "surrogate"),
]
IDS = ["256-chars", "5000-chars", "nul", "lone-surrogate"]


def _json(text: str) -> bytes:
    """A JSON body as an attacker sends it: lone surrogates written as ``\\ud800`` escapes."""
    return json.dumps({"username": text, "password": WRONG}).encode()


@pytest.mark.parametrize(("username", "word"), BAD_USERNAMES, ids=IDS)
def test_token_endpoint_refuses_a_malformed_username(staff: Any, username: str, word: str) -> None:
    """A JSON body with such a username: 400 naming ``username``, no token."""
    client = APIClient(raise_request_exception=False)
    response = client.post("/api/auth/token/", _json(username), content_type="application/json")
    print(f"[answer] token {word}: {response.status_code} {response.content[:200]!r}")
    assert response.status_code == 400, response.content[:300]
    assert "username" in response.json(), response.json()
    assert word.lower() in json.dumps(response.json()).lower()


@pytest.mark.parametrize(("username", "word"), BAD_USERNAMES[:3], ids=IDS[:3])
def test_token_endpoint_refuses_a_malformed_form_username(
    staff: Any, username: str, word: str
) -> None:
    """The same usernames as form fields (NUL: refused by the NUL guard)."""
    client = APIClient(raise_request_exception=False)
    response = client.post("/api/auth/token/", {"username": username, "password": WRONG})
    assert response.status_code == 400, response.content[:300]
    assert "username" in response.json(), response.json()


@pytest.mark.parametrize(("username", "word"), BAD_USERNAMES[:3], ids=IDS[:3])
def test_login_page_refuses_a_malformed_username(staff: Any, username: str, word: str) -> None:
    """The sign-in page: a 4xx or the form again with an error, never a 500 or a session."""
    client = Client(raise_request_exception=False)
    response = client.post("/login/", {"username": username, "password": WRONG})
    print(f"[answer] /login/ {word}: {response.status_code}")
    assert response.status_code in (200, 400), response.status_code
    assert "_auth_user_id" not in client.session


def test_login_page_refuses_a_lone_surrogate_in_a_raw_body(staff: Any) -> None:
    """A percent-encoded lone surrogate (``%ED%A0%80``) decodes to U+FFFD: refused as a
    wrong password, never stored as a surrogate."""
    client = Client(raise_request_exception=False)
    body = f"username=ops%ED%A0%80staff&password={WRONG}"
    response = client.post("/login/", body, content_type="application/x-www-form-urlencoded")
    assert response.status_code in (200, 400), response.status_code
    assert "_auth_user_id" not in client.session


def _basic(username: str, password: str, **extra: Any) -> Any:
    raw = base64.b64encode(f"{username}:{password}".encode("utf-8", "surrogatepass")).decode()
    client = APIClient(raise_request_exception=False)
    return client.get("/api/partitions/", HTTP_AUTHORIZATION=f"Basic {raw}", **extra)


@pytest.mark.parametrize(("username", "word"), BAD_USERNAMES, ids=IDS)
def test_http_basic_refuses_a_malformed_username(staff: Any, username: str, word: str) -> None:
    """HTTP Basic with such a username: 401 (or 403), never a 500."""
    response = _basic(username, WRONG)
    print(f"[answer] basic {word}: {response.status_code} {response.content[:200]!r}")
    assert response.status_code in (401, 403), response.content[:300]


def test_token_endpoint_refuses_a_malformed_password(staff: Any) -> None:
    """A lone surrogate or NUL in the password (the hasher encodes it as UTF-8): 400."""
    client = APIClient(raise_request_exception=False)
    for password in ("pw\ud800", "pw\x00", "p" * 5000):
        body = json.dumps({"username": staff.username, "password": password})
        response = client.post("/api/auth/token/", body, content_type="application/json")
        assert response.status_code == 400, (password[:10], response.content[:300])
        assert "password" in response.json()


def test_a_good_sign_in_still_works_after_malformed_ones(staff: Any) -> None:
    client = APIClient(raise_request_exception=False)
    client.post("/api/auth/token/", _json("x" * 300), content_type="application/json")
    good = client.post("/api/auth/token/", {"username": staff.username, "password": PASSWORD})
    assert good.status_code == 200, good.content
    assert "token" in good.json()


# --------------------------------------------------------------------------- throttles


def test_many_usernames_from_one_address_are_throttled(staff: Any) -> None:
    """100 failures across 25 usernames from one address: the address is blocked (429),
    even for the right password of a real user; another address still signs in."""
    client = APIClient(raise_request_exception=False)
    statuses = []
    for i in range(100):
        body = {"username": f"guess-{i % 25}", "password": WRONG}
        statuses.append(client.post("/api/auth/token/", body, REMOTE_ADDR="10.9.9.9").status_code)
    print(f"[figures] 100 failures over 25 usernames: first 429 at {statuses.index(429) + 1}")
    assert 429 in statuses
    right = {"username": staff.username, "password": PASSWORD}
    assert client.post("/api/auth/token/", right, REMOTE_ADDR="10.9.9.9").status_code == 429
    assert client.post("/api/auth/token/", right, REMOTE_ADDR="10.9.9.10").status_code == 200


def test_one_username_from_many_addresses_is_throttled(staff: Any) -> None:
    """20 failures for one user from 20 loopback addresses, then the right password from a
    21st: refused (429) on the token endpoint, the sign-in page and HTTP Basic."""
    client = APIClient(raise_request_exception=False)
    for i in range(20):
        body = {"username": staff.username, "password": WRONG}
        client.post("/api/auth/token/", body, REMOTE_ADDR=f"127.0.0.{i + 2}")
    right = {"username": staff.username, "password": PASSWORD}
    token = client.post("/api/auth/token/", right, REMOTE_ADDR="127.0.0.99")
    assert token.status_code == 429, token.content
    page = Client().post("/login/", right, REMOTE_ADDR="127.0.0.98")
    assert page.status_code == 429
    assert _basic(staff.username, PASSWORD, REMOTE_ADDR="127.0.0.97").status_code in (401, 403)


def test_failures_from_many_addresses_trip_the_global_limit(
    staff: Any, viewer: Any, settings: Any
) -> None:
    """Failures spread over many addresses and usernames (no address, no username near its
    own limit) trip the global limit: every password sign-in is refused (429) until the
    cool-off, so a botnet cannot guess at full speed."""
    settings.LOGIN_GLOBAL_FAILURE_LIMIT = 60
    client = APIClient(raise_request_exception=False)
    for i in range(60):
        body = {"username": f"spray-{i}", "password": WRONG}
        client.post("/api/auth/token/", body, REMOTE_ADDR=f"127.0.{i // 200}.{i % 200 + 2}")
    right = {"username": viewer.username, "password": PASSWORD}
    answer = client.post("/api/auth/token/", right, REMOTE_ADDR="127.1.1.1")
    assert answer.status_code == 429, answer.content
    assert "try again" in answer.json()["detail"]


def test_failures_below_the_limits_leave_sign_in_open(staff: Any) -> None:
    """A few typos from a few addresses do not block anybody."""
    client = APIClient(raise_request_exception=False)
    for i in range(4):
        body = {"username": staff.username, "password": WRONG}
        client.post("/api/auth/token/", body, REMOTE_ADDR=f"127.0.0.{i + 2}")
    right = {"username": staff.username, "password": PASSWORD}
    assert client.post("/api/auth/token/", right, REMOTE_ADDR="127.0.0.2").status_code == 200
