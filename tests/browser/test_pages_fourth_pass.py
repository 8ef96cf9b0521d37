"""The pages' fourth pass in the browser (issue 38) on lab-west (tests/dashboard/data/
cluster-b), imported through the import page: victims named by their pods, the
victims' outline seen on a queue over a lowered max, the Nodes page marking its
selected node as selected (not as holding victims)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser_support import ROOT, Browser

from dashboard import models, services

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CLUSTER_B = ROOT / "tests" / "dashboard" / "data" / "cluster-b" / "rest"
GIB = 2**30


def _lab_west(tmp: Path) -> list[Path]:
    """lab-west's REST answers, root.etl guaranteed 1 core (its usage then above it)."""
    folder = tmp / "lab-west"
    folder.mkdir()
    for f in CLUSTER_B.glob("*.json"):
        if f.name != "events_batch.json":
            (folder / f.name).write_bytes(f.read_bytes())
    tree = json.loads((folder / "partition_queues.json").read_text())
    (etl,) = [q for q in tree["children"] if q["queuename"] == "root.etl"]
    etl["guaranteedResource"] = {"vcore": 1000, "memory": 8 * GIB}
    (folder / "partition_queues.json").write_text(json.dumps(tree))
    return sorted(folder.iterdir())


def _pods() -> dict[str, str]:
    nodes = json.loads((CLUSTER_B / "partition_nodes.json").read_text())
    return {
        a["allocationKey"]: f"{a['allocationTags']['kubernetes.io/meta/namespace']}/"
        f"{a['allocationTags']['kubernetes.io/meta/podName']}"
        for n in nodes
        for a in n.get("allocations") or []
    }


