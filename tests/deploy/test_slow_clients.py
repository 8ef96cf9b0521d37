"""Slow clients against the image's web command (``entrypoint.sh web``, real gunicorn):
100 connections sending their request headers a byte every few seconds, a few sending a
small body the same way, and 50 idle connections, while /livez and /login/ are asked
again and again.  Each must answer within a second throughout (a generous bound on a
behaviour, not a speed figure: the worst times are printed)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_support import Proc, request, sqlite_site

pytestmark = pytest.mark.integration

SLOW_HEAD = b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow\r\nX-A: " + b"a" * 200
SLOW_BODY_HEAD = (
    b"POST /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 4000\r\n\r\n"
)


@pytest.fixture(scope="module")
def web(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, migrated_sqlite: Path
) -> Iterator[tuple[Proc, int]]:
    deployment = sqlite_site(redis_url, tmp_path_factory.mktemp("slow-clients"), migrated_sqlite)
    # the image's defaults (2 processes of 8 threads): 100 slow clients are 6 times that
    proc, port = deployment.web()
    _warm_up(port)
    yield proc, port
    deployment.stop_all()


def _warm_up(port: int) -> None:
    """Ask /login/ until it answered quickly 8 times in a row: each process's first page
    loads the templates and the database connection (seconds on a busy machine), which
    is no slow client's doing."""
    quick = 0
    deadline = time.monotonic() + 90
    while quick < 8 and time.monotonic() < deadline:
        started = time.monotonic()
        assert request(port, "/login/", timeout=30).status == 200
        quick = quick + 1 if time.monotonic() - started < 0.5 else 0


class Trickle(threading.Thread):
    """Sockets each sent *payload* one byte per *every* seconds (all from one thread)."""

    def __init__(self, port: int, payloads: list[bytes], every: float) -> None:
        super().__init__(daemon=True)
        self.socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in payloads]
        self.payloads = payloads
        self.every = every
        self.stop = threading.Event()
        self.sent = 0

    def run(self) -> None:
        position = 0
        while not self.stop.is_set():
            for sock, payload in zip(self.socks, self.payloads, strict=True):
                if position < len(payload):
                    try:
                        sock.send(payload[position : position + 1])
                        self.sent += 1
                    except OSError:
                        pass
            position += 1
            self.stop.wait(self.every)

    def close(self) -> None:
        self.stop.set()
        self.join(10)
        for sock in self.socks:
            sock.close()


def test_slow_and_idle_clients_leave_livez_and_login_answering(web: tuple[Proc, int]) -> None:
    proc, port = web
    slow = Trickle(port, [SLOW_HEAD] * 100 + [SLOW_BODY_HEAD + b"x" * 4000] * 10, every=2.0)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(50)]
    slow.start()
    worst: dict[str, float] = {"/livez": 0.0, "/login/": 0.0}
    asked = 0
    try:
        time.sleep(3)  # every slow client has sent its first bytes (and the body clients
        # their whole head): gthread alone would have given each of them a thread now
        finish = time.monotonic() + 12
        while time.monotonic() < finish:
            for path in worst:
                started = time.monotonic()
                answer = request(port, path, timeout=1.0)
                elapsed = time.monotonic() - started
                assert answer.status == 200, (path, answer.status, answer.text()[:300])
                worst[path] = max(worst[path], elapsed)
                asked += 1
            time.sleep(0.2)
        assert slow.sent > 110 * 5, slow.sent  # the slow clients kept sending throughout
        assert proc.alive()
    finally:
        slow.close()
        for sock in idle:
            sock.close()
    print(
        f"{asked} requests beside 110 slow and 50 idle clients; worst /livez "
        f"{worst['/livez']:.3f} s, worst /login/ {worst['/login/']:.3f} s"
    )


def test_a_request_sent_in_pieces_is_answered(web: tuple[Proc, int]) -> None:
    """The buffering still serves a request whose head and body arrive in pieces, and a
    second request on the same kept-alive connection."""
    _, port = web
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        for piece in (b"GET /livez HTTP/1.1\r\nHo", b"st: 127.0.0.1\r\n", b"\r\n"):
            sock.sendall(piece)
            time.sleep(0.2)
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200"), first[:200]
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        second = b""
        while chunk := sock.recv(65536):
            second += chunk
        assert second.startswith(b"HTTP/1.1 200"), second[:200]


def test_an_endless_head_is_refused(web: tuple[Proc, int]) -> None:
    """A head past GUNICORN_LIMIT_REQUEST_HEAD (64 KiB) is answered 431, naming it."""
    _, port = web
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            for _ in range(40):
                sock.sendall(b"X-Filler: " + b"f" * 4000 + b"\r\n")
        except OSError:
            pass  # the server may close while the rest is still being sent
        answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"GUNICORN_LIMIT_REQUEST_HEAD" in answer
