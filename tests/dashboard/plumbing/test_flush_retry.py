"""The test plugin's flush (support.flush): retried when PostgreSQL aborted it as a
deadlock's victim, raised at once on any other error."""

from __future__ import annotations

from typing import Any

import psycopg.errors
import pytest
from django.core.management.base import CommandError
from django.core.management.commands import flush
from django.db.utils import OperationalError
from support import flush as support_flush


def _failure(cause: Exception) -> CommandError:
    django_error = OperationalError(str(cause))
    django_error.__cause__ = cause
    error = CommandError("Database x couldn't be flushed.")
    error.__cause__ = django_error
    return error


def _command(monkeypatch: pytest.MonkeyPatch, failures: list[CommandError]) -> list[int]:
    calls: list[int] = []

    def handle(self: Any, **options: Any) -> None:
        calls.append(1)
        if failures:
            raise failures.pop(0)

    monkeypatch.setattr(flush.Command, "handle", handle)
    monkeypatch.setattr(support_flush, "PAUSE", 0.0)
    support_flush.install()
    return calls


def test_a_flush_that_lost_a_deadlock_runs_again(monkeypatch: pytest.MonkeyPatch) -> None:
    deadlock = psycopg.errors.DeadlockDetected("deadlock detected")
    calls = _command(monkeypatch, [_failure(deadlock), _failure(deadlock)])
    flush.Command().handle()
    assert len(calls) == 3


def test_any_other_flush_error_is_raised_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = psycopg.errors.UndefinedTable("relation does not exist")
    calls = _command(monkeypatch, [_failure(missing)])
    with pytest.raises(CommandError):
        flush.Command().handle()
    assert len(calls) == 1


def test_a_deadlock_every_time_is_raised_after_the_last_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deadlock = psycopg.errors.DeadlockDetected("deadlock detected")
    failures = [_failure(deadlock) for _ in range(support_flush.ATTEMPTS)]
    calls = _command(monkeypatch, failures)
    with pytest.raises(CommandError):
        flush.Command().handle()
    assert len(calls) == support_flush.ATTEMPTS
