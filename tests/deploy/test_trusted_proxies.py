"""TRUSTED_PROXIES on the image's web command: behind a trusted proxy (the test's own
address, 127.0.0.1, plays the ingress) the login throttle, its records and the access
log key on the client's X-Forwarded-For address; a forwarded header from a peer that is
not a trusted proxy is ignored. One gunicorn worker per web process (each worker imports
Django; the throttle's records are in the database, whichever worker answers)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_support import Deployment, request, sqlite_site, staff_user

pytestmark = pytest.mark.integration

PASSWORD = "proxy-test-pw-1"


@pytest.fixture(scope="module")
def site(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path
) -> Iterator[Deployment]:
    deployment = sqlite_site(redis_url, tmp_path_factory.mktemp("trusted-proxies"), migrated_sqlite)
    staff_user(deployment, PASSWORD)
    yield deployment
    deployment.stop_all()


def _sign_in(port: int, password: str, forwarded_for: str | None, user: str = "ops") -> int:
    headers = {"Content-Type": "application/json"}
    if forwarded_for is not None:
        headers["X-Forwarded-For"] = forwarded_for
    body = json.dumps({"username": user, "password": password}).encode()
    return request(port, "/api/auth/token/", method="POST", body=body, headers=headers).status


def _database(site: Deployment) -> sqlite3.Connection:
    return sqlite3.connect(site.env["DATABASE_URL"].removeprefix("sqlite:///"), timeout=30)


def _attempt_addresses(site: Deployment) -> set[str]:
    """The addresses django-axes recorded failed sign-ins under."""
    with contextlib.closing(_database(site)) as db:
        return {row[0] for row in db.execute("SELECT ip_address FROM axes_accessattempt")}


def _clear_attempts(site: Deployment) -> None:
    with contextlib.closing(_database(site)) as db, db:
        db.execute("DELETE FROM axes_accessattempt")


def test_behind_a_trusted_proxy_one_client_does_not_lock_out_another(
    site: Deployment,
) -> None:
    _clear_attempts(site)
    proc, port = site.web(TRUSTED_PROXIES="127.0.0.0/8, 10.0.0.0/8", GUNICORN_WORKERS="1")
    # 25 wrong passwords over 5 usernames (none of them the other user's: a username has
    # its own limit from any address); the attacker forges a left-most entry, and the
    # ingress (10.0.0.3) appended the address it saw
    attacker = "6.6.6.6, 203.0.113.66, 10.0.0.3"
    statuses = [_sign_in(port, "wrong", attacker, f"user{i % 5}") for i in range(25)]
    assert statuses[0] == 400, statuses
    assert statuses[-1] == 429, statuses  # the attacker is throttled
    assert _sign_in(port, PASSWORD, attacker) == 429
    # another user behind the same ingress signs in
    assert _sign_in(port, PASSWORD, "198.51.100.7") == 200
    assert _attempt_addresses(site) == {"203.0.113.66"}
    time.sleep(0.5)  # the access log line of the last request is written
    log = proc.text()
    assert "198.51.100.7 - - [" in log
    assert "203.0.113.66 - - [" in log
    proc.stop()


def test_a_forwarded_header_from_an_untrusted_peer_is_ignored(site: Deployment) -> None:
    """With a TRUSTED_PROXIES the peer is not in (as without one: tests/dashboard), a
    client cannot dodge the throttle by writing a new X-Forwarded-For on every attempt."""
    _clear_attempts(site)
    proc, port = site.web(TRUSTED_PROXIES="10.0.0.0/8", GUNICORN_WORKERS="1")
    statuses = [_sign_in(port, "wrong", f"203.0.113.{i}", f"user{i % 5}") for i in range(25)]
    assert statuses[-1] == 429, statuses
    assert _sign_in(port, PASSWORD, "198.51.100.7") == 429
    assert _attempt_addresses(site) == {"127.0.0.1"}
    proc.stop()
