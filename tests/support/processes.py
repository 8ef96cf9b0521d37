"""Child processes of the tests: the test database's URL for them, their environment,
process control and free ports (one definition for every suite)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection

from loadtest.stack import Proc, free_port, port_open, wait_for

__all__ = [
    "FAILED",
    "ROOT",
    "Proc",
    "child_env",
    "database_url",
    "free_port",
    "port_open",
    "wait_for",
    "wait_until",
]

ROOT = Path(__file__).resolve().parents[2]

#: Set on a test whose set-up or call failed (by the shared plugin), for the teardowns
#: of processes shared between tests: a failed test's processes are not reused.
FAILED = pytest.StashKey[bool]()


def database_url() -> str:
    """DATABASE_URL of the test database this process uses now (for a child process)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    if connection.vendor == "postgresql":
        auth = s["USER"] or "postgres"
        if s.get("PASSWORD"):
            auth += f":{s['PASSWORD']}"
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise AssertionError(f"unsupported database vendor {connection.vendor}")


def child_env(broker: str, **extra: str) -> dict[str, str]:
    """The environment of a Celery process reaching this test database and *broker*.

    pytest's own variables (the xdist worker's name among them) stay behind.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": broker,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra)
    return env


def wait_until(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll *condition* until true; fail after *seconds* (a bound, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out after {seconds}s waiting for {what}")
