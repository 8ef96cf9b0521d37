"""The plan page in a real browser: edit the current config, plan, hand back, keep, refuse.

The acme-ml live config and its state dump (plus a dynamic queue named with
HTML) are in the database; the proposed change is typed into the page's
textarea.  Fails on any console error, page error or dialog (conftest.py);
screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browser_support import Browser
from django.conf import settings
from playwright.sync_api import expect

from dashboard import models, services
from dashboard.importers.snapshot import parse_snapshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = "<img src=x onerror=alert(1)>"
NOW = datetime(2026, 9, 1, 10, tzinfo=UTC)


def _acme() -> None:
    fixtures = Path(settings.DASHBOARD_FIXTURES_DIR)
    services.import_config((fixtures / "config" / "queues-nested-gpu.yaml").read_bytes(), now=NOW)
    dump = (fixtures / "rest" / "fullstatedump.json").read_bytes()
    scenario = copy.deepcopy(parse_snapshot({"fullstatedump.json": dump}).scenario)
    # a dynamic queue (not in the config) whose name is markup
    scenario["queues"]["children"].append({"name": EVIL})
    scenario["allocations"].append(
        {"key": "evil-1", "app": "<script>alert(2)</script>", "queue": f"root.{EVIL}",
         "node": "worker-cpu-1", "resources": {"vcore": 100}}
    )  # fmt: skip
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=NOW,
        scenario=scenario,
    )


def test_plan_page_edit_plan_handback_keep(browser: Browser, staff_user: Any) -> None:
    _acme()
    fixtures = Path(settings.DASHBOARD_FIXTURES_DIR)
    proposed = (fixtures / "config" / "queues-nested-gpu-proposed.yaml").read_text()
    b = browser
    b.sign_in(staff_user.username)
    b.page.click("nav.mainnav >> text=Plan")
    b.page.wait_for_url(re.compile(r"/plans/"))
    b.page.click('[data-testid="edit-current"]')
    expect(b.page.locator("#id_text")).to_have_value(
        re.compile(r"max: \{vcore: 10, memory: 48Gi\}")
    )

    # edit the current config in the textarea: batch 10 -> 8 cores
    current = b.page.input_value("#id_text")
    b.page.fill("#id_text", current.replace("max: {vcore: 10, memory: 48Gi}", "max: {vcore: 8}"))
    b.page.click('[data-testid="plan-submit"]')
    b.figures_rendered()
    expect(b.page.get_by_test_id("plan-changes")).to_contain_text("root.batch")
    expect(b.page.get_by_test_id("plan-changes")).to_contain_text("starts")

    # the proposed config pasted: three changes, three firings, chained
    b.page.fill("#id_text", proposed)
    b.page.click('[data-testid="plan-submit"]')
    b.figures_rendered()
    rows = b.page.get_by_test_id("plan-changes").locator("tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("root.batch")
    # the scheduler's walk: research (due with nlp) first, nlp a second later
    expect(rows.nth(1)).to_contain_text(re.compile(r"root\.research(?!\.nlp)"))
    expect(rows.nth(2)).to_contain_text("root.research.nlp")
    expect(rows.nth(2)).to_contain_text("nothing to take")  # nlp after research's victim
    points = b.page.evaluate(
        "document.getElementById('plan-timeline').data.map(t => t.text).flat()"
    )
    assert sorted(points) == ["#1", "#2", "#3"]
    expect(b.page.get_by_test_id("plan-victims")).to_contain_text("ray-embeddings-carol")
    expect(b.page.get_by_test_id("total-allocations")).to_have_text("2")
    # the tree: outcome in words on the boxes, queue names as text (also in hover)
    labels = b.page.evaluate("document.getElementById('plan-tree').data[0].labels")
    assert any("fires #1" in label for label in labels)
    b.screenshot("plan")
    label = b.page.locator("#plan-tree g.slice text", has_text="onerror")
    expect(label).to_contain_text(EVIL)
    assert b.page.locator("img[src=x]").count() == 0
    label.hover(force=True)
    hover = b.page.locator(".hoverlayer .hovertext")
    expect(hover).to_contain_text(f"root.{EVIL}")
    assert "<img" not in b.page.evaluate("document.querySelector('.hoverlayer').innerHTML")
    b.screenshot("plan-hover")
    assert not models.ConfigVersion.objects.filter(planned=True).exists()

    b.page.click('[data-testid="plan-handback"]')
    expect(b.page.get_by_test_id("kubectl-patch")).to_contain_text("kubectl patch configmap")
    b.screenshot("plan-handback")

    b.page.click('[data-testid="plan-keep"]')
    b.page.wait_for_url(re.compile(r"/configs/\d+/"))
    expect(b.page.get_by_test_id("planned-badge")).to_be_visible()
    live = services.latest_config(models.Partition.objects.get(name="default"))
    assert live is not None
    assert not live.planned


def test_plan_page_shows_a_refusal_with_its_line(
    browser: Browser, staff_user: Any, viewer_user: Any
) -> None:
    _acme()
    fixtures = Path(settings.DASHBOARD_FIXTURES_DIR)
    bad = (fixtures / "config" / "invalid" / "child-max-above-parent-max.yaml").read_text()
    b = browser
    b.sign_in(viewer_user.username)
    b.goto("/plans/?partition=default")
    expect(b.page.get_by_test_id("plan-staff-only")).to_be_visible()  # viewers read only
    expect(b.page.get_by_test_id("plan-submit")).to_have_count(0)
    b.page.click('[data-testid="logout"]')
    b.sign_in(staff_user.username)
    b.goto("/plans/?partition=default")
    b.page.fill("#id_text", bad)
    b.page.click('[data-testid="plan-submit"]')
    expect(b.page.get_by_test_id("plan-refusals")).to_contain_text("line")
    expect(b.page.get_by_test_id("refusal-line")).to_have_text(re.compile(r"line \d+"))
    b.screenshot("plan-refused")
