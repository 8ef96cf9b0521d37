"""The flush that empties the database after a ``transaction=True`` test, retried when
PostgreSQL chose it as a deadlock's victim.

Tests that share a Celery worker and beat across a module (``shared_cluster`` of the
integration suite, the live scheduler tests) leave those processes running while
pytest-django flushes the tables after each test: their sweeps and heartbeats still
open transactions, and a ``TRUNCATE`` taking its exclusive locks table by table can
deadlock with one of them. PostgreSQL then aborts one of the two; when it aborts the
flush, the test's rows stay behind for the next test of that process. A deadlock's
victim is meant to be run again, so the flush is, a few times; any other error is
raised as before.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import CommandError
from django.core.management.commands import flush

#: PostgreSQL's SQLSTATE of ``deadlock detected``
DEADLOCK = "40P01"
ATTEMPTS = 5
#: seconds between attempts, times the attempt's number
PAUSE = 0.2


def _deadlocked(exc: BaseException) -> bool:
    """Whether *exc*'s causes hold PostgreSQL's deadlock error."""
    cause = exc.__cause__
    while cause is not None:
        if getattr(cause, "sqlstate", None) == DEADLOCK:
            return True
        cause = cause.__cause__
    return False


def install() -> None:
    """Make Django's ``flush`` command retry a flush that lost a deadlock."""
    handle = flush.Command.handle
    if getattr(handle, "retries_deadlocks", False):
        return

    def handle_retrying(self: flush.Command, **options: Any) -> None:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                handle(self, **options)
                return
            except CommandError as exc:
                if attempt == ATTEMPTS or not _deadlocked(exc):
                    raise
                time.sleep(PAUSE * attempt)

    handle_retrying.retries_deadlocks = True  # type: ignore[attr-defined]
    flush.Command.handle = handle_retrying  # type: ignore[method-assign]
