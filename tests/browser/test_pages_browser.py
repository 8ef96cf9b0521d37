"""The pages in a real browser: sign in, import, tree, queue, what-if, changes, history, alerts.

Each test fails on any browser console error, uncaught page error or dialog
(see conftest.py) and writes screenshots of the pages it visits to
artifacts/screenshots/.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from browser_support import DEMO_CLUSTER, Browser
from django.conf import settings
from playwright.sync_api import expect
from support.processes import wait_until

from dashboard import display, models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = "<img src=x onerror=alert(1)>"
VICTIM_RGB = "rgb(194, 37, 92)"  # VICTIM_COLOUR


def _fixtures() -> Path:
    path = Path(settings.DASHBOARD_FIXTURES_DIR)
    assert path.is_dir(), f"the shared YuniKorn fixtures are missing at {path}"
    return path


# --------------------------------------------------------------------------- sign in, import, tree


def test_sign_in_import_fixtures_open_tree_and_queue(browser: Browser, staff_user: Any) -> None:
    b = browser
    b.goto("/queues/")
    b.page.wait_for_url(re.compile(r"/login/"))
    b.screenshot("login")
    b.sign_in(staff_user.username)
    expect(b.page.get_by_test_id("signed-in-user")).to_contain_text(staff_user.username)
    expect(b.page.get_by_test_id("signed-in-user")).to_contain_text("staff")

    fixtures = _fixtures()
    b.upload("config", [fixtures / "config" / "queues-nested-gpu-previous.yaml"], r"/configs/\d+/")
    b.upload("config", [fixtures / "config" / "queues-nested-gpu.yaml"], r"/configs/\d+/")
    expect(b.page.locator(".messages")).to_contain_text("root.batch")  # the decrease it scheduled
    rest = sorted((fixtures / "rest").glob("partition_*.json"))
    b.goto("/import/")
    b.screenshot("import")
    b.upload("snapshot", rest, r"/queues/\?cluster=default&partition=default&snapshot=\d+")
    b.figures_rendered()
    snapshot = models.ClusterSnapshot.objects.get()
    expect(b.page.get_by_test_id("snapshot-age")).to_be_visible()
    expect(b.page.locator("#scope-snapshot")).to_have_value(str(snapshot.pk))

    # the tree: every queue is a box; search by path selects and zooms
    ids = b.page.evaluate("document.getElementById('tree').data[0].ids")
    assert "root.production.training" in ids
    b.page.fill("#tree-search-input", "root.research.nlp")
    b.page.press("#tree-search-input", "Enter")
    expect(b.page.get_by_test_id("selected-queue")).to_have_text("root.research.nlp")
    b.wait_js("document.querySelector('[data-bars]').layout.title.text === 'root.research.nlp'")
    assert "queue=root.research.nlp" in b.page.url  # the view is a deep link
    b.page.fill("#tree-search-input", "root")
    b.page.press("#tree-search-input", "Enter")
    b.screenshot("tree")

    b.page.fill("#tree-search-input", "root.batch")
    b.page.press("#tree-search-input", "Enter")
    expect(b.page.get_by_test_id("selected-queue")).to_have_text("root.batch")
    b.page.click("#queue-detail-link")
    b.page.wait_for_url(re.compile(r"/queues/detail/\?.*queue=root.batch"))
    expect(b.page.get_by_test_id("queue-title")).to_have_text("root.batch")
    b.figures_rendered()
    expect(b.page.get_by_test_id("allocations")).to_contain_text("spark")
    # YuniKorn's words: allocated with its preempting part, what remains; the queue's facts
    expect(b.page.locator('[data-testid="limits-table"] thead th')).to_contain_text(
        ["guaranteed", "allocated", "preempting", "remaining", "max"]
    )
    expect(b.page.get_by_test_id("queue-status")).to_have_text("Active")
    expect(b.page.get_by_test_id("queue-apps")).to_have_text(
        "running applications 2 · max applications 20"
    )
    b.screenshot("queue")

    b.page.click("nav.mainnav >> text=Nodes")
    b.figures_rendered()
    b.page.click('[data-testid="nodes-table"] >> text=worker-gpu-1')
    expect(b.page.get_by_test_id("node-allocations")).to_contain_text("root.production.inference")
    b.screenshot("nodes")

    b.page.click("nav.mainnav >> text=Configs")
    b.page.click("text=Compare the two chosen versions")
    expect(b.page.get_by_test_id("queue-diff")).to_contain_text("root.batch")
    expect(b.page.get_by_test_id("text-diff")).to_be_visible()
    b.screenshot("config-diff")


def test_light_dark_toggle_is_remembered(browser: Browser, staff_user: Any) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    before = b.page.evaluate("document.documentElement.dataset.theme")
    if before == "light":
        b.screenshot("tree-demo")
    b.page.click("#theme-toggle")
    after = b.page.evaluate("document.documentElement.dataset.theme")
    assert {before, after} == {"light", "dark"}
    b.page.reload()
    assert after == b.page.evaluate("document.documentElement.dataset.theme")
    if after == "dark":
        b.figures_rendered()
        b.screenshot("tree-dark")


TREE_DRAWS = """
window.treeDraws = [];
document.addEventListener("figure:rendered", function (ev) {
  if (ev.target.id !== "tree") return;
  var boxes = {};
  ev.target.querySelectorAll("g.slice").forEach(function (g) {
    var pt = g.__data__;
    if (pt.x0 !== pt.x1 && pt.y0 !== pt.y1) {
      boxes[pt.data.data.id] = g.querySelector("path.surface").getAttribute("d");
    }
  });
  window.treeDraws.push({
    count: ev.target.data[0].ids.length,
    boxes: boxes,
    /* whether the parser had reached the queue list (after the tree) when it was drawn */
    listParsed: document.querySelector('[data-testid="queue-list"]') !== null,
  });
});
"""


def test_tree_draws_the_levels_shown_first_then_the_whole_tree(
    browser: Browser, staff_user: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    b.page.add_init_script(TREE_DRAWS)
    b.goto(f"/queues/?snapshot={snapshot.pk}&depth=2")
    b.figures_rendered()
    expect(b.page.locator("#tree")).to_have_attribute("data-whole", "true")
    draws = b.page.evaluate("window.treeDraws")
    # 11 queues: the first draw holds root and its 4 children, the second all of them
    assert [d["count"] for d in draws] == [5, 11]
    # ... and the boxes shown are the same boxes, in the same places
    assert sorted(draws[0]["boxes"]) == [
        "root",
        "root.batch",
        "root.production",
        "root.research",
        "root.system",
    ]
    assert draws[0]["boxes"] == draws[1]["boxes"]
    # the first draw came while the page was still being parsed (data-draw-early)
    assert [d["listParsed"] for d in draws] == [False, True]
    assert b.page.evaluate("document.getElementById('tree').data[0].values") is None
    # a queue below the levels shown is found and zoomed into
    b.page.fill("#tree-search-input", "root.research.nlp")
    b.page.press("#tree-search-input", "Enter")
    expect(b.page.get_by_test_id("selected-queue")).to_have_text("root.research.nlp")
    b.wait_js("document.getElementById('tree').data[0].level === 'root.research'")


# --------------------------------------------------------------------------- what-if and history


def test_whatif_highlights_victims_and_the_run_is_in_history(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    b.page.click("nav.mainnav >> text=What-if")
    expect(b.page.locator("#ask_ask_key")).to_have_value("bert-worker-0")
    b.page.click('[data-testid="run-preempt"]')
    b.page.wait_for_url(re.compile(r"/whatif/\?.*run=\d+"))
    # the worker answers; the page refreshes its result region by itself
    victims = b.page.locator('[data-testid="victims-table"] tr.highlight')
    expect(victims.first).to_be_visible(timeout=60_000)
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("preempted")
    keys = victims.locator("td:nth-child(2)").all_inner_texts()
    # node-4 has 2.3 cores and about 8 GiB free; adhoc-2 (3 cores, 12 GiB) alone lets the
    # 4-core, 16 GiB ask run there and keeps root within its max (the nodes' capacity)
    assert keys == ["adhoc-2"]
    needed = b.page.get_by_test_id("victim-needed")
    expect(needed).to_contain_text("on node node-4")
    expect(needed).to_contain_text("in root, where the ask would exceed the max")
    b.figures_rendered()
    b.page.wait_for_selector('[data-testid="run-tree-figure"] .slice')
    # the victims' queue is outlined in the tree ...
    stroke = b.page.evaluate(
        """() => {
          const gd = document.querySelector('[data-testid="run-tree-figure"]');
          const slice = [...gd.querySelectorAll('g.slice')].find(
            (g) => g.querySelector('text')
              && g.querySelector('text').textContent.replace(/^[▲■✖] /, '') === 'adhoc');
          return slice ? getComputedStyle(slice.querySelector('path.surface')).stroke : null;
        }"""
    )
    assert stroke == VICTIM_RGB
    # ... and their node is outlined on the node heatmap
    node_outline = b.page.evaluate(
        """() => [...document.querySelectorAll(
              '[data-testid="run-nodes-figure"] .shapelayer path')]
            .map((p) => getComputedStyle(p).stroke)"""
    )
    assert VICTIM_RGB in node_outline
    expect(b.page.locator('[data-testid="run-nodes-figure"]')).to_contain_text("victims")
    b.screenshot("whatif-preempt")

    # the finished run is in the history: timeline point and table row
    run = models.PreemptionRun.objects.get()
    b.page.click("nav.mainnav >> text=History")
    b.figures_rendered()
    expect(b.page.get_by_test_id("history-table")).to_contain_text(f"#{run.pk}")
    expect(b.page.get_by_test_id("history-table")).to_contain_text("preempted")
    points = b.page.evaluate(
        "document.querySelector('[data-testid=\"timeline-figure\"]').data"
        ".map((t) => t.customdata).flat()"
    )
    assert run.pk in points
    b.screenshot("history")
    b.page.click(f'[data-testid="history-table"] >> text=#{run.pk}')
    expect(b.page.get_by_test_id("run-status")).to_have_text("Done")
    b.figures_rendered()
    b.screenshot("run")

    # the victim explanation: candidates in order, and who is excluded and why
    b.goto(f"/queues/victims/?queue=root&snapshot={run.snapshot_id}")
    expect(b.page.get_by_test_id("candidates")).to_contain_text("adhoc-2")
    expect(b.page.get_by_test_id("exclusions")).to_contain_text("never a quota victim")
    b.screenshot("victims")


def test_schedule_a_decrease_see_its_countdown_and_cancel_one(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    b.page.click("nav.mainnav >> text=What-if")
    b.page.select_option("#quota_queue", "root.batch")
    in_force = services.queue_settings(models.Partition.objects.get(), "root.batch").max
    assert in_force is not None
    assert len(in_force) > 1  # the form keeps the other types: typing vcore drops none
    b.page.fill("#quota_max__vcore", "8")
    b.page.click('[data-testid="run-quota"]')
    expect(b.page.get_by_test_id("leaves-table")).to_be_visible(timeout=60_000)
    expect(b.page.get_by_test_id("leaves-table")).to_contain_text("root.batch.adhoc")
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("target claimed in full")
    b.figures_rendered()
    b.screenshot("whatif-quota")

    b.page.click('[data-testid="schedule-it"] button[type=submit]')
    b.page.wait_for_url(re.compile(r"/changes/"))
    change = models.QuotaChange.objects.get(queue_path="root.batch")
    assert change.state == "waiting"
    assert change.new_max == {**in_force, "vcore": 8000}
    row = b.page.locator(f'tr[data-change-id="{change.pk}"]')
    countdown = row.get_by_test_id("countdown")
    expect(countdown).to_have_text(re.compile(r"^in (\d+m )?\d+s$"))
    first = countdown.inner_text()
    wait_until(lambda: countdown.inner_text() != first, 10, "the countdown to tick")

    # a second decrease, scheduled from the changes page's own form, then cancelled; the
    # form's "in force" column follows the queue typed (none yet, a partial name, the queue)
    vcore_in_force = b.page.locator(
        '[data-testid="schedule-form"] tr[data-type="vcore"] [data-in-force]'
    )
    expect(vcore_in_force).to_have_text("pick a queue")
    b.page.fill("#new-change-queue", "root.researc")
    expect(vcore_in_force).to_have_text("no such queue here")
    b.page.fill("#new-change-queue", "root.research")
    research = services.queue_settings(models.Partition.objects.get(), "root.research").max
    assert research is not None
    assert "vcore" in research
    expect(vcore_in_force).to_have_text(display.format_quantity("vcore", research["vcore"]))
    b.page.fill('[data-testid="schedule-form"] input[name="max__vcore"]', "4")
    b.page.click('[data-testid="schedule-form"] button[type=submit]')
    second = models.QuotaChange.objects.get(queue_path="root.research")
    row2 = b.page.locator(f'tr[data-change-id="{second.pk}"]')
    expect(row2.get_by_test_id("countdown")).to_have_text(re.compile(r"^in "))
    b.screenshot("changes")
    row2.get_by_test_id("cancel").click()
    row2.get_by_test_id("confirm-cancel").click()
    row2 = b.page.locator(f'tr[data-change-id="{second.pk}"]')
    expect(row2.get_by_test_id("change-state")).to_have_text("Cancelled")
    expect(row.get_by_test_id("change-state")).to_have_text("Waiting")
    second.refresh_from_db()
    assert second.state == models.QuotaChange.State.CANCELLED


# --------------------------------------------------------------------------- alerts, viewer


def test_failed_import_alert_is_acknowledged(browser: Browser, staff_user: Any) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    services.raise_alert(
        models.Alert.Kind.QUOTA,
        "preemption does not help on root.research.nlp: {vcore: 1000} of the target not claimed",
        level=models.Alert.Level.ERROR,
        queue="root.research.nlp",
    )
    bad = _fixtures() / "config" / "invalid" / "quota-delay-under-resources.yaml"
    b.goto("/import/")
    b.page.check('input[name="kind"][value="config"]')
    b.page.set_input_files('input[name="upload"]', str(bad))
    b.expect_console_error(r"status of 400")  # the refusal itself, shown in the form
    b.page.click('[data-testid="import-submit"]')
    expect(b.page.get_by_test_id("import-error")).to_contain_text("quota.preemption.delay")
    b.goto("/alerts/")
    unread = models.Alert.objects.filter(acknowledged_at__isnull=True).count()
    assert unread >= 2
    expect(b.page.get_by_test_id("unread-count")).to_have_text(str(unread))
    feed = b.page.get_by_test_id("alert-feed")
    expect(feed).to_contain_text("refused")
    expect(feed).to_contain_text("does not help")
    b.screenshot("alerts")
    failed = models.Alert.objects.get(kind=models.Alert.Kind.IMPORT_FAILED)
    b.page.locator(f'[data-alert-id="{failed.pk}"]').get_by_test_id("ack").click()
    expect(b.page.get_by_test_id("unread-count")).to_have_text(str(unread - 1))
    expect(b.page.locator(f'[data-alert-id="{failed.pk}"] [data-testid="ack"]')).to_have_count(0)
    failed.refresh_from_db()
    assert failed.acknowledged_by == staff_user


def test_viewer_is_refused_an_edit(browser: Browser, staff_user: Any, viewer_user: Any) -> None:
    data = DEMO_CLUSTER.read_bytes()
    snapshot = services.import_snapshot({"demo-cluster.json": data}, user=staff_user)
    change = services.schedule_quota_change(
        snapshot.partition, "root.batch", new_max={"vcore": 8000}, user=staff_user
    )
    b = browser
    b.sign_in(viewer_user.username)
    expect(b.page.get_by_test_id("signed-in-user")).to_contain_text("viewer")
    b.goto("/changes/")
    row = b.page.locator(f'tr[data-change-id="{change.pk}"]')
    expect(row.get_by_test_id("countdown")).to_be_visible()
    expect(row.get_by_test_id("edit")).to_have_count(0)
    # typing the edit URL is refused by the server (the one expected console error: its 403)
    b.expect_console_error(r"403")
    b.goto(f"/changes/{change.pk}/edit/")
    expect(b.page.get_by_test_id("forbidden")).to_contain_text(
        "Only staff and queue administrators"
    )
    b.screenshot("viewer-refused")
    change.refresh_from_db()
    assert change.state == models.QuotaChange.State.WAITING


# --------------------------------------------------------------------------- escaping


def test_queue_named_with_html_is_text_in_page_and_hover(browser: Browser, staff_user: Any) -> None:
    """A queue called <img src=x onerror=alert(1)> reads as text; no element, no dialog."""
    scenario = {
        "now": datetime(2026, 9, 1, 10, tzinfo=UTC).timestamp(),
        "queues": {
            "name": "root",
            "children": [
                {"name": EVIL, "guaranteed": {"vcore": 1000}},
                {"name": "<b>bold</b>"},
            ],
        },
        "nodes": [{"id": "n1", "capacity": {"vcore": 8000}}],
        "allocations": [
            {"key": "a1", "app": "<script>alert(2)</script>", "queue": f"root.{EVIL}",
             "node": "n1", "resources": {"vcore": 3000}},
            {"key": "a2", "queue": "root.<b>bold</b>", "node": "n1", "resources": {"vcore": 1000}},
        ],
    }  # fmt: skip
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=datetime(2026, 9, 1, 10, tzinfo=UTC),
        scenario=scenario,
    )
    b = browser
    b.sign_in(staff_user.username)
    b.goto("/queues/?depth=-1")
    b.figures_rendered()
    # the box label is the literal text (after the queue's state mark, if any)
    label = b.page.locator("#tree g.slice text", has_text="onerror")
    expect(label).to_have_text(re.compile(r"^(?:[▲■✖] )?" + re.escape(EVIL) + "$"))
    assert b.page.locator("img[src=x]").count() == 0
    assert b.page.locator("#tree b").count() == 0  # "<b>bold</b>" is not markup either
    # hover it: Plotly's hover label shows the name as text, with no <img> element
    label.hover(force=True)
    hover = b.page.locator(".hoverlayer .hovertext")
    expect(hover).to_contain_text(f"root.{EVIL}")
    assert b.page.locator(".hoverlayer img").count() == 0
    assert "<img" not in b.page.evaluate("document.querySelector('.hoverlayer').innerHTML")
    b.screenshot("escaping-hover")
    # the queue page shows it as text too
    b.goto(f"/queues/detail/?queue=root.{EVIL.replace(' ', '%20')}")
    expect(b.page.get_by_test_id("queue-title")).to_have_text(f"root.{EVIL}")
    expect(
        b.page.get_by_test_id("applications").or_(b.page.get_by_test_id("allocations"))
    ).to_be_visible()
    assert b.page.locator("img[src=x]").count() == 0
    assert b.dialogs == []


def test_run_page_refreshes_in_place_until_done(browser: Browser, staff_user: Any) -> None:
    """A queued run's page shows progress, then its answer, without a full page reload."""
    data = DEMO_CLUSTER.read_bytes()
    snapshot = services.import_snapshot({"demo-cluster.json": data}, user=staff_user)
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snapshot,
        request={"queue": "root.research", "new_max": {"vcore": 4000}},
        user=staff_user,
        enqueue=False,  # the test plays the worker below
    )
    b = browser
    b.sign_in(staff_user.username)
    b.goto(f"/runs/{run.pk}/")
    expect(b.page.get_by_test_id("run-progress")).to_be_visible()
    # the page waits for the run with a long poll, not a reload every 2 s
    assert b.page.evaluate("document.documentElement.dataset.liveWaiting") == "true"
    assert b.page.evaluate("document.documentElement.dataset.livePolling") is None
    b.page.evaluate("window.__sameDocument = true")
    services.execute_run(run.pk)
    expect(b.page.get_by_test_id("run-status")).to_have_text("Done", timeout=30_000)
    expect(b.page.get_by_test_id("leaves-table")).to_contain_text("root.research.nlp")
    assert b.page.evaluate("window.__sameDocument") is True  # refreshed in place, not reloaded
    # the wait and the fallback refresh both stop
    b.wait_js(
        "!document.documentElement.dataset.livePolling"
        " && !document.documentElement.dataset.liveWaiting"
    )


