"""Fixtures of the alerting tests: real local receivers (tests/alert_receivers.py).

A module using ``webhook`` defines the ``webhook_secret`` fixture: the key the receiver
checks each delivery's HMAC signature with."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alert_receivers import HttpReceiver, MailBox, http_receiver, smtp_server


@pytest.fixture
def webhook(webhook_secret: str) -> Iterator[HttpReceiver]:
    """A webhook receiver checking signatures made with *webhook_secret*."""
    with http_receiver(HttpReceiver(secret=webhook_secret)) as receiver:
        yield receiver


@pytest.fixture
def mailbox() -> Iterator[MailBox]:
    """An SMTP server keeping what it receives."""
    with smtp_server() as box:
        yield box
