"""The web process at its edge, on real gunicorn (``entrypoint.sh web``) with raw sockets:
bodies over the limit refused from their Content-Length before anything reads them,
the one variable for a TLS-terminating proxy, the Content-Security-Policy, and idle
connections that leave the login page answering."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_support import Deployment, Proc, request, sign_in, sqlite_site, staff_token

pytestmark = pytest.mark.integration

PASSWORD = "deploy-test-pw-1"


@pytest.fixture(scope="module")
def site(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path
) -> Iterator[Deployment]:
    """A migrated SQLite installation (a copy of the session's) with a staff user "ops"
    and an API token."""
    deployment = sqlite_site(redis_url, tmp_path_factory.mktemp("web-edge"), migrated_sqlite)
    staff_token(deployment, PASSWORD)
    yield deployment
    deployment.stop_all()


@pytest.fixture(scope="module")
def web(site: Deployment) -> tuple[Proc, int]:
    return site.web()


def _token(site: Deployment) -> str:
    out = site.run(
        "manage",
        "shell",
        "-c",
        "from rest_framework.authtoken.models import Token; print(Token.objects.get().key)",
    )
    return out.strip().splitlines()[-1]


def raw_exchange(port: int, head: bytes, body: bytes = b"", timeout: float = 30.0) -> bytes:
    """Send *head* (and *body*), read the whole answer until the server closes or stops."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + body)
        chunks = []
        try:
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                if b"\r\n\r\n" in b"".join(chunks):
                    data = b"".join(chunks)
                    header, _, rest = data.partition(b"\r\n\r\n")
                    match = re.search(rb"(?i)content-length: (\d+)", header)
                    if match and len(rest) >= int(match.group(1)):
                        break
        except TimeoutError:
            pass
    return b"".join(chunks)


def _post_head(path: str, length: int, content_type: str, extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


def _status_and_body(answer: bytes) -> tuple[int, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def test_a_huge_declared_body_is_refused_without_being_sent(
    site: Deployment, web: tuple[Proc, int]
) -> None:
    """A Content-Length of a gigabyte gets 413 at once although not one body byte was
    sent: nothing waited for, read or parsed the body (JSON under /api/, HTML elsewhere).
    Signed in, the answer names the signed-in limit; not signed in, its own."""
    _, port = web
    gigabyte = 10**9
    signed_in = f"Authorization: Token {_token(site)}\r\n"
    head = _post_head("/api/configs/", gigabyte, "multipart/form-data; b=x", signed_in)
    status, body = _status_and_body(raw_exchange(port, head))
    assert status == 413
    detail = json.loads(body)
    assert detail["limit_bytes"] == 8 * 10 * 1024 * 1024 + 1024 * 1024
    assert f"request body of {gigabyte} bytes is larger than the limit" in detail["detail"]
    answer = raw_exchange(port, _post_head("/api/configs/", gigabyte, "multipart/form-data; b=x"))
    status, body = _status_and_body(answer)
    assert status == 413
    assert json.loads(body)["limit_bytes"] == 16384
    answer = raw_exchange(port, _post_head("/login/", gigabyte, "multipart/form-data; b=x"))
    status, body = _status_and_body(answer)
    assert status == 413
    assert b"<h1>Request refused (413)</h1>" in body
    assert b"DASHBOARD_ANONYMOUS_MAX_BODY_BYTES" in body


def test_a_body_not_signed_in_is_refused_above_a_login_form(web: tuple[Proc, int]) -> None:
    """Not signed in: at most a login form's worth (16 KiB); the body is never sent."""
    _, port = web
    answer = raw_exchange(port, _post_head("/api/snapshots/", 100_000, "application/json"))
    status, body = _status_and_body(answer)
    assert status == 413
    assert json.loads(body) == {
        "detail": "request body of 100000 bytes is larger than the limit of 16384 bytes for "
        "requests that are not signed in (DASHBOARD_ANONYMOUS_MAX_BODY_BYTES)",
        "limit_bytes": 16384,
    }
    # a wrong token is not signed in either
    answer = raw_exchange(
        port,
        _post_head("/api/snapshots/", 100_000, "application/json", "Authorization: Token nope\r\n"),
    )
    assert _status_and_body(answer)[0] == 413


def test_a_signed_in_request_may_send_a_large_body(site: Deployment, web: tuple[Proc, int]) -> None:
    """With a valid API token the same body is read and answered by the view (400: it is
    not a snapshot), not refused by the limit."""
    _, port = web
    body = json.dumps({"junk": "x" * 100_000}).encode()
    head = _post_head(
        "/api/snapshots/", len(body), "application/json", f"Authorization: Token {_token(site)}\r\n"
    )
    status, answer = _status_and_body(raw_exchange(port, head, body))
    assert status == 400, answer[:500]


def test_a_body_without_a_length_is_refused(web: tuple[Proc, int]) -> None:
    _, port = web
    head = (
        b"POST /api/snapshots/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    status, body = _status_and_body(raw_exchange(port, head, b"2\r\n{}\r\n0\r\n\r\n"))
    assert status == 411
    assert json.loads(body) == {"detail": "a request body needs a Content-Length header"}


def test_the_login_page_works_within_the_anonymous_limit(web: tuple[Proc, int]) -> None:
    """Signing in (a form under the limit) still works: CSRF token, then a redirect."""
    _, port = web
    sign_in(port, PASSWORD)


def test_every_page_carries_the_content_security_policy(web: tuple[Proc, int]) -> None:
    _, port = web
    for path in ("/login/", "/api/", "/static/dashboard/css/dashboard.css", "/nope/", "/admin/"):
        policy = request(port, path).headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy, path
        assert "default-src 'self'" in policy, path
        assert "frame-ancestors 'none'" in policy, path


def test_one_variable_sets_up_a_tls_terminating_proxy(site: Deployment) -> None:
    """DASHBOARD_PUBLIC_URL=https://...: that host is served, the proxy's
    X-Forwarded-Proto is trusted, cookies are Secure, HSTS is sent, plain HTTP redirected."""
    _, port = site.web(
        DASHBOARD_PUBLIC_URL="https://dash.example.org",
        SECURE_SSL_REDIRECT="",
        ALLOWED_HOSTS="",
    )
    via_proxy = {"Host": "dash.example.org", "X-Forwarded-Proto": "https"}
    page = request(port, "/login/", headers=via_proxy)
    assert page.status == 200, page.text()[:300]
    assert page.headers["strict-transport-security"].startswith("max-age=31536000")
    assert "Secure" in page.headers["set-cookie"]
    plain = request(port, "/login/", headers={"Host": "dash.example.org"})
    assert (plain.status, plain.headers["location"]) == (301, "https://dash.example.org/login/")
    assert request(port, "/login/", headers={"Host": "elsewhere.example.org"}).status == 400


def test_idle_connections_leave_the_login_page_answering(web: tuple[Proc, int]) -> None:
    """50 idle TCP connections (nothing sent, nobody signed in) hold no worker thread:
    /login/ still answers (a generous bound on the request; the time is printed)."""
    _, port = web
    idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(50)]
    try:
        time.sleep(0.5)  # every idle connection accepted and waiting
        started = time.monotonic()
        page = request(port, "/login/", timeout=20)
        elapsed = time.monotonic() - started
        assert page.status == 200
        print(f"/login/ answered in {elapsed:.3f} s beside 50 idle connections")
    finally:
        for sock in idle:
            sock.close()
