"""Every channel gives up on a receiver that accepts the connection and never answers:
a Slack webhook after ALERT_HTTP_TIMEOUT, an SMTP server that never greets after
ALERT_EMAIL_TIMEOUT. The try is recorded as a failure a later try may cure."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scenarios import T0

from dashboard import models, services

pytestmark = pytest.mark.django_db


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A local server that accepts connections, reads, and never writes a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    server.close()
    thread.join(timeout=5)
    for conn in held:
        conn.close()


@pytest.fixture
def raise_committed(
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> Callable[[], models.Alert]:
    def raise_it() -> models.Alert:
        with django_capture_on_commit_callbacks(execute=True):
            return services.raise_alert(
                models.Alert.Kind.ENGINE, "an engine problem", level="error", now=T0
            )

    return raise_it


def test_a_slack_receiver_that_never_answers_times_out(
    silent_port: int, raise_committed: Callable[[], models.Alert], settings: Any
) -> None:
    settings.ALERT_HTTP_TIMEOUT = 1.0
    route = models.AlertRoute(
        name="slack", channel="slack", url=f"http://127.0.0.1:{silent_port}/hook"
    )
    route.full_clean()
    route.save()
    alert = raise_committed()
    row = models.AlertDelivery.objects.get(alert=alert, route=route)
    assert row.status == "pending"  # tried again later
    assert "timed out: ReadTimeout" in row.last_error


def test_an_smtp_server_that_never_greets_times_out(
    silent_port: int, raise_committed: Callable[[], models.Alert], settings: Any
) -> None:
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", silent_port
    settings.ALERT_EMAIL_TIMEOUT = 1.0
    route = models.AlertRoute(name="mail", channel="email", email_to="ops@example.org")
    route.full_clean()
    route.save()
    alert = raise_committed()
    row = models.AlertDelivery.objects.get(alert=alert, route=route)
    assert row.status == "pending"
    assert "cannot send the e-mail" in row.last_error
    assert "timed out" in row.last_error
