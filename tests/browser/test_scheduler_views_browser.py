"""The scheduler's own word in the browser: why an ask is pending (its allocationLog beside
the dashboard's reading) and its health on the tree page, readable and axe-clean in both
themes and at 400 px."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser_support import Browser
from django.conf import settings
from playwright.sync_api import expect

from dashboard import models, services
from dashboard.sources.models import ClusterSource

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

APP = "bert-finetune-ft12"


def _import_with_reasons() -> None:
    """The shared REST answers; the pending ask carries a scheduler log of two reasons."""
    rest = Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"
    files = {
        p.name: p.read_bytes()
        for p in sorted(rest.glob("*.json"))
        if p.name != "fullstatedump.json"
    }
    apps = json.loads(files["partition_applications_active.json"])
    ask = next(a for a in apps if a["applicationID"] == APP)["requests"][0]
    ask["allocationLog"] = [
        {"message": "Not enough queue quota", "lastOccurrence": 1788256700 * 10**9, "count": 4},
        {"message": "0/8 nodes: <i>taint</i>", "lastOccurrence": 1788256600 * 10**9, "count": 1},
    ]
    ask["schedulingAttempted"] = True
    files["partition_applications_active.json"] = json.dumps(apps).encode()
    services.import_snapshot(files)


def test_why_pending_and_scheduler_health_read_well(browser: Browser, staff_user: Any) -> None:
    b = browser
    _import_with_reasons()
    source = ClusterSource.objects.create(
        name="acme-ml",
        base_url="http://yunikorn.example:9080",
        partition="default",
        cluster=models.Cluster.objects.get(),
    )
    source.scheduler_health = {
        "healthy": False,
        "checks": [
            {"name": "Negative resources", "succeeded": False, "description": "", "diagnosis": "x"}
        ],
        "build": {"buildVersion": "1.7.0"},
        "start_time": None,
        "error": "",
    }
    source.save()
    b.sign_in(staff_user.username)
    problems: list[str] = []
    for theme in ("light", "dark"):
        b.goto("/queues/")
        b.set_theme(theme)
        b.goto(f"/applications/?app={APP}")
        why = b.page.get_by_test_id("why-pending")
        expect(why).to_be_visible()
        expect(b.page.get_by_test_id("scheduler-reasons")).to_contain_text(
            "“Not enough queue quota”"
        )
        expect(b.page.get_by_test_id("scheduler-reasons")).to_contain_text("<i>taint</i>")
        # the ask needs a GPU: over root's max and no node with one free, as it says
        expect(b.page.get_by_test_id("dashboard-reasons")).to_contain_text("nvidia.com/gpu")
        expect(b.page.get_by_test_id("reasons-agree")).to_be_visible()
        problems.extend(f"[{theme}] application: {v}" for v in b.axe())
        b.goto("/queues/")
        b.figures_rendered()
        cell = b.page.locator('[data-testid="source-scheduler"]')
        expect(cell).to_contain_text("unhealthy")
        expect(cell).to_contain_text("YuniKorn 1.7.0")
        problems.extend(f"[{theme}] tree: {v}" for v in b.axe())
        if theme == "light":
            b.screenshot("why-pending")
    b.page.set_viewport_size({"width": 400, "height": 900})
    b.goto(f"/applications/?app={APP}")
    expect(b.page.get_by_test_id("why-pending")).to_be_visible()
    problems.extend(f"[400 px] application: {v}" for v in b.axe())
    assert problems == [], "\n".join(problems)
