"""The pages' third pass in the browser (issue 28): mode bars, the history at 400 px,
the focus after a form post, the what-if ask list on a narrow window."""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Browser

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_figures_mode_bar_is_one_tab_stop_and_never_sends_a_figure_away(
    browser: Browser, staff_user: Any
) -> None:
    """Every figure's mode bar offers one focusable button (a PNG of it) and no button
    that uploads the figure (plotly.js's "send to cloud" / Chart Studio)."""
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    for path in ("/queues/", "/queues/detail/?queue=root.batch", "/nodes/", "/history/"):
        b.goto(path)
        b.figures_rendered()
        bars = b.page.evaluate(
            """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(gd => ({
                id: gd.id || gd.dataset.testid || '?',
                stops: Array.from(gd.querySelectorAll('.modebar button, .modebar a[href]'))
                    .filter(e => e.tabIndex >= 0).length,
                titles: Array.from(gd.querySelectorAll('.modebar [data-title]'))
                    .map(e => e.getAttribute('data-title')),
                cloud: gd._context.showSendToCloud || gd._context.showEditInChartStudio
                    || gd._context.plotlyServerURL !== '',
            }))"""
        )
        assert bars, f"{path} draws no figure"
        for bar in bars:
            assert bar["stops"] <= 1, f"{path} {bar}"
            assert not bar["cloud"], f"{path} {bar}"
            assert not [t for t in bar["titles"] if "cloud" in t.lower() or "studio" in t.lower()]


def _runs_for_the_history(snapshot: models.ClusterSnapshot) -> None:
    """What-ifs of three kinds of answer, run in this process (no worker needed)."""
    requests = [
        (
            models.PreemptionRun.Kind.WHATIF_QUOTA,
            {"queue": "root.batch", "new_max": {"vcore": 8000}},
        ),
        (models.PreemptionRun.Kind.WHATIF_QUOTA, {"queue": "root.batch", "new_max": {"vcore": 1}}),
        (models.PreemptionRun.Kind.WHATIF_PREEMPT, {"ask_key": snapshot.asks.first().key}),  # type: ignore[union-attr]
    ]
    for kind, request in requests:
        run = services.create_run(kind=kind, snapshot=snapshot, request=request, enqueue=False)
        services.execute_run(run.pk)


def test_an_administrators_walk_on_a_narrow_window(browser: Browser, staff_user: Any) -> None:
    """At 400 px: the history's legend stays off its queues and points, the ask list
    starts with the queue; the edit form's "change" column compares with the max in
    force; after a form post the focus is on the message."""
    b = browser
    b.sign_in(staff_user.username)
    b.import_demo()
    snapshot = models.ClusterSnapshot.objects.get()
    _runs_for_the_history(snapshot)
    in_force = dict(services.queue_settings(snapshot.partition, "root.batch").max or {})
    change = services.schedule_quota_change(
        snapshot.partition, "root.batch", new_max={**in_force, "vcore": 8000}, user=staff_user
    )
    services.raise_alert(models.Alert.Kind.QUOTA, "an alert to acknowledge", queue="root.batch")
    b.page.set_viewport_size({"width": 400, "height": 860})

    # point 8: the timeline's legend never covers the plot (its queue labels and points)
    b.goto("/history/")
    b.figures_rendered()
    boxes = b.page.evaluate(
        """() => {
            const gd = document.querySelector('[data-testid="timeline-figure"]');
            const box = (el) => { const r = el.getBoundingClientRect();
                return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
            return {
                legend: box(gd.querySelector('.legend')),
                plot: box(gd.querySelector('.draglayer .nsewdrag')),
                labels: Array.from(gd.querySelectorAll('.ytick text')).map(box),
                entries: gd.querySelectorAll('.legend .traces').length,
            };
        }"""
    )
    assert boxes["entries"] >= 2, boxes
    assert boxes["legend"]["bottom"] <= boxes["plot"]["top"] + 1, boxes
    for label in boxes["labels"]:
        assert boxes["legend"]["bottom"] <= label["top"] + 1, boxes

    # point 7: the pending asks are listed queue first, with what they ask
    b.goto("/whatif/")
    b.figures_rendered()
    labels = b.page.eval_on_selector_all("#ask_ask_key option", "os => os.map(o => o.text)")
    assert len(labels) > 1
    for label in labels[1:]:
        assert label.startswith("root."), label
        assert "priority" in label, label
    right = b.page.eval_on_selector("#ask_ask_key", "e => e.getBoundingClientRect().right")
    assert right <= 400

    # point 3: types the edit leaves alone read "unchanged", not "unlimited -> ..."
    b.goto(f"/changes/{change.pk}/edit/")
    b.figures_rendered()
    cells = b.page.eval_on_selector_all(
        "tr[data-type]",
        "rows => rows.map(r => [r.dataset.type, r.querySelector('[data-change]').textContent])",
    )
    assert cells, "no max rows"
    for rtype, text in cells:
        if rtype in in_force and rtype != "vcore":
            assert text == "unchanged", cells
        assert not text.startswith("unlimited"), cells

    # point 10: after a form post the message has the focus
    b.goto("/alerts/")
    b.figures_rendered()
    b.page.click('[data-testid="ack-all"]')
    b.page.wait_for_selector("[data-messages]")
    b.figures_rendered()
    assert b.page.evaluate("document.activeElement.id") == "messages"
    b.page.keyboard.press("Tab")
    assert b.page.evaluate("document.activeElement.closest('main') !== null")
