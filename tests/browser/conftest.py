"""Browser tests: Debian's headless Chromium driven by Playwright against the live server.

The pages run in the live server thread; their what-if runs go through real
Redis to a real Celery worker process that reaches the same test database
(PostgreSQL in CI, the SQLite test file locally).  Every test fails on any
browser console error or uncaught page error, and on any ``alert()`` /
``confirm()`` dialog.  Screenshots go to ``artifacts/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from browser_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PASSWORD,
    ROOT,
    Browser,
    database_url,
    wait_until,
)
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import override_settings
from playwright.sync_api import Playwright, sync_playwright

from dashboard.celery import app as celery_app
from dashboard.pages import memo

# Locally a Redis database of its own (integration tests use 14, the sources tests 13).
DEFAULT_REDIS = "redis://127.0.0.1:6379/12"
WORKER_ARGS = [
    "--loglevel=INFO",
    "--pool=solo",
    "--without-gossip",
    "--without-mingle",
    "--without-heartbeat",
    f"--hostname=browser-{os.getpid()}@%h",
]


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL") or DEFAULT_REDIS
    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis at {url} cannot be reached in CI: {exc}")
        pytest.skip(f"Redis at {url} cannot be reached: {exc}")
    return url


def _drop_broker_pools() -> None:
    """Forget connections and producers made for another broker URL.

    ``app.close()`` only drops the connection pool; the producer pool cached on
    ``app.amqp`` would keep publishing to the broker it was first made for.
    """
    celery_app.close()
    celery_app.amqp._producer_pool = None  # type: ignore[attr-defined]  # private, untyped


@pytest.fixture
def worker(
    redis_url: str, transactional_db: None, tmp_path: Path, settings: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``celery worker`` on the test database; the live server sends it tasks via Redis."""
    redis.Redis.from_url(redis_url).flushdb()
    old = (celery_app.conf.broker_url, celery_app.conf.task_always_eager)
    celery_app.conf.broker_url = redis_url  # type: ignore[misc]  # celery-types: read-only
    celery_app.conf.task_always_eager = False
    _drop_broker_pools()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "dashboard.settings",
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": redis_url,
            "REDIS_URL": redis_url,
            "CELERY_TASK_ALWAYS_EAGER": "false",
            "PYTHONUNBUFFERED": "1",
        }
    )
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "dashboard", "worker", *WORKER_ARGS],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def ready() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"the worker exited: {log.read_text(errors='replace')[-3000:]}")
        return " ready." in log.read_text(errors="replace")

    wait_until(ready, 90, "the Celery worker to start")
    yield proc
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    celery_app.conf.broker_url, celery_app.conf.task_always_eager = old  # type: ignore[misc]
    _drop_broker_pools()


# --------------------------------------------------------------------------- browser


@pytest.fixture(scope="session")
def _plain_http() -> Iterator[None]:
    """The live server speaks plain HTTP: no SSL redirect, cookies not HTTPS-only.

    Session-wide and before the live server starts, because the security
    middleware reads these settings once, when the server builds its handler.
    """
    override = override_settings(
        SECURE_SSL_REDIRECT=False,
        SESSION_COOKIE_SECURE=False,
        CSRF_COOKIE_SECURE=False,
        SECURE_HSTS_SECONDS=0,
        DASHBOARD_WARM_WEB=False,  # no threads touching a database being flushed
    )
    override.enable()
    yield
    override.disable()


@pytest.fixture(scope="session")
def live_server(_plain_http: None, live_server: Any) -> Any:
    """pytest-django's live server, started with the plain-HTTP settings above."""
    return live_server


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is missing at {CHROMIUM} (apt-get install -y chromium)")
    # Playwright's sync API keeps an event loop running in this thread; the ORM calls the
    # tests make in between are plain synchronous code, which Django must be told to allow.
    old = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            yield p
    finally:
        if old is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = old


@pytest.fixture
def browser(playwright: Playwright, live_server: Any, tmp_path: Path) -> Iterator[Browser]:
    # per-snapshot page values are cached by id, checksum and import time, which a
    # flushed test database hands out again
    cache.clear()
    memo.clear_all()
    context = playwright.chromium.launch_persistent_context(
        str(tmp_path / "chromium-profile"),
        executable_path=CHROMIUM,
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1440, "height": 900},
    )
    page = context.pages[0] if context.pages else context.new_page()
    page.set_default_timeout(30_000)
    b = Browser(page, live_server.url)
    page.on("console", b.on_console)
    page.on("pageerror", lambda exc: b.errors.append(f"page error: {exc}"))

    def on_dialog(dialog: Any) -> None:
        b.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        yield b
    finally:
        context.close()
    problems = b.unexpected()
    if problems and not b.checked:  # errors that came after the test body, while closing
        pytest.fail("browser reported problems:\n" + "\n".join(problems))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail the test itself (not only its teardown) on console errors or dialogs."""
    result = yield
    b = getattr(item, "funcargs", {}).get("browser")
    if isinstance(b, Browser):
        problems = b.unexpected()
        if problems:
            b.checked = True
            pytest.fail("browser reported problems:\n" + "\n".join(problems))
    return result


@pytest.fixture
def staff_user(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("ops-admin", password=PASSWORD, is_staff=True)


@pytest.fixture
def viewer_user(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("viewer-vic", password=PASSWORD)
