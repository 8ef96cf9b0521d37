"""Helpers of the browser tests: the recorded Chromium page, polling, the worker's database."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import ConsoleMessage, Page

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "browser-test-pw-1"


def database_url() -> str:
    """DATABASE_URL of the test database this process uses (for the worker process)."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    if connection.vendor == "postgresql":
        auth = s["USER"] or "postgres"
        if s.get("PASSWORD"):
            auth += f":{s['PASSWORD']}"
        return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    raise AssertionError(f"unsupported database vendor {connection.vendor}")


def wait_until(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll *condition* until true; fail after *seconds* (a bound, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out after {seconds}s waiting for {what}")


@dataclass
class Browser:
    """One page in a fresh Chromium profile, with every console error and dialog recorded."""

    page: Page
    base: str
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    checked: bool = False

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console error: {message.text} ({message.location})")

    def expect_console_error(self, pattern: str) -> None:
        """Allow exactly one console error matching *pattern* (e.g. the 403 of a refused edit)."""
        self.expected.append(pattern)

    def unexpected(self) -> list[str]:
        left = list(self.errors)
        for pattern in self.expected:
            match = next((e for e in left if re.search(pattern, e)), None)
            if match is None:
                return [f"expected a console error matching {pattern!r}, got {self.errors}"]
            left.remove(match)
        return left + [f"dialog opened: {d}" for d in self.dialogs]

    def goto(self, path: str) -> None:
        self.page.goto(self.base + path)

    def sign_in(self, username: str) -> None:
        self.goto("/login/")
        self.page.fill("#id_username", username)
        self.page.fill("#id_password", PASSWORD)
        self.page.click("button[type=submit]")
        self.page.wait_for_selector('[data-testid="signed-in-user"]')

    def figures_rendered(self) -> None:
        """Wait until every Plotly figure of the page has been drawn."""
        self.page.wait_for_selector("html[data-figures-rendered]", timeout=30_000)

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path
