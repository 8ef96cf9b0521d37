"""Issue 38, point 13: the served third-party pages, Swagger UI (``/api/docs/``) and DRF's
browsable API, pass axe (no serious or critical finding) in both themes at 1400 and 400 px:
the page's language, colours that meet AA, the browsable forms' fields labelled, no link
inside the button opening an operation; each says it is drawn in the light theme only."""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Browser
from playwright.sync_api import expect

from dashboard import models

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _docs(b: Browser, expanded: bool) -> None:
    b.goto("/api/docs/")
    b.page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    expect(b.page.get_by_test_id("api-docs-note")).to_contain_text("light theme only")
    if expanded:
        # one operation opened and its form offered: parameters, "Try it out", responses
        b.page.locator(".opblock-summary-control").first.click()
        b.page.locator(".try-out__btn").first.click()
        b.page.wait_for_selector(".opblock-body .parameters", timeout=30_000)


def test_swagger_ui_and_the_browsable_api_pass_axe(browser: Browser, staff_user: Any) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    browsable = [
        "/api/",
        "/api/runs/",  # a list with its POST form
        "/api/snapshots/",
        f"/api/snapshots/{snapshot.pk}/",  # a detail with DELETE and its confirmation
        "/api/quota-changes/",  # a form with a select, a JSON field, help texts
        "/api/runs/999999/",  # a 404 answer
    ]
    problems: list[str] = []
    b.expect_console_error(r"404 \(Not Found\)")
    b.expect_console_error(r"404 \(Not Found\)")
    b.expect_console_error(r"404 \(Not Found\)")
    b.expect_console_error(r"404 \(Not Found\)")
    for theme in ("light", "dark"):
        b.goto("/queues/")
        b.set_theme(theme)  # the product's stored choice; these pages stay light
        for width in (1400, 400):
            b.page.set_viewport_size({"width": width, "height": 860})
            where = f"[{theme} {width} px]"
            for expanded in (False, True):
                _docs(b, expanded)
                assert b.page.evaluate("document.documentElement.lang") == "en"
                problems.extend(
                    f"{where} /api/docs/{' (open)' if expanded else ''}: {v}" for v in b.axe()
                )
            for path in browsable:
                b.goto(path)
                assert b.page.evaluate("document.documentElement.lang") == "en"
                expect(b.page.get_by_test_id("api-browsable-note")).to_be_visible()
                problems.extend(f"{where} {path}: {v}" for v in b.axe())
    assert problems == [], "\n".join(problems)
