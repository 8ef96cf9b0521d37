"""The work lost to preemption in the browser: the week's stacked bars drawn by the partial
Plotly bundle, queue names as text in the hover, the table, axe-clean in both themes and
at 400 px."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browser_support import Browser
from django.conf import settings
from playwright.sync_api import expect

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

COMPLETED = (
    Path(__file__).resolve().parents[1]
    / "dashboard"
    / "data"
    / "work-lost"
    / "partition_applications_completed.json"
)


def _import() -> models.Partition:
    """The shared REST answers with the completed applications of the dashboard tests, and
    one more in a queue whose name is markup (stored names are user text)."""
    rest = Path(settings.DASHBOARD_FIXTURES_DIR) / "rest"
    files = {p.name: p.read_bytes() for p in rest.glob("*.json") if "statedump" not in p.name}
    files[COMPLETED.name] = COMPLETED.read_bytes()
    partition = services.import_snapshot(files).partition
    models.CompletedApplication.objects.create(
        partition=partition,
        app_id="odd",
        queue="root.<i>odd</i>",
        finished_at=datetime(2026, 9, 3, tzinfo=UTC),
        preempted={"UNKNOWN": {"vcore": 1_800_000}},
        read_at=services.utcnow(),
    )
    return partition


def test_work_lost_per_week_reads_well(browser: Browser, viewer_user: Any) -> None:
    b = browser
    _import()
    b.sign_in(viewer_user.username)
    problems: list[str] = []
    for theme in ("light", "dark"):
        b.goto("/queues/")
        b.set_theme(theme)
        b.goto("/work-lost/?period=week")
        b.figures_rendered()
        figure = b.page.get_by_test_id("work-lost-figure")
        # one trace per queue with lost cores: root.batch, root.research.nlp and the odd one
        expect(figure.locator("g.trace.bars")).to_have_count(3)
        expect(figure.locator(".legend")).to_contain_text("root.<i>odd</i>")
        expect(figure.locator(".legend i")).to_have_count(0)  # shown as text, not markup
        table = b.page.get_by_test_id("work-lost-table")
        expect(table).to_contain_text("root.research.nlp")
        expect(table).to_contain_text("16 GiB-hours")
        expect(table.get_by_test_id("work-lost-total").last).to_have_text("4.5 core-hours")
        problems.extend(f"[{theme}] work lost: {v}" for v in b.axe())
        if theme == "light":
            b.screenshot("work-lost")
    b.page.set_viewport_size({"width": 400, "height": 900})
    b.goto("/work-lost/?period=week")
    b.figures_rendered()
    problems.extend(f"[400 px] work lost: {v}" for v in b.axe())
    assert problems == [], "\n".join(problems)