# --------------------------------------------------------------------------- observed history


def test_observed_preemption_beside_the_dashboards_prediction(
    browser: Browser, staff_user: Any
) -> None:
    """A REST folder with the scheduler's events: its quota preemption of root.batch is an
    observed run, shown beside the dashboard's timer run that predicted the same victims."""
    b = browser
    rest = _fixtures() / "rest"
    folder = [*sorted(rest.glob("partition_*.json")), rest / "partitions.json"]
    base = services.import_snapshot({p.name: p.read_bytes() for p in folder})
    keys = sorted(
        a.key
        for a in services.snapshot_allocations(base).filter(
            preempted=True, app__startswith="spark-9c8b"
        )
    )
    timer = models.PreemptionRun.objects.create(
        partition=base.partition,
        snapshot=base,
        kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        trigger=models.PreemptionRun.Trigger.TIMER,
        status="done",
        queue="root.batch",
        # the max it predicted: the one the scheduler enforced (its QUEUE_PREEMPTION event),
        # predicted to fire just before the scheduler's quota preemption (09:59:29.987)
        request={"queue": "root.batch", "new_max": {"vcore": 10000, "memory": 48 * 2**30}},
        outcome="enforced",
        result={"status": "enforced"},
        queued_at=datetime(2026, 9, 1, 9, 59, 25, tzinfo=UTC),
    )
    for i, k in enumerate(keys):
        models.RunVictim.objects.create(run=timer, position=i, allocation_key=k, resources={})

    b.sign_in(staff_user.username)
    b.upload("snapshot", [*folder, rest / "events_batch.json"], r"/queues/\?")
    b.goto("/history/")
    expect(b.page.get_by_test_id("history-agreement")).to_contain_text(
        "2 observed preemptions by the scheduler; 1 had been predicted by the dashboard, "
        "1 of them with the same victims."
    )
    observed = models.PreemptionRun.objects.get(trigger="observed", kind="quota")
    b.screenshot("history-observed")
    b.goto(f"/runs/{observed.pk}/")
    expect(b.page.get_by_test_id("run-nature")).to_have_text("observed")
    expect(b.page.get_by_test_id("run-agreed")).to_have_text("the same victims")
    table = b.page.get_by_test_id("compare-table")
    for k in keys:
        expect(table).to_contain_text(k)
    b.screenshot("run-observed")
    b.page.click(f'[data-testid="run-compare"] >> text=run #{timer.pk}')
    expect(b.page.get_by_test_id("run-nature")).to_have_text("predicted")
    expect(b.page.get_by_test_id("run-observed-by")).to_contain_text(f"observed run #{observed.pk}")


