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
)
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import override_settings
from playwright.sync_api import Browser as PlaywrightBrowser
from playwright.sync_api import Playwright, sync_playwright
from support.brokers import using_broker
from support.processes import child_env, wait_until
from support.readers import reads_every_queue

from dashboard.pages import memo

WORKER_ARGS = [
    "--loglevel=INFO",
    "--pool=solo",
    "--without-gossip",
    "--without-mingle",
    "--without-heartbeat",
    f"--hostname=browser-{os.getpid()}@%h",
]


@pytest.fixture
def worker(
    redis_url: str, transactional_db: None, tmp_path: Path, settings: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """A real ``celery worker`` on the test database; the live server sends it tasks via Redis."""
    redis.Redis.from_url(redis_url).flushdb()
    with using_broker(redis_url):
        log = tmp_path / "worker.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", "worker", *WORKER_ARGS],
                cwd=ROOT,
                env=child_env(redis_url),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

        def ready() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"the worker exited: {log.read_text(errors='replace')[-3000:]}")
            return " ready." in log.read_text(errors="replace")

        try:
            wait_until(ready, 90, "the Celery worker to start")
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)


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


@pytest.fixture(scope="session")
def chromium(playwright: Playwright) -> Iterator[PlaywrightBrowser]:
    """One Chromium for the session; each test gets a context of its own in it (its own
    cookies, storage and cache, as a fresh profile would have)."""
    started = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    try:
        yield started
    finally:
        started.close()


@pytest.fixture
def browser(chromium: PlaywrightBrowser, live_server: Any) -> Iterator[Browser]:
    # per-snapshot page values are cached by id, checksum and import time, which a
    # flushed test database hands out again
    cache.clear()
    memo.clear_all()
    context = chromium.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
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
    return reads_every_queue(get_user_model().objects.create_user("viewer-vic", password=PASSWORD))
