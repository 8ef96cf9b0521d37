"""The Content-Security-Policy in Chromium: every main page, the admin and the API docs
work under it with no violation, and no page fetches anything from outside the machine.

Violations are caught twice: Chromium's console error (the suite fails on any) and the
``securitypolicyviolation`` events the pages fire, recorded by an init script.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest
from browser_support import Browser

from dashboard import models

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


def test_pages_work_under_the_policy_and_fetch_nothing_from_outside(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    requested: list[str] = []
    b.page.on("request", lambda r: requested.append(r.url))
    b.page.context.add_init_script(RECORD_VIOLATIONS)
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    b.goto(f"/whatif/?snapshot={snapshot.pk}")
    b.page.click('[data-testid="run-preempt"]')
    b.page.get_by_test_id("run-outcome").wait_for(timeout=60_000)
    run = models.PreemptionRun.objects.get()
    pages = [
        "/queues/",
        "/queues/detail/?queue=root.batch",
        "/nodes/",
        f"/whatif/?run={run.pk}",
        f"/runs/{run.pk}/",
        "/changes/",
        "/history/",
        "/alerts/",
        "/configs/",
        "/import/",
        "/plans/",
        "/admin/",
    ]
    seen: dict[str, list[str]] = {}
    for path in pages:
        response = b.page.goto(b.base + path)
        assert response is not None, path
        assert response.status == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"], path
        b.page.wait_for_load_state("networkidle")
        if b.page.locator(".js-plotly-plot").count():
            b.figures_rendered()
        seen[path] = b.page.evaluate("window.__cspViolations")
    # the API docs: Swagger UI from the dashboard's own static files (ReDoc's old
    # address leads there)
    for path in ("/api/docs/", "/api/redoc/"):
        response = b.page.goto(b.base + path)
        assert response is not None, path
        assert response.status == 200, path
        assert b.page.url == b.base + "/api/docs/"
        b.page.wait_for_selector(".swagger-ui .info", timeout=60_000)
        b.page.wait_for_load_state("networkidle")
        seen[path] = b.page.evaluate("window.__cspViolations")
    assert {path: v for path, v in seen.items() if v} == {}
    base_host = urlsplit(b.base).hostname
    outside = sorted(
        {
            url
            for url in requested
            if urlsplit(url).scheme in ("http", "https") and urlsplit(url).hostname != base_host
        }
    )
    assert outside == []
