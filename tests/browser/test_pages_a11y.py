"""Accessibility and navigation in the browser: axe-core on every page in both themes,
a 400 px wide window, a keyboard-only walk, and back / forward through tree drill-downs.

axe-core is vendored from the npm registry (vendor/axe.min.js, version pinned in
browser_support.py) and injected from disk: no network.  Every page must have no
serious or critical violation in the light and in the dark theme.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser_support import DEMO_CLUSTER, Browser
from playwright.sync_api import Route, expect

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

#: A second cluster's config (nobody here wrote it).
LAB_WEST_CONFIG = (
    Path(__file__).resolve().parents[1]
    / "dashboard"
    / "data"
    / "cluster-b"
    / "config"
    / "queues.yaml"
)


def _wait_run_done(b: Browser, testid: str) -> None:
    expect(b.page.get_by_test_id(testid)).to_be_visible(timeout=60_000)


def _second_cluster(b: Browser, tmp_path: Path) -> list[str]:
    """A second cluster imported through the import page, as an administrator would: its
    snapshot has allocations being preempted, its config a line wider than a phone.
    Returns its pages."""
    scenario = json.loads(DEMO_CLUSTER.read_text())
    for alloc in scenario["allocations"][:4]:
        alloc["preempted"] = True
    snapshot = tmp_path / "lab-west.json"
    snapshot.write_text(json.dumps(scenario))
    config = tmp_path / "queues.yaml"
    config.write_text(
        "# "
        + "a long comment that an administrator left in the config " * 6
        + "\n"
        + (LAB_WEST_CONFIG).read_text()
    )
    for kind, path, landing in (
        ("config", config, r"/configs/\d+/"),
        ("snapshot", snapshot, r"/queues/\?"),
    ):
        b.goto("/import/")
        b.page.check(f'input[name="kind"][value="{kind}"]')
        b.page.fill("#id_cluster", "lab-west")
        b.page.set_input_files('input[name="upload"]', [str(path)])
        b.page.click('[data-testid="import-submit"]')
        b.page.wait_for_url(re.compile(landing))
    version = models.ConfigVersion.objects.filter(partition__cluster__name="lab-west").get()
    app = scenario["allocations"][0]["app"]
    west = "cluster=lab-west&partition=default"
    return [
        f"/configs/{version.pk}/",
        f"/nodes/?{west}",
        f"/queues/detail/?{west}&queue={scenario['allocations'][0]['queue']}",
        f"/applications/?{west}&app={app}",
        f"/queues/?{west}",
    ]


def _message_page(b: Browser) -> None:
    """A page showing a message: the alerts page after acknowledging an alert."""
    services.raise_alert(models.Alert.Kind.QUOTA, "an alert to acknowledge", queue="root.batch")
    b.goto("/alerts/?show=unread")
    b.page.click('[data-testid="ack-all"]')
    b.page.wait_for_selector("[data-messages]")
    b.figures_rendered()


def _axe_after_a_post(b: Browser) -> list[str]:
    """The serious violations of a page showing a message (after acknowledging an alert)."""
    _message_page(b)
    return [f"(message) {v}" for v in b.axe()]


def _pages(b: Browser, staff: Any, tmp_path: Path) -> list[str]:
    """Every kind of page, with the data each shows: runs, a change, an alert, configs,
    two clusters, allocations being preempted, a long config line."""
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    # a what-if for an ask and one for a lower max, answered by the worker
    b.goto(f"/whatif/?snapshot={snapshot.pk}")
    b.page.click('[data-testid="run-preempt"]')
    _wait_run_done(b, "run-outcome")
    preempt = models.PreemptionRun.objects.get()
    b.page.select_option("#quota_queue", "root.batch")
    b.page.fill("#quota_max__vcore", "8")
    b.page.click('[data-testid="run-quota"]')
    _wait_run_done(b, "leaves-table")
    quota = models.PreemptionRun.objects.exclude(pk=preempt.pk).get()
    in_force = services.queue_settings(snapshot.partition, "root.batch").max or {}
    change = services.schedule_quota_change(
        snapshot.partition, "root.batch", new_max={**in_force, "vcore": 8000}, user=staff
    )
    services.raise_alert(
        models.Alert.Kind.QUOTA,
        "preemption does not help on root.batch: {vcore: 1000} of the target not claimed",
        level=models.Alert.Level.WARNING,
        queue="root.batch",
    )
    pages = [
        "/queues/",
        "/queues/?queue=root.batch",
        "/queues/detail/?queue=root.batch",
        "/queues/victims/?queue=root",
        "/queues/over-time/?queue=root.batch",
        "/nodes/",
        # the demo's cluster named: with a second cluster the pages open on the newest
        f"/applications/?cluster={snapshot.partition.cluster.name}&partition=default"
        f"&snapshot={snapshot.pk}&app=spark-7f",
        "/whatif/",
        f"/whatif/?run={preempt.pk}",
        f"/whatif/?run={quota.pk}",
        "/changes/",
        f"/changes/{change.pk}/",
        f"/changes/{change.pk}/edit/",
        "/history/",
        f"/runs/{preempt.pk}/",
        f"/runs/{quota.pk}/",
        "/alerts/",
        "/configs/",
        "/import/",
        "/plans/",
        "/queues/?partition=nope",
    ]
    return pages + _second_cluster(b, tmp_path)


def test_every_page_passes_axe_in_both_themes_and_in_a_400_px_window(
    browser: Browser, staff_user: Any, worker: Any, tmp_path: Path
) -> None:
    """Every page (with the data each shows, made once): axe in both themes in a wide
    window; then, in the theme the walk began in, a 400 px window that no page overflows,
    axe again."""
    b = browser
    b.sign_in(staff_user.username)
    pages = _pages(b, staff_user, tmp_path)
    b.expect_console_error(r"404 \(Not Found\)")  # the unknown partition page, on purpose
    b.expect_console_error(r"404 \(Not Found\)")  # and again in the narrow window
    problems: list[str] = []

    def both_themes(where: str) -> None:
        """axe in the theme the page came in, then in the other one, switched in place
        with the page's own toggle (which the next page keeps): one load, both themes."""
        for switched in (False, True):
            theme = b.page.evaluate("document.documentElement.dataset.theme")
            problems.extend(f"[{theme}] {where}{v}" for v in b.axe())
            if theme == "light" and "&snapshot=" in where and where.endswith("&app=spark-7f: "):
                expect(b.page.get_by_test_id("app-allocations")).to_contain_text("yes")
                b.screenshot("application")
            if not switched:
                b.set_theme("dark" if theme == "light" else "light")
                b.figures_rethemed()

    first_theme = ""
    for path in pages:
        b.goto(path)
        b.figures_rendered()
        first_theme = first_theme or b.page.evaluate("document.documentElement.dataset.theme")
        both_themes(f"{path}: ")
    _message_page(b)
    both_themes("(message) ")

    b.set_theme(first_theme)
    b.page.set_viewport_size({"width": 400, "height": 860})
    for path in pages:
        b.goto(path)
        b.figures_rendered()
        wide = b.page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        if wide > 0:
            problems.append(f"[400 px] {path}: the page is {wide}px wider than the window")
        problems.extend(f"[400 px] {path}: {v}" for v in b.axe())
        if path in ("/queues/", "/alerts/"):
            b.screenshot(f"narrow-{path.strip('/').replace('/', '-')}")
    problems.extend(f"[400 px] {v}" for v in _axe_after_a_post(b))
    assert problems == [], "\n".join(problems)


