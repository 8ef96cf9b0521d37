"""Helpers of the browser tests: the recorded Chromium page, polling, the worker's database."""

from __future__ import annotations

import hashlib
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import ConsoleMessage, Page
from support.processes import database_url as database_url  # re-exported

#: The demo cluster's scenario the browser tests import.
DEMO_CLUSTER = Path(__file__).resolve().parent / "data" / "demo-cluster.json"

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

#: axe-core, vendored from the npm registry (see vendor/README.md), injected from disk.
AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
AXE_VERSION = "4.14.1"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
#: The impacts that fail a page.
AXE_FAILING = ("serious", "critical")


def axe_source() -> str:
    """The vendored axe-core, checked against its pinned checksum."""
    data = AXE.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert digest == AXE_SHA256, f"{AXE} is not axe-core {AXE_VERSION} (sha256 {digest})"
    return data.decode()


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

    def upload(self, kind: str, files: list[Path], landing: str) -> None:
        """Use the import page's form (with its upload progress) and wait for the page
        whose URL matches *landing*."""
        self.goto("/import/")
        self.page.check(f'input[name="kind"][value="{kind}"]')
        self.page.set_input_files('input[name="upload"]', [str(f) for f in files])
        self.page.click('[data-testid="import-submit"]')
        self.page.wait_for_url(re.compile(landing))

    def import_demo(self) -> None:
        """Import the demo cluster's scenario through the import page; wait for its tree."""
        self.upload("snapshot", [DEMO_CLUSTER], r"/queues/\?")
        self.figures_rendered()

    def axe(self) -> list[str]:
        """Serious and critical axe-core violations of the page as it is now, one line each."""
        if not self.page.evaluate("typeof window.axe !== 'undefined'"):
            # evaluated through the DevTools protocol: an inline <script> tag would be
            # refused by the pages' Content-Security-Policy (script-src 'self')
            self.page.evaluate(axe_source())
        results = self.page.evaluate(
            """async () => {
                const r = await window.axe.run(document, {resultTypes: ["violations"]});
                return r.violations.map(v => ({
                    id: v.id, impact: v.impact, help: v.help,
                    nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + ": "
                        + (n.failureSummary || "").split("\\n").slice(1, 2).join(""))
                }));
            }"""
        )
        return [
            f"{v['impact']} {v['id']} ({v['help']}): {' | '.join(v['nodes'])}"
            for v in results
            if v["impact"] in AXE_FAILING
        ]

    def wait_js(self, expression: str, seconds: float = 30.0) -> None:
        """Wait until *expression* is true in the page, polled from here.

        Playwright's ``wait_for_function`` polls a string inside the page with ``eval``,
        which the pages' Content-Security-Policy (no ``'unsafe-eval'``) refuses;
        ``evaluate`` goes through the debugging protocol, which the policy does not cover.
        """
        from playwright.sync_api import Error as PlaywrightError

        deadline = time.monotonic() + seconds
        while True:
            try:
                if self.page.evaluate(expression):
                    return
            except PlaywrightError:
                pass  # not there yet (an element or a figure still missing)
            if time.monotonic() > deadline:
                raise AssertionError(f"not true within {seconds} s: {expression}")
            time.sleep(0.05)

    def set_theme(self, theme: str) -> None:
        """Switch to the *theme* (light or dark) with the page's own toggle."""
        if self.page.evaluate("document.documentElement.dataset.theme") != theme:
            self.page.click("#theme-toggle")
        self.wait_js(f"document.documentElement.dataset.theme === '{theme}'")

    def figures_rethemed(self) -> None:
        """Wait until the figures redrawn for a theme switched in place (``Plotly.relayout``
        in the page's script) are painted: two animation frames."""
        self.page.evaluate(
            "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
        )

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path
