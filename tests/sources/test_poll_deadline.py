"""A poll's overall deadline (dashboard.sources.deadline) against a scheduler that
trickles its answer: every wait for bytes is short, so only the deadline ends it."""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from dashboard.sources.client import FetchError, FetchPolicy, fetch_snapshot_files
from dashboard.sources.deadline import DeadlineExceeded, bounded, poll_deadline, remaining


@pytest.fixture
def trickling() -> Iterator[str]:
    """A server answering headers at once, then one body byte every 0.3 s, forever."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                while not stop.is_set():
                    conn.sendall(b" ")
                    readable, _, _ = select.select([conn], [], [], 0.3)
                    if readable and not conn.recv(1):
                        return
            except OSError:
                return

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    server.close()


def test_a_trickling_answer_fails_at_the_deadline_naming_it(trickling: str) -> None:
    """Per-read timeouts never fire (a byte comes every 0.3 s); the deadline ends the
    poll soon after it passes, not retried, with a message naming the setting."""
    policy = FetchPolicy(timeout=5.0, retries=3, backoff=0.1)
    started = time.monotonic()
    with poll_deadline(1.5), pytest.raises(FetchError) as caught:
        fetch_snapshot_files(trickling, "default", policy=policy)
    elapsed = time.monotonic() - started
    assert caught.value.endpoint == "/ws/v1/partitions"
    assert "overall deadline of 1.5 s (SOURCES_POLL_DEADLINE_SECONDS)" in caught.value.message
    assert caught.value.attempts == 1
    # a bound (the deadline plus one byte's interval and a margin), not a timing target
    assert elapsed < 1.5 + 5.0, elapsed


def test_without_a_deadline_nothing_is_bounded() -> None:
    assert remaining() is None
    assert bounded(7.0) == 7.0
    with poll_deadline(None):
        assert remaining() is None
    with poll_deadline(0):
        assert remaining() is None


def test_the_deadline_bounds_waits_and_ends_with_its_block() -> None:
    with poll_deadline(60):
        left = remaining()
        assert left is not None
        assert 0 < left <= 60
        assert bounded(5.0) == 5.0
        assert bounded(600.0) <= 60
    assert remaining() is None
    with poll_deadline(0.01):
        time.sleep(0.05)
        with pytest.raises(DeadlineExceeded, match="SOURCES_POLL_DEADLINE_SECONDS"):
            remaining()
