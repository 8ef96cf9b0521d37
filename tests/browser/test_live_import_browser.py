"""A folder with a state dump imported through the page: its config and the timer its
events explain are learned; a what-if and scheduling agree after a predicted run fired.

The folder is acme-ml's state dump (captured 2026-09-01 10:00) and events batch, with
root.batch lowered to 9 cores (below the 10 its allocations use) by the QUEUE_MAX event
15245 at 09:54:30: the scheduler's timer runs from that event (delay 5m).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from browser_support import ROOT, Browser
from playwright.sync_api import expect
from support.processes import wait_until

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REST = ROOT.parent / "shared" / "fixtures" / "yunikorn" / "rest"
QUEUE_MAX_15245 = datetime.fromtimestamp(1788256470.012887, tz=UTC)


def _batch_queue(node: dict[str, Any]) -> dict[str, Any] | None:
    if node.get("queuename") == "root.batch":
        return node
    for child in node.get("children") or []:
        found = _batch_queue(child)
        if found is not None:
            return found
    return None


def _folder(tmp: Path) -> list[Path]:
    """The state dump and events batch, root.batch lowered to 9 cores."""
    dump = json.loads((REST / "fullstatedump.json").read_text())
    for tree in dump["queues"]:
        batch = _batch_queue(tree)
        if batch is not None:
            batch["maxResource"]["vcore"] = 9000
    root = dump["config"]["Partitions"][0]["Queues"][0]
    next(q for q in root["Queues"] if q["Name"] == "batch")["Resources"]["Max"]["vcore"] = "9"
    events = json.loads((REST / "events_batch.json").read_text())
    events["EventRecords"] = events["EventRecords"][:16]  # up to the QUEUE_MAX event
    events["EventRecords"][15]["resource"]["resources"]["vcore"]["value"] = 9000
    folder = tmp / "acme-ml"
    folder.mkdir()
    (folder / "fullstatedump.json").write_text(json.dumps(dump))
    (folder / "events_batch.json").write_text(json.dumps(events))
    return [folder / "fullstatedump.json", folder / "events_batch.json"]


def test_a_dumped_folder_is_learned_and_whatif_and_scheduling_agree_after_a_prediction(
    browser: Browser, staff_user: Any, worker: Any, tmp_path: Path
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.upload("snapshot", _folder(tmp_path), r"/queues/\?")
    snapshot = models.ClusterSnapshot.objects.get()
    # the dump's config is the partition's config version (it was ignored before)
    (version,) = models.ConfigVersion.objects.all()
    assert version.filename == "fullstatedump.json"

    # the timer appears with its source: the scheduler's QUEUE_MAX event, not the import
    b.goto("/changes/")
    row = b.page.get_by_test_id("changes-table").locator("tr", has_text="root.batch")
    expect(row.get_by_test_id("clock-source")).to_have_text("the scheduler's QUEUE_MAX event")
    expect(row).to_contain_text(QUEUE_MAX_15245.strftime("%Y-%m-%d %H:%M:%S"))

    # its deadline (09:59:30) has passed: the dashboard's timer fires, a prediction that
    # sits in history at its firing time and preempts nothing in the cluster
    assert services.sweep_due_changes().fired
    predicted = models.PreemptionRun.objects.get(kind="quota_enforcement")
    assert predicted.queued_at == QUEUE_MAX_15245 + timedelta(minutes=5)
    assert predicted.victims.exists()

    # a what-if of root.batch at 8 cores on the same snapshot finds victims...
    b.goto(f"/whatif/?snapshot={snapshot.pk}")
    b.figures_rendered()
    b.page.select_option("#quota_queue", "root.batch")
    b.page.fill("#quota_max__vcore", "8")
    b.page.click('[data-testid="run-quota"]')
    wait_until(
        lambda: models.PreemptionRun.objects.filter(kind="whatif_quota", status="done").exists(),
        60,
        "the what-if",
    )
    whatif = models.PreemptionRun.objects.get(kind="whatif_quota")
    expect(b.page.locator("#whatif-live")).to_have_attribute("data-run", str(whatif.pk))
    assert whatif.victims.exists()

    # ...and scheduling the same change agrees: usage exceeds the new max, a timer starts
    b.goto("/changes/")
    b.page.fill("#new-change-queue", "root.batch")
    b.page.dispatch_event("#new-change-queue", "change")
    b.page.fill('[data-testid="schedule-form"] input[name="max__vcore"]', "8")
    b.page.click('[data-testid="schedule-form"] button[type="submit"]')
    wait_until(
        lambda: models.QuotaChange.objects.filter(created_by__isnull=False).exists(),
        30,
        "the scheduled change",
    )
    change = models.QuotaChange.objects.get(created_by__isnull=False)
    assert change.state == models.QuotaChange.State.WAITING, change.reason
    assert "usage exceeds the new max" in change.reason
    expect(b.page.get_by_test_id("changes-table")).to_contain_text("usage exceeds the new max")
    b.screenshot("live-import-agree")
