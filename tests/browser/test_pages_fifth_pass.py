"""The pages' fifth pass in the browser (issue 38), with two clusters imported through the
import page as a new administrator would: the sample cluster (../shared/fixtures/yunikorn)
and gen-east, generated here (a queue path with no guarantee at all, pods on every
allocation and pending ask, captured ten days ago). Over time opens on the data's
window; a pending ask is named by its pod; a what-if for a queue with no guarantee does
not quote the guarantee rule; every page state in both themes at 1400 and 400 px passes
axe, and none is wider than a 400 px window."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from browser_support import ROOT, Browser
from playwright.sync_api import expect

from dashboard import models

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SAMPLE = ROOT.parent / "shared" / "fixtures" / "yunikorn" / "rest"
#: gen-east's capture: ten days ago, out of any "last days" a page might default to
CAPTURED = (datetime.now(UTC) - timedelta(days=10)).replace(hour=9, minute=30, microsecond=0)
CORE = 1000


def _gen_east() -> dict[str, Any]:
    """A cluster nobody here imported before: root.prod (guaranteed 8 cores, using 12)
    over web and api; root.adhoc.notebooks with no guarantee on its path. Three nodes of 8
    cores; 8 cores free in pieces of 2 and 6, so a 7-core ask fits no node but no max."""
    now = CAPTURED.timestamp()
    allocations = []
    placed = [("n1", "web")] * 4 + [("n2", "web")] * 2 + [("n2", "notebooks"), ("n3", "notebooks")]
    for i, (node, leaf) in enumerate(placed):
        queue = "root.prod.web" if leaf == "web" else "root.adhoc.notebooks"
        namespace = "prod" if leaf == "web" else "adhoc"
        allocations.append(
            {
                "key": f"{i:08x}-5e1f-4c1a-9d2b-7a0c3e4f5a6b",
                "app": f"{leaf}-app",
                "queue": queue,
                "node": node,
                "resources": {"vcore": 2 * CORE},
                "created": now - 3600 + i,
                "pod": f"{namespace}/{leaf}-{i}",
            }
        )
    return {
        "now": now,
        "queues": {
            "name": "root",
            "children": [
                {
                    "name": "prod",
                    "guaranteed": {"vcore": 8 * CORE},
                    "children": [{"name": "web"}, {"name": "api"}],
                },
                {"name": "adhoc", "children": [{"name": "notebooks"}]},
            ],
        },
        "nodes": [{"id": f"n{i}", "capacity": {"vcore": 8 * CORE}} for i in (1, 2, 3)],
        "allocations": allocations,
        "request": {
            "type": "round",
            "asks": [
                {
                    "key": "ab12cd34-0000-4e5f-8a9b-0c1d2e3f4a5b",
                    "app": "notebooks-app",
                    "queue": "root.adhoc.notebooks",
                    "resources": {"vcore": 7 * CORE},
                    "created": now - 600,
                    "pod": "adhoc/notebook-big-0",
                }
            ],
        },
    }


def _import(b: Browser, files: list[Path], cluster: str) -> None:
    b.goto("/import/")
    b.page.check('input[name="kind"][value="snapshot"]')
    b.page.fill("#id_cluster", cluster)
    b.page.set_input_files('input[name="upload"]', [str(f) for f in files])
    b.page.click('[data-testid="import-submit"]')
    b.page.wait_for_url(re.compile(r"/queues/\?"))


def _two_clusters(b: Browser, tmp_path: Path) -> None:
    sample = [p for p in sorted(SAMPLE.glob("*.json")) if "statedump" not in p.name]
    _import(b, sample, "acme-ml")
    generated = tmp_path / "gen-east.json"
    generated.write_text(json.dumps(_gen_east()))
    _import(b, [generated], "gen-east")


def test_two_clusters_walked_at_1400_and_400_px_in_both_themes(
    browser: Browser, staff_user: Any, worker: Any, tmp_path: Path
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    _two_clusters(b, tmp_path)
    east = "cluster=gen-east&partition=default"
    acme = "cluster=acme-ml&partition=default"
    sample_ask = models.PendingAsk.objects.get(snapshot__partition__cluster__name="acme-ml")
    east_ask = models.PendingAsk.objects.get(snapshot__partition__cluster__name="gen-east")
    assert (sample_ask.pod, east_ask.pod) == (
        "ml-training/bert-finetune-ft12-worker-0",
        "adhoc/notebook-big-0",
    )

    # what-if for gen-east's pending ask, from its list (the pod named there)
    b.goto(f"/whatif/?{east}")
    option = b.page.locator(f'#ask_ask_key option[value="{east_ask.key}"]')
    expect(option).to_contain_text("pod adhoc/notebook-big-0")
    b.page.select_option("#ask_ask_key", east_ask.key)
    b.page.click('[data-testid="run-preempt"]')
    expect(b.page.get_by_test_id("run-outcome")).to_be_visible(timeout=60_000)
    reason = b.page.get_by_test_id("run-reason")
    expect(reason).to_contain_text(
        "queue root.adhoc.notebooks has no guarantee, nor has any queue above it"
    )
    expect(reason).not_to_contain_text("cannot stay within its guarantee")
    expect(b.page.get_by_test_id("ask-explain").get_by_test_id("ask-name")).to_contain_text(
        "adhoc/notebook-big-0"
    )
    run = models.PreemptionRun.objects.get(kind=models.PreemptionRun.Kind.WHATIF_PREEMPT)

    # over time opens on the data's window: gen-east's day ten days ago, not the last 30
    b.goto(f"/queues/over-time/?{east}&queue=root.prod")
    b.figures_rendered()
    start = b.page.locator("#overtime-start").input_value()
    assert start == CAPTURED.strftime("%Y-%m-%dT00:00")
    expect(b.page.get_by_test_id("overtime-data")).to_contain_text("one snapshot, captured")
    # one snapshot: its figures at one instant, drawn as points (not an empty chart)
    expect(b.page.get_by_test_id("overtime-instant")).to_be_visible()
    expect(b.page.get_by_test_id("overtime-types")).to_contain_text("12.0 cores")
    mode = b.page.evaluate(
        "document.querySelector('[data-testid=overtime-usage-figure]').data[0].mode"
    )
    assert mode == "lines+markers"
    axis = b.page.evaluate(
        "document.querySelector('[data-testid=overtime-usage-figure]').layout.xaxis.range"
    )
    assert [a[:10] for a in axis] == [
        start[:10],
        (CAPTURED + timedelta(days=1)).strftime("%Y-%m-%d"),
    ]

    pages = [
        f"/queues/?{east}",
        f"/queues/over-time/?{east}&queue=root.prod",
        f"/queues/over-time/?{acme}&queue=root.batch",
        f"/applications/?{east}&app={east_ask.app}",
        f"/applications/?{acme}&app={sample_ask.app}",
        f"/whatif/?{east}",
        f"/whatif/?run={run.pk}",
        f"/runs/{run.pk}/",
        f"/history/?{east}",
        f"/nodes/?{east}",
    ]
    problems: list[str] = []
    for width in (1400, 400):
        b.page.set_viewport_size({"width": width, "height": 900})
        for path in pages:
            b.goto(path)
            b.figures_rendered()
            b.page.evaluate(
                "() => document.querySelectorAll('details').forEach(d => d.open = true)"
            )
            if width == 400:
                wide = b.page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                if wide > 0:
                    problems.append(f"[400 px] {path}: {wide} px wider than the window")
            elif path.startswith("/applications/") and "gen-east" in path:
                expect(b.page.get_by_test_id("app-asks")).to_contain_text("adhoc/notebook-big-0")
            for _ in range(2):
                theme = b.page.evaluate("document.documentElement.dataset.theme")
                problems.extend(f"[{theme} {width}] {path}: {v}" for v in b.axe())
                if (
                    width == 1400
                    and theme == "light"
                    and path.startswith("/queues/over-time/?cluster=gen")
                ):
                    b.screenshot("overtime")
                b.set_theme("dark" if theme == "light" else "light")
                b.figures_rethemed()
    assert problems == [], "\n".join(problems)
