"""The what-if page answers in place: no page load per question, the URL names the answer.

The forms post with fetch; the answer region (and its figures, redrawn in place)
is swapped in and the URL becomes the answer's own, so a reload, back and forward
show the answers asked.  Without script the forms post and the answer page loads.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from browser_support import DEMO_CLUSTER, PASSWORD, Browser
from playwright.sync_api import Browser as PlaywrightBrowser
from playwright.sync_api import expect
from support.processes import wait_until
from support.runs import deep_victim_run

from dashboard import models

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# what a page load would lose: set once, still there after each answer
MARK_PAGE = "window.__samePage = 'yes'"
SAME_PAGE = "window.__samePage === 'yes'"
# the drawn tree figure: the same element before and after an answer (redrawn in place)
MARK_TREE = "document.querySelector('[data-testid=\"run-tree-figure\"]').__mark = 'first'"
TREE_MARK = "document.querySelector('[data-testid=\"run-tree-figure\"]').__mark || null"


def _answer_of(b: Browser, run: models.PreemptionRun) -> None:
    """Wait until the answer region shows *run*, finished, with its figures drawn."""
    region = b.page.locator("#whatif-live")
    expect(region).to_have_attribute("data-run", str(run.pk), timeout=60_000)
    expect(region.get_by_test_id("run-outcome")).to_be_visible(timeout=60_000)
    expect(region).to_have_attribute("data-figures-run", str(run.pk), timeout=60_000)


def _newest_run() -> models.PreemptionRun:
    run = models.PreemptionRun.objects.order_by("-pk").first()
    assert run is not None
    return run


def test_answers_come_in_place_with_their_own_urls(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    b.goto(f"/whatif/?snapshot={snapshot.pk}")
    b.figures_rendered()
    expect(b.page.locator("#whatif-live")).to_be_hidden()
    b.page.evaluate(MARK_PAGE)

    # a pending ask: victims found, the answer swapped in, the URL pushed
    b.page.click('[data-testid="run-preempt"]')
    wait_until(lambda: models.PreemptionRun.objects.exists(), 30, "the what-if run")
    preempt = _newest_run()
    _answer_of(b, preempt)
    assert b.page.evaluate(SAME_PAGE)  # no page load
    assert f"run={preempt.pk}" in b.page.url
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("preempted")
    keys = b.page.locator('[data-testid="victims-table"] tr.highlight td:nth-child(2)')
    expect(keys).to_have_text(["adhoc-2"])
    # the focus moves to the answer, for keyboard and screen reader users
    assert b.page.evaluate("document.activeElement.hasAttribute('data-answer-heading')")
    tree = b.page.locator('[data-testid="run-tree-figure"]')
    expect(tree.locator(".slice").first).to_be_attached()
    assert b.page.evaluate(
        "document.querySelector('[data-testid=\"run-tree-figure\"]').data[0].ids.length"
    ) == len(snapshot.queues.all())
    problems = b.axe()
    assert problems == [], "\n".join(problems)
    b.page.evaluate(MARK_TREE)

    # a quota plan on the same page: a new answer, the drawn tree redrawn in its element
    b.page.select_option("#quota_queue", "root.batch")
    b.page.fill("#quota_max__vcore", "8")
    b.page.click('[data-testid="run-quota"]')
    wait_until(lambda: _newest_run().pk != preempt.pk, 30, "the quota run")
    quota = _newest_run()
    _answer_of(b, quota)
    assert b.page.evaluate(SAME_PAGE)
    assert f"run={quota.pk}" in b.page.url
    expect(b.page.get_by_test_id("leaves-table")).to_contain_text("root.batch.adhoc")
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("target claimed in full")
    assert b.page.evaluate(TREE_MARK) == "first"
    # the victims' queues are outlined in the redrawn tree (the plan's, not the ask's)
    lines = b.page.evaluate(
        """() => {
          const t = document.querySelector('[data-testid="run-tree-figure"]').data[0];
          return t.ids.filter((id, i) => t.marker.line.color[i] === '#c2255c');
        }"""
    )
    assert lines
    assert all(q.startswith("root.batch") for q in lines)
    expect(b.page.get_by_test_id("schedule-it")).to_be_visible()
    problems = b.axe()
    assert problems == [], "\n".join(problems)

    # back and forward walk the answers asked, still without a page load
    b.page.go_back()
    _answer_of(b, preempt)
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("preempted")
    assert b.page.evaluate(SAME_PAGE)
    b.page.go_forward()
    _answer_of(b, quota)
    expect(b.page.get_by_test_id("leaves-table")).to_be_visible()

    # a reload of the URL shows the same answer, from the server's page
    b.page.reload()
    b.figures_rendered()
    assert not b.page.evaluate(SAME_PAGE)
    expect(b.page.locator("#whatif-live")).to_have_attribute("data-run", str(quota.pk))
    expect(b.page.get_by_test_id("run-outcome")).to_have_text("target claimed in full")
    expect(b.page.get_by_test_id("leaves-table")).to_contain_text("root.batch.adhoc")
    b.screenshot("whatif-in-place")


def test_a_question_with_errors_shows_them_in_place(
    browser: Browser, staff_user: Any, worker: Any
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    b.goto(f"/whatif/?snapshot={snapshot.pk}")
    b.page.select_option("#ask_ask_key", "")  # "type an ask below"
    b.page.click("details summary")
    b.page.select_option("#ask_queue", "root.batch.adhoc")
    b.page.fill("#ask_res__vcore", "1.5")
    b.page.click('[data-testid="run-preempt"]')
    expect(b.page.locator('[data-testid="preempt-form"] .errorlist')).to_contain_text(
        "decimals are not allowed"
    )
    assert not models.PreemptionRun.objects.exists()
    # the form shown again still asks in place
    b.page.evaluate(MARK_PAGE)
    b.page.fill("#ask_res__vcore", "1")
    b.page.click('[data-testid="run-preempt"]')
    wait_until(lambda: models.PreemptionRun.objects.exists(), 30, "the what-if run")
    expect(b.page.locator("#whatif-live")).to_have_attribute(
        "data-run", str(_newest_run().pk), timeout=30_000
    )
    assert b.page.evaluate(SAME_PAGE)


def test_without_script_the_form_posts_and_the_answer_page_loads(
    chromium: PlaywrightBrowser, live_server: Any, staff_user: Any, worker: Any
) -> None:
    context = chromium.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(live_server.url + "/login/")
        page.fill("#id_username", staff_user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_selector('[data-testid="signed-in-user"]')
        page.goto(live_server.url + "/import/")
        page.check('input[name="kind"][value="snapshot"]')
        page.set_input_files('input[name="upload"]', [str(DEMO_CLUSTER)])
        page.click('[data-testid="import-submit"]')  # without script: a plain multipart post
        page.wait_for_url(re.compile(r"/queues/\?"))
        page.goto(live_server.url + "/whatif/")
        page.click('[data-testid="run-preempt"]')
        page.wait_for_url(re.compile(r"/whatif/\?.*run=\d+"))  # the post's redirect
        run = models.PreemptionRun.objects.get()
        assert f"run={run.pk}" in page.url

        def answered() -> bool:
            if page.locator('[data-testid="run-outcome"]').count():
                return True
            page.reload()  # no script: the reader reloads until the worker has answered
            return False

        wait_until(answered, 60, "the answer page")
        assert page.locator('[data-testid="run-outcome"]').inner_text() == "preempted"
        assert page.locator("#whatif-live").get_attribute("data-run") == str(run.pk)
    finally:
        context.close()


VICTIM_RGB = "rgb(194, 37, 92)"  # VICTIM_COLOUR
RUN_TREE_DRAWS = """
window.runTreeDraws = [];
document.addEventListener("figure:rendered", function (ev) {
  if (ev.target.getAttribute("data-testid") !== "run-tree-figure") return;
  var strokes = {};
  ev.target.querySelectorAll("g.slice").forEach(function (g) {
    var pt = g.__data__;
    if (pt.x0 !== pt.x1 && pt.y0 !== pt.y1) {
      strokes[pt.data.data.id] = getComputedStyle(g.querySelector("path.surface")).stroke;
    }
  });
  window.runTreeDraws.push({count: ev.target.data[0].ids.length, strokes: strokes});
});
"""


def test_a_big_answer_tree_is_drawn_in_part_first_with_a_trail_to_deep_victims(
    browser: Browser, staff_user: Any
) -> None:
    """Past 60 queues, the answer's tree is drawn as the tree page's is: the levels shown
    first (the answer's figures come quickly), then whole; a victims' queue below those
    levels is reached through the crimson trail, and opens on a click."""
    run = deep_victim_run()
    b = browser
    b.sign_in(staff_user.username)
    b.page.add_init_script(RUN_TREE_DRAWS)
    b.goto(f"/whatif/?snapshot={run.snapshot_id}&run={run.pk}")
    b.figures_rendered()
    tree = b.page.get_by_test_id("run-tree-figure")
    expect(tree).to_have_attribute("data-whole", "true")
    first, whole = b.page.evaluate("window.runTreeDraws")
    total = 1 + 2 + 2 + 1 + 70 + 4  # root, a (x, y), b, many (70), deep (l2, l3, l4)
    assert whole["count"] == total
    assert first["count"] < total  # below the third level: left out of the first draw
    assert first["strokes"] == whole["strokes"]  # ... which shows the same boxes
    assert first["strokes"]["root.deep"] == VICTIM_RGB  # the trail
    assert first["strokes"]["root.deep.l2"] == VICTIM_RGB
    assert "root.deep.l2.l3.l4" not in whole["strokes"]  # hidden until a click ...
    expect(b.page.get_by_test_id("run-tree-levels")).to_contain_text("3 levels shown")
    b.page.locator('[data-testid="run-tree-figure"] g.slice', has_text="l2").first.click()
    b.wait_js(
        """(() => {
          const gd = document.querySelector('[data-testid="run-tree-figure"]');
          return [...gd.querySelectorAll('g.slice')].some((g) => g.__data__.data.data.id
            === 'root.deep.l2.l3.l4' && g.__data__.x0 !== g.__data__.x1);
        })()"""
    )  # ... and shown once its trail is followed
