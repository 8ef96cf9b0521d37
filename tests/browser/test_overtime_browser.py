"""A queue over time in the browser: reached from the queue page, its three figures drawn,
a node's name shown as the text it is, axe-clean in both themes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from browser_support import Browser
from django.conf import settings
from playwright.sync_api import expect

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NODE = "<b>worker-1</b>"


def test_queue_over_time_is_drawn_from_the_queue_page(browser: Browser, staff_user: Any) -> None:
    b = browser
    rest = Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"
    files = {
        p.name: p.read_bytes() for p in sorted(rest.glob("*.json")) if "statedump" not in p.name
    }
    now = datetime.now(UTC)
    snapshot = services.import_snapshot(files, captured_at=now - timedelta(days=1))
    run = models.PreemptionRun.objects.create(
        partition=snapshot.partition,
        kind=models.PreemptionRun.Kind.PREEMPT,
        trigger=models.PreemptionRun.Trigger.OBSERVED,
        status="done",
        queued_at=now - timedelta(hours=1),
    )
    models.RunVictim.objects.create(
        run=run, position=0, allocation_key="k1", queue="root.batch", leaf="root.batch", node=NODE
    )
    b.sign_in(staff_user.username)
    b.goto("/queues/")
    b.set_theme("dark")
    b.goto("/queues/detail/?queue=root.batch")
    b.page.get_by_test_id("overtime-link").click()
    b.page.wait_for_url("**/queues/over-time/**")
    b.figures_rendered()
    expect(b.page.get_by_test_id("overtime-queue")).to_have_text("root.batch")
    expect(b.page.get_by_test_id("overtime-types")).to_contain_text("vcore")
    # the usage chart: four step traces per type drawn
    traces = b.page.evaluate(
        "document.querySelector('[data-testid=overtime-usage-figure]').data.length"
    )
    assert traces >= 4
    # the node's name is its text on the axis, not markup
    expect(b.page.locator('[data-testid="overtime-node-figure"] .ytick text')).to_have_text(NODE)
    expect(b.page.get_by_test_id("overtime-nodes")).to_contain_text(NODE)
    assert b.page.locator('[data-testid="overtime-node-figure"] b').count() == 0
    assert b.axe() == []
    b.set_theme("light")
    b.figures_rendered()
    assert b.axe() == []
