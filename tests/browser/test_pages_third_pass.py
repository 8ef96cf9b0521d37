"""The pages' third pass in the browser (issue 28): mode bars, the history at 400 px,
the focus after a form post, the what-if ask list on a narrow window."""

from __future__ import annotations

from typing import Any

import pytest
from browser_support import Browser

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