def test_two_clusters_keep_apart_a_predicted_versus_observed_run(
    browser: Browser, staff_user: Any
) -> None:
    """acme-ml and lab-west both have partition default: the acme-ml upload (to the cluster
    named on the import page) shows its observed quota preemption beside the timer run that
    predicted it, while lab-west's own observed preemptions stay in lab-west."""
    b = browser
    lab_west = Path(__file__).resolve().parents[1] / "dashboard" / "data" / "cluster-b"
    lab_files = {p.name: p.read_bytes() for p in sorted((lab_west / "rest").glob("*.json"))}
    lab = services.import_snapshot(lab_files)  # the answers' clusterId: lab-west
    lab_observed = list(
        models.PreemptionRun.objects.filter(partition=lab.partition, trigger="observed")
    )
    assert lab_observed
    rest = _fixtures() / "rest"
    folder = [*sorted(rest.glob("partition_*.json")), rest / "partitions.json"]
    base = services.import_snapshot({p.name: p.read_bytes() for p in folder}, cluster="acme-ml")
    assert base.partition.pk != lab.partition.pk
    keys = sorted(
        a.key
        for a in services.snapshot_allocations(base).filter(
            preempted=True, app__startswith="spark-9c8b"
        )
    )
    timer = models.PreemptionRun.objects.create(
        partition=base.partition,
        snapshot=base,
        kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        trigger=models.PreemptionRun.Trigger.TIMER,
        status="done",
        queue="root.batch",
        # the max it predicted: the one the scheduler enforced (its QUEUE_PREEMPTION event),
        # predicted to fire just before the scheduler's quota preemption (09:59:29.987)
        request={"queue": "root.batch", "new_max": {"vcore": 10000, "memory": 48 * 2**30}},
        outcome="enforced",
        result={"status": "enforced"},
        queued_at=datetime(2026, 9, 1, 9, 59, 25, tzinfo=UTC),
    )
    for i, k in enumerate(keys):
        models.RunVictim.objects.create(run=timer, position=i, allocation_key=k, resources={})

    b.sign_in(staff_user.username)
    b.goto("/import/")
    b.page.check('input[name="kind"][value="snapshot"]')
    b.page.fill('input[name="cluster"]', "acme-ml")
    b.page.set_input_files(
        'input[name="upload"]', [str(f) for f in [*folder, rest / "events_batch.json"]]
    )
    b.page.click('[data-testid="import-submit"]')
    b.page.wait_for_url(re.compile(r"/queues/\?cluster=acme-ml&partition=default&snapshot=\d+"))
    b.figures_rendered()
    expect(b.page.locator("#scope-cluster")).to_have_value("acme-ml")
    assert models.ClusterSnapshot.objects.filter(partition=lab.partition).count() == 1

    b.page.click("nav.mainnav >> text=History")
    agreement = b.page.get_by_test_id("history-agreement")
    expect(agreement).to_contain_text(
        "2 observed preemptions by the scheduler; 1 had been predicted by the dashboard, "
        "1 of them with the same victims."
    )
    table = b.page.get_by_test_id("history-table")
    for run in lab_observed:
        expect(table.locator(f'a[href="/runs/{run.pk}/"]')).to_have_count(0)
    expect(table.locator(f'a[href="/runs/{timer.pk}/"]')).to_have_count(1)
    b.screenshot("history-two-clusters-acme")

    observed = models.PreemptionRun.objects.get(
        partition=base.partition, trigger="observed", kind="quota"
    )
    b.goto(f"/runs/{observed.pk}/")
    expect(b.page.locator("#scope-cluster")).to_have_value("acme-ml")
    expect(b.page.get_by_test_id("run-nature")).to_have_text("observed")
    expect(b.page.get_by_test_id("run-agreed")).to_have_text("the same victims")
    compare = b.page.get_by_test_id("compare-table")
    for k in keys:
        expect(compare).to_contain_text(k)
    b.screenshot("run-observed-two-clusters")

    # the cluster switcher: lab-west's history holds its own observed runs, none predicted
    b.page.click("nav.mainnav >> text=History")
    b.page.select_option("#scope-cluster", "lab-west")
    b.page.wait_for_url(re.compile(r"cluster=lab-west"))
    expect(b.page.locator("#scope-cluster")).to_have_value("lab-west")
    expect(b.page.get_by_test_id("history-agreement")).to_contain_text(
        f"{len(lab_observed)} observed preemptions by the scheduler; 0 had been predicted"
    )
    table = b.page.get_by_test_id("history-table")
    for run in lab_observed:
        expect(table.locator(f'a[href="/runs/{run.pk}/"]')).to_have_count(1)
    expect(table.locator(f'a[href="/runs/{observed.pk}/"]')).to_have_count(0)
    expect(table.locator(f'a[href="/runs/{timer.pk}/"]')).to_have_count(0)
    b.screenshot("history-two-clusters-lab-west")