def _luminance(colour: str) -> float:
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _etl_whatif(b: Browser, staff_user: Any, tmp_path: Path) -> models.PreemptionRun:
    """lab-west imported through the page, root.etl's max lowered to 2 cores by a
    waiting change (the tree paints it over its lowered max), and a quota what-if of
    that max run in this process."""
    b.upload("snapshot", _lab_west(tmp_path), r"/queues/\?")
    snapshot = models.ClusterSnapshot.objects.get()
    new_max = {"vcore": 2000, "memory": 48 * GIB}
    services.schedule_quota_change(
        snapshot.partition, "root.etl", new_max=new_max, new_delay=3600.0, user=staff_user
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snapshot,
        request={"queue": "root.etl", "new_max": new_max},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert run.victims.exists()
    return run


def test_victims_are_named_by_their_pods_and_outlined_visibly_over_a_lowered_max(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    run = _etl_whatif(b, staff_user, tmp_path)
    pods = _pods()
    keys = list(run.victims.order_by("position").values_list("allocation_key", flat=True))
    victim_queues = set(run.victims.values_list("leaf", flat=True)) - {""}
    for width in (1400, 400):
        b.page.set_viewport_size({"width": width, "height": 900})
        for theme in ("light", "dark"):
            b.goto(f"/runs/{run.pk}/")
            b.set_theme(theme)
            b.figures_rendered()
            # point 1: the pod first, the key second (whole in its title), the user after
            cells = b.page.locator('[data-testid="victim-name"]')
            assert cells.count() == len(keys)
            for i, key in enumerate(keys):
                text = cells.nth(i).inner_text()
                assert text.startswith(f"{pods[key]} {key[:8]}…"), (width, text)
                assert cells.nth(i).locator(".alloc-key").get_attribute("title") == key
            # point 2: every victims' queue's outline stands out on its box's fill
            boxes = b.page.evaluate(
                """() => {
                    const gd = document.querySelector('[data-testid="run-tree-figure"]');
                    const t = gd.data[0];
                    return t.ids.map((id, i) => [id, t.marker.colors[i],
                        t.marker.line.color[i], t.marker.line.width[i]]);
                }"""
            )
            shown = {path: (fill, line, w) for path, fill, line, w in boxes}
            assert victim_queues <= set(shown)
            fills = {shown[q][0] for q in victim_queues}
            assert "#c2255c" in fills, "no victims' queue is over its lowered max"
            for q in victim_queues:
                fill, line, w = shown[q]
                assert w >= 4, q
                assert _contrast(fill, line) >= 3, (q, fill, line)
            b.page.locator('[data-testid="legend-victims-on-crimson"]').wait_for()


def test_the_nodes_page_marks_its_selected_node_as_selected_not_as_victims(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    b = browser
    b.sign_in(staff_user.username)
    run = _etl_whatif(b, staff_user, tmp_path)
    snapshot = models.ClusterSnapshot.objects.get()
    node = "node-a"
    b.goto(f"/nodes/?snapshot={snapshot.pk}&node={node}")
    b.figures_rendered()
    marks = b.page.evaluate(
        """() => document.querySelector('[data-testid="nodes-figure"]')
            .layout.annotations.map(a => a.text)"""
    )
    assert marks == ["▼ selected"]
    # the node's allocations are named by their pods
    names = b.page.locator('[data-testid="node-allocations"] [data-testid="allocation-name"]')
    assert names.count() > 0
    pods = set(_pods().values())
    assert all(
        names.nth(i).locator(".alloc-pod").inner_text() in pods for i in range(names.count())
    )
    # a run's page marks the nodes holding its victims, and only those
    victim_nodes = set(run.victims.values_list("node", flat=True))
    b.goto(f"/runs/{run.pk}/")
    b.figures_rendered()
    marks = b.page.evaluate(
        """() => document.querySelector('[data-testid="run-nodes-figure"]')
            .layout.annotations.map(a => a.text)"""
    )
    assert marks == ["▼ victims"] * len(victim_nodes)


def test_focus_goes_to_the_refusal_or_the_result_after_a_post(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    """Item 12: after a refused form the focus is on its error; after a plan is posted,
    on the plan's summary; never left at the top of the page."""
    b = browser
    b.sign_in(staff_user.username)
    b.upload("snapshot", _lab_west(tmp_path), r"/queues/\?")
    b.goto("/plans/")
    b.expect_console_error(r"status of 400")  # the refused form's answer
    b.page.fill("#id_text", "   ")
    b.page.click('[data-testid="plan-submit"]')
    b.page.wait_for_load_state()
    focused = b.page.evaluate(
        "() => document.activeElement.matches('.errorlist, [data-form-error]') "
        "&& document.activeElement.textContent"
    )
    assert focused, "the refused form's error does not have the focus"
    b.page.fill("#id_text", "partitions:\n  - name: default\n    queues:\n      - name: root\n")
    b.page.click('[data-testid="plan-submit"]')
    b.page.wait_for_load_state()
    b.figures_rendered()
    focused = b.page.evaluate(
        '() => document.activeElement.closest(\'[data-testid="plan-summary"], '
        '[data-testid="plan-refusals"]\') !== null'
    )
    assert focused, "the plan's result does not have the focus"


def test_the_changes_page_leads_with_one_line_and_marks_what_changes(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    """Item 11 at 400 px: the changes page's lead is one short paragraph (the rules behind
    a closed disclosure), a change's state and Cancel button are on the first screen,
    and its max names the type that changes apart from the one that does not."""
    b = browser
    b.sign_in(staff_user.username)
    b.upload("snapshot", _lab_west(tmp_path), r"/queues/\?")
    snapshot = models.ClusterSnapshot.objects.get()
    services.schedule_quota_change(
        snapshot.partition,
        "root.etl",
        new_max={"vcore": 7000, "memory": 48 * GIB},
        new_delay=3600.0,
        user=staff_user,
    )
    b.page.set_viewport_size({"width": 400, "height": 860})
    b.goto("/changes/")
    lead = b.page.get_by_test_id("changes-lead")
    assert lead.bounding_box()["height"] < 100  # type: ignore[index]
    assert b.page.get_by_test_id("changes-more").get_attribute("open") is None
    state = b.page.get_by_test_id("change-state").first
    assert state.bounding_box()["y"] < 860  # type: ignore[index]
    cell = b.page.get_by_test_id("change-max").first
    changed = cell.locator(".changed")
    assert changed.count() == 1
    assert changed.get_attribute("data-type") == "vcore"
    assert "unchanged: memory 48 GiB" in cell.inner_text()


LONG = "ateamwithaverylongnamethatgoesonandonandonwithoutabreak"
WARNED = f"""partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: {LONG}
            queues:
              - name: {LONG}-too
                properties:
                  quota.preemption.delay: soon
"""


def test_config_and_run_pages_fit_a_narrow_window(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    """Item 10 at 400 px: a config's long warning paths and a run's state pill and tree
    stay within the window (nothing scrolls the page sideways); the config diff's text
    scrolls in a region the keyboard reaches."""
    b = browser
    b.sign_in(staff_user.username)
    run = _etl_whatif(b, staff_user, tmp_path)
    partition = run.partition
    first = services.import_config(WARNED.encode(), cluster=partition.cluster.name)
    second = services.import_config(
        WARNED.replace("soon", "10m").encode(), cluster=partition.cluster.name
    )
    version = models.ConfigVersion.objects.get(pk=first.versions[0].pk)
    assert version.warnings
    b.page.set_viewport_size({"width": 400, "height": 860})
    for path in (f"/configs/{version.pk}/", f"/runs/{run.pk}/"):
        b.goto(path)
        b.figures_rendered()
        wide = b.page.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert wide <= 0, f"{path} is {wide} px wider than the window"
    b.goto(f"/configs/diff/?a={version.pk}&b={second.versions[0].pk}")
    region = b.page.get_by_test_id("text-diff")
    assert region.get_attribute("tabindex") == "0"
    assert region.get_attribute("role") == "region"


#: The pages of the axe walk whose screenshots the README's pages table shows.
SHOTS = {"/nodes/": "nodes", "/changes/": "changes", "/queues/victims/": "victims"}


def test_the_fourth_pass_states_pass_axe_in_both_themes_at_1400_and_400_px(
    browser: Browser, staff_user: Any, tmp_path: Path
) -> None:
    """Item 6: every page state this pass added or changed (victims named by their pods,
    the yellow outline and its legend, a selected node, why pending with every limit,
    a repeated reason said once, the changes page's lead and disclosure, a marked max
    change, a config's provenance and long warnings, the diff's region, the work lost
    totals, a refused plan and a plan's result), with every disclosure open, in both
    themes at 1400 and 400 px: no serious or critical axe finding."""
    b = browser
    b.sign_in(staff_user.username)
    run = _etl_whatif(b, staff_user, tmp_path)
    snapshot = models.ClusterSnapshot.objects.get()
    partition = snapshot.partition
    change = models.QuotaChange.objects.filter(queue_path="root.etl").order_by("-pk").first()
    assert change is not None
    first = services.import_config(WARNED.encode(), cluster=partition.cluster.name)
    second = services.import_config(
        WARNED.replace("soon", "10m").encode(), cluster=partition.cluster.name
    )
    ask = snapshot.asks.order_by("key").first()
    assert ask is not None
    west = f"cluster={partition.cluster.name}&partition={partition.name}&snapshot={snapshot.pk}"
    victim = run.victims.order_by("position").first()
    assert victim is not None
    shots = {**SHOTS, f"/runs/{run.pk}/": "run"}
    pages = [
        f"/runs/{run.pk}/",
        f"/whatif/?run={run.pk}",
        f"/nodes/?{west}&node={victim.node}",
        f"/applications/?{west}&app={ask.app}",
        f"/applications/?{west}&app={victim.app}",
        f"/queues/victims/?{west}&queue=root.etl",
        f"/queues/detail/?{west}&queue=root.etl",
        f"/queues/?{west}&queue=root.etl",
        f"/changes/?cluster={partition.cluster.name}",
        f"/changes/{change.pk}/",
        f"/configs/{first.versions[0].pk}/",
        f"/configs/diff/?a={first.versions[0].pk}&b={second.versions[0].pk}",
        f"/work-lost/?cluster={partition.cluster.name}",
    ]
    problems: list[str] = []

    def check(where: str) -> None:
        b.page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        for _ in range(2):
            theme = b.page.evaluate("document.documentElement.dataset.theme")
            problems.extend(f"[{theme}] {where}: {v}" for v in b.axe())
            b.set_theme("dark" if theme == "light" else "light")
            b.figures_rethemed()

    b.expect_console_error(r"status of 400")  # the refused plan, at 1400 px
    b.expect_console_error(r"status of 400")  # and at 400 px
    for width in (1400, 400):
        b.page.set_viewport_size({"width": width, "height": 900})
        for path in pages:
            b.goto(path)
            b.figures_rendered()
            if width == 1400 and path.split("?")[0] in shots:
                b.screenshot(shots[path.split("?")[0]])  # for docs/screenshots
            check(f"[{width}] {path}")
        b.goto("/plans/")
        b.page.fill("#id_text", "   ")
        b.page.click('[data-testid="plan-submit"]')
        b.page.wait_for_load_state()
        check(f"[{width}] /plans/ (refused)")
        b.page.fill("#id_text", WARNED.replace("soon", "10m"))
        b.page.click('[data-testid="plan-submit"]')
        b.page.wait_for_load_state()
        b.figures_rendered()
        check(f"[{width}] /plans/ (planned)")
    assert problems == [], "\n".join(problems)