def _tab_to(b: Browser, selector: str, limit: int = 80) -> None:
    """Press Tab until the element matching *selector* has the focus."""
    for _ in range(limit):
        b.page.keyboard.press("Tab")
        if b.page.evaluate(
            "(s) => document.activeElement && document.activeElement.matches(s)", selector
        ):
            return
    pytest.fail(f"{selector} was not reached with {limit} presses of Tab")


def test_keyboard_only_tree_queue_whatif_schedule_cancel(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    b.goto("/queues/")
    b.figures_rendered()
    # the skip link is the first stop and moves the focus to the content
    b.page.keyboard.press("Tab")
    assert b.page.evaluate("document.activeElement.textContent") == "Skip to content"
    b.page.keyboard.press("Enter")
    assert b.page.evaluate("document.activeElement.id") == "main"
    # tree: the queue list is reachable; Enter selects a queue (a URL of its own)
    _tab_to(b, '.queue-link[data-queue="root.batch"]')
    b.page.keyboard.press("Enter")
    expect(b.page.get_by_test_id("selected-queue")).to_have_text("root.batch")
    assert "queue=root.batch" in b.page.url
    # queue page
    _tab_to(b, "#queue-detail-link")
    b.page.keyboard.press("Enter")
    b.page.wait_for_url(re.compile(r"/queues/detail/\?.*queue=root.batch"))
    # what-if decrease, from the max in force
    _tab_to(b, 'a[href*="/whatif/"][href*="queue=root.batch"]')
    b.page.keyboard.press("Enter")
    b.page.wait_for_url(re.compile(r"/whatif/\?.*queue=root.batch"))
    expect(b.page.locator("#quota_queue")).to_have_value("root.batch")
    _tab_to(b, "#quota_max__vcore")
    b.page.keyboard.press("Control+A")
    b.page.keyboard.type("8")
    _tab_to(b, '[data-testid="run-quota"]')
    b.page.keyboard.press("Enter")
    _wait_run_done(b, "leaves-table")
    # schedule it
    _tab_to(b, '[data-testid="schedule-it"] button[type=submit]')
    b.page.keyboard.press("Enter")
    b.page.wait_for_url(re.compile(r"/changes/"))
    change = models.QuotaChange.objects.get(queue_path="root.batch")
    assert change.state == models.QuotaChange.State.WAITING
    assert (change.new_max or {}).get("vcore") == 8000
    # cancel it: open the confirmation, confirm
    _tab_to(b, f'tr[data-change-id="{change.pk}"] [data-testid="cancel"]')
    b.page.keyboard.press("Enter")
    _tab_to(b, f'tr[data-change-id="{change.pk}"] [data-testid="confirm-cancel"]')
    b.page.keyboard.press("Enter")
    row = b.page.locator(f'tr[data-change-id="{change.pk}"]')
    expect(row.get_by_test_id("change-state")).to_have_text("Cancelled")
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.CANCELLED


def test_back_and_forward_retrace_tree_drill_downs(browser: Browser, staff_user: Any) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    b.goto("/queues/")
    b.figures_rendered()
    selected = b.page.get_by_test_id("selected-queue")
    b.page.click('.queue-link[data-queue="root.research"]')
    expect(selected).to_have_text("root.research")
    b.page.click('.queue-link[data-queue="root.research.nlp"]')
    expect(selected).to_have_text("root.research.nlp")
    b.page.fill("#tree-search-input", "root.batch")
    b.page.press("#tree-search-input", "Enter")
    expect(selected).to_have_text("root.batch")
    b.page.go_back()
    expect(selected).to_have_text("root.research.nlp")
    assert "queue=root.research.nlp" in b.page.url
    b.page.go_back()
    expect(selected).to_have_text("root.research")
    b.page.go_back()
    expect(selected).to_have_text("root")
    b.page.go_forward()
    expect(selected).to_have_text("root.research")
    b.wait_js("document.querySelector('[data-bars]').layout.title.text === 'root.research'")


def test_bars_answered_late_never_replace_a_later_selections(
    browser: Browser, staff_user: Any
) -> None:
    """Two queues selected one after the other: the first one's bars, answered last, are
    dropped, not drawn over the second's (back and forward select quickly)."""
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    held: list[Route] = []

    def hold_research(route: Route) -> None:
        if "queue=root.research" in route.request.url and not held:
            held.append(route)
        else:
            route.continue_()

    b.goto("/queues/")
    b.figures_rendered()
    b.page.route("**/queues/bars/**", hold_research)
    with b.page.expect_request(lambda r: "queue=root.research" in r.url):
        b.page.click('.queue-link[data-queue="root.research"]')
    b.page.click('.queue-link[data-queue="root.batch"]')
    b.wait_js("document.querySelector('[data-bars]').layout.title.text === 'root.batch'")
    assert len(held) == 1
    with b.page.expect_response(lambda r: "queue=root.research" in r.url) as late:
        held[0].continue_()
    late.value.finished()
    b.page.evaluate(
        "() => new Promise((done) => setTimeout(() => requestAnimationFrame("
        "() => requestAnimationFrame(done)), 200))"
    )
    title = b.page.evaluate("document.querySelector('[data-bars]').layout.title.text")
    assert title == "root.batch"
    expect(b.page.get_by_test_id("selected-queue")).to_have_text("root.batch")
