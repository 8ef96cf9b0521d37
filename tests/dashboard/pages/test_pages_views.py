"""Pages with Django's test client: content, deep links, escaping, what-if, imports, CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import factories
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from dashboard import models, services
from dashboard.charts.compact import expand_hover

pytestmark = pytest.mark.django_db
T0 = factories.T0


EVIL = "<img src=x onerror=alert(1)>"
EVIL_APP = "<script>alert(2)</script>"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _evil_snapshot() -> models.ClusterSnapshot:
    """A snapshot whose queue, app and node names are HTML and script text."""
    scenario = factories.small_scenario()
    scenario["queues"]["children"].append({"name": EVIL, "guaranteed": {"vcore": 1000}})
    scenario["nodes"].append({"id": f"node-{EVIL}", "capacity": {"vcore": 4000}})
    scenario["allocations"].append(
        {
            "key": f"alloc-{EVIL}",
            "app": EVIL_APP,
            "queue": f"root.{EVIL}",
            "node": f"node-{EVIL}",
            "resources": {"vcore": 2000},
        }
    )
    return _store(scenario)


def _store(scenario: dict[str, Any], captured_at: datetime = T0) -> models.ClusterSnapshot:
    return services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=captured_at,
        scenario=scenario,
    )


def _figure(html: str, element_id: str) -> dict[str, Any]:
    """The figure JSON a page embeds with json_script under *element_id*."""
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert match is not None, f"no figure {element_id}"
    figure: dict[str, Any] = json.loads(match.group(1))
    # as the page's script draws it: compact hover text joined back
    return expand_hover(figure)


# --------------------------------------------------------------------------- escaping


def test_queue_names_are_escaped_in_pages(viewer: Any) -> None:
    """HTML in queue, app and node names shows as text: escaped in the HTML, never raw."""
    snapshot = _evil_snapshot()
    client = _client(viewer)
    pages = [
        client.get(reverse("tree"), {"queue": f"root.{EVIL}"}),
        client.get(reverse("queue"), {"queue": f"root.{EVIL}"}),
        client.get(reverse("nodes"), {"node": f"node-{EVIL}"}),
        client.get(reverse("victims"), {"queue": f"root.{EVIL}"}),
    ]
    for response in pages:
        assert response.status_code == 200
        html = response.content.decode()
        assert EVIL not in html
        assert EVIL_APP not in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in pages[1].content.decode()
    assert snapshot.queues.filter(path=f"root.{EVIL}").exists()


def test_queue_names_are_escaped_in_figures(viewer: Any) -> None:
    """The embedded figures carry names HTML-escaped for Plotly's labels and hover text."""
    _evil_snapshot()
    html = _client(viewer).get(reverse("tree")).content.decode()
    tree = _figure(html, "tree-figure")["data"][0]
    index = tree["ids"].index(f"root.{EVIL}")
    # the state mark (above guaranteed) precedes the escaped name
    assert tree["labels"][index] == "▲ &lt;img src=x onerror=alert(1)&gt;"
    assert "<b>root.&lt;img src=x onerror=alert(1)&gt;</b>" in tree["hovertext"][index]
    # sent compact: the tree's hover text travels as distinct pieces, joined by the script
    sent = json.loads(
        html.split('<script id="tree-figure" type="application/json">')[1].split("</script>")[0]
    )
    assert "hovertext" not in sent["data"][0]
    assert "<b>root.&lt;img src=x onerror=alert(1)&gt;</b>" in sent["compactHover"]["parts"]
    nodes_html = _client(viewer).get(reverse("nodes")).content.decode()
    heat = _figure(nodes_html, "nodes-figure")["data"][0]
    assert "node-&lt;img src=x onerror=alert(1)&gt;" in heat["x"]


def test_bars_json_is_escaped(viewer: Any) -> None:
    """The bars fetched for a clicked queue are JSON with an escaped title."""
    _evil_snapshot()
    response = _client(viewer).get(reverse("tree_bars"), {"queue": f"root.{EVIL}"})
    assert response["Content-Type"] == "application/json"
    figure = response.json()
    assert figure["layout"]["title"]["text"] == "root.&lt;img src=x onerror=alert(1)&gt;"
    assert _client(viewer).get(reverse("tree_bars"), {"queue": "root.nope"}).status_code == 404


# --------------------------------------------------------------------------- layout and scope


def test_navigation_shows_user_scope_and_unread_count(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Every page names the user, the partition and snapshot with its age, and unread alerts."""
    factories.make_alert()
    factories.make_alert()
    html = _client(staff).get(reverse("history")).content.decode()
    assert f">{staff.username} <span" in html or staff.username in html
    assert 'data-testid="unread-count"' in html
    assert re.search(r'data-testid="unread-count"[^>]*>2<', html)
    assert f'value="{snapshot.pk}" selected' in html
    assert 'data-testid="snapshot-age"' in html
    # its age, counted from when it was captured
    assert re.search(r'data-testid="snapshot-age"[^>]*>\s*captured [^<]+ ago', html)


def test_deep_link_selects_partition_snapshot_and_queue(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    """?partition=&snapshot=&queue=&type= are honoured and kept in the page's links."""
    newer = _store(factories.small_scenario(), captured_at=T0.replace(hour=11))
    client = _client(viewer)
    html = client.get(
        reverse("tree"),
        {"partition": "default", "snapshot": str(snapshot.pk), "queue": "root.a", "type": "vcore"},
    ).content.decode()
    assert f'value="{snapshot.pk}" selected' in html
    assert "not the newest" in html
    tree = _figure(html, "tree-figure")["data"][0]
    assert tree["level"] == "root.a"
    assert f"snapshot={snapshot.pk}" in html
    default = client.get(reverse("tree")).content.decode()
    assert f'value="{newer.pk}" selected' in default


def test_unknown_queue_is_404(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    assert _client(viewer).get(reverse("queue"), {"queue": "root.nope"}).status_code == 404


def test_empty_database_invites_an_import(staff: Any) -> None:
    html = _client(staff).get(reverse("tree")).content.decode()
    assert "No cluster snapshot yet" in html
    assert reverse("import") in html


# --------------------------------------------------------------------------- queue and nodes


def test_queue_page_lists_allocations_sorted_and_filtered(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Allocations of the queue and below, sortable both ways and filterable."""
    client = _client(viewer)
    html = client.get(reverse("queue"), {"queue": "root.a", "sort": "created", "dir": "desc"})
    keys = re.findall(r'<span class="mono alloc-key">(k\d)</span>', html.content.decode())
    assert keys == [f"k{i}" for i in range(7, -1, -1)]
    ascending = client.get(reverse("queue"), {"queue": "root.a", "sort": "created"})
    assert (
        re.findall(r'<span class="mono alloc-key">(k\d)</span>', ascending.content.decode())[0]
        == "k0"
    )
    only_x = client.get(reverse("queue"), {"queue": "root.a.x", "q": "k3"}).content.decode()
    assert re.findall(r'<span class="mono alloc-key">(k\d)</span>', only_x) == ["k3"]


def test_queue_page_shows_limits_in_human_units(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    html = _client(viewer).get(reverse("queue"), {"queue": "root.a"}).content.decode()
    assert "2 cores" in html  # guaranteed
    assert "8 cores" in html  # allocated
    assert "not defined" in html  # max
    figure = _figure(html, "usage-figure")
    assert [d["name"] for d in figure["data"][:2]] == ["allocated", "remaining"]


def test_nodes_page_lists_allocations_on_a_node(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    html = _client(viewer).get(reverse("nodes"), {"node": "n1"}).content.decode()
    assert 'data-testid="node-allocations"' in html
    assert html.count('<span class="mono alloc-key">k') == 8
    heat = _figure(html, "nodes-figure")
    assert heat["data"][0]["z"] == [[80.0]]


# --------------------------------------------------------------------------- what-if and changes


def test_whatif_preempt_for_a_pending_ask(
    staff: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """A what-if for a pending ask records a run and shows the engine's answer."""
    client = _client(staff)
    with django_capture_on_commit_callbacks(execute=True):  # the task is sent on commit
        response = client.post(reverse("whatif"), {"kind": "preempt", "ask_key": "ask-1"})
    assert response.status_code == 302
    run = models.PreemptionRun.objects.get()
    assert f"run={run.pk}" in response["Location"]
    html = client.get(response["Location"]).content.decode()
    run.refresh_from_db()
    assert run.status == models.PreemptionRun.Status.DONE
    assert f"{run.outcome.replace('_', ' ')}" in html
    assert 'data-testid="run-tree-figure"' in html


def test_whatif_typed_ask_with_bad_quantity(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """A typed ask with a malformed quantity is refused with the field's error, no run."""
    response = _client(staff).post(
        reverse("whatif"), {"kind": "preempt", "queue": "root.b", "res__vcore": "1.5"}
    )
    assert response.status_code == 200
    assert "decimals are not allowed" in response.content.decode()
    assert not models.PreemptionRun.objects.exists()


def test_whatif_quota_plan_then_schedule(
    staff: Any, snapshot: models.ClusterSnapshot, django_capture_on_commit_callbacks: Any
) -> None:
    """Queue + lower max shows the plan (target, leaves, victims) and can be scheduled."""
    client = _client(staff)
    models.Partition.objects.update(timer_rules="seed")  # a max newly set: seed starts a timer
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("whatif"), {"kind": "quota", "queue": "root.a", "max__vcore": "4"}
        )
    run = models.PreemptionRun.objects.get()
    html = client.get(response["Location"]).content.decode()
    assert 'data-testid="leaves-table"' in html
    assert "root.a.x" in html
    assert "4 cores" in html  # the target: 8 used - 4
    assert 'data-testid="schedule-it"' in html
    assert run.target == {"vcore": 4000}
    scheduled = client.post(
        reverse("change_create") + f"?snapshot={snapshot.pk}",
        {"queue": "root.a", "max__vcore": "4"},
    )
    assert scheduled.status_code == 302
    change = models.QuotaChange.objects.get()
    assert change.state == models.QuotaChange.State.WAITING
    assert change.new_max == {"vcore": 4000}
    listing = client.get(reverse("changes")).content.decode()
    assert f'data-deadline="{change.deadline.isoformat()}"' in listing  # type: ignore[union-attr]
    assert "data-live-active" in listing


def test_whatif_answer_lists_the_first_victims_and_counts_them_all(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    """A what-if with hundreds of victims lists the first ones; the run's page has them all."""
    run = factories.make_run(
        snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        queue="root.a",
        request={"queue": "root.a", "new_max": {"vcore": 1000}},
        result={"victims": []},
    )
    models.RunVictim.objects.bulk_create(
        models.RunVictim(
            run=run, position=i, allocation_key=f"victim-{i:03d}", queue="root.a.x", node="n1"
        )
        for i in range(130)
    )
    client = _client(viewer)
    html = client.get(reverse("whatif") + f"?snapshot={snapshot.pk}&run={run.pk}").content.decode()
    table = html.split('data-testid="victims-table"', 1)[1].split("</table>", 1)[0]
    assert table.count('<tr class="highlight">') == 100
    assert "victim-099" in table
    assert "victim-100" not in table
    assert '<div class="value">130</div>' in html  # the count is of them all
    more = html.split('data-testid="victims-more">', 1)[1].split("</p>", 1)[0]
    assert "The first 100 of 130 victims" in more
    assert reverse("run", args=[run.pk]) in more
    page = client.get(reverse("run", args=[run.pk])).content.decode()
    assert page.count('<tr class="highlight">') == 130
    assert 'data-testid="victims-more"' not in page


def test_schedule_bad_delay_names_the_problem(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    client = _client(staff)
    response = client.post(
        reverse("change_create"), {"queue": "root.a", "delay": "7200"}, follow=True
    )
    assert "missing unit" in response.content.decode()
    assert not models.QuotaChange.objects.exists()


# --------------------------------------------------------------------------- history


def test_history_filters_timeline_and_csv(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    """The table and the CSV follow the filters; user text in CSV cannot start a formula."""
    factories.make_run(snapshot, outcome="preempted", queue="root.b")
    factories.make_run(
        snapshot=snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        outcome="does_not_help",
        queue="root.a",
        request={"queue": "root.a", "new_max": {"vcore": 1}},
        alerts=["=HYPERLINK(1)"],
    )
    client = _client(viewer)
    html = client.get(reverse("history"), {"outcome": "does_not_help"}).content.decode()
    assert html.count('<td><a href="/runs/') == 1
    timeline = _figure(html, "timeline-figure")
    assert [t["name"] for t in timeline["data"]] == ["what-if: would not help"]
    response = client.get(reverse("history_csv"), {"queue": "root.a"})
    body = b"".join(cast(Iterable[bytes], response.streaming_content))  # type: ignore[attr-defined]  # a StreamingHttpResponse
    rows = list(csv.reader(io.StringIO(body.decode())))
    assert rows[0][:3] == ["id", "partition", "snapshot"]
    assert len(rows) == 2
    assert rows[1][rows[0].index("outcome")] == "does_not_help"
    assert rows[1][rows[0].index("alerts")] == "'=HYPERLINK(1)"


def test_run_page_shows_victims_and_plan(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snapshot,
        request={"queue": "root.a", "new_max": {"vcore": 4000}},
        enqueue=False,
    )
    services.execute_run(run.pk)
    html = _client(staff).get(reverse("run", args=[run.pk])).content.decode()
    run.refresh_from_db()
    assert 'data-testid="victims-table"' in html
    for victim in run.victims.all():
        assert victim.allocation_key in html
    assert 'data-testid="plan-figure"' in html
    assert "data-live-active" not in html


def test_pending_run_page_refreshes(staff: Any, snapshot: models.ClusterSnapshot) -> None:
    """A queued run shows progress and marks the page for live refresh."""
    run = factories.make_run(snapshot, status=models.PreemptionRun.Status.PENDING, outcome="")
    html = _client(staff).get(reverse("run", args=[run.pk])).content.decode()
    assert 'data-testid="run-progress"' in html
    assert "data-live-active" in html


# --------------------------------------------------------------------------- alerts


def test_alerts_feed_and_acknowledge(staff: Any) -> None:
    first = factories.make_alert(message="preemption does not help in root.a")
    factories.make_alert(message="best effort in root.b")
    client = _client(staff)
    ack_all = f'action="{reverse("alert_ack_all")}"'
    html = client.get(reverse("alerts")).content.decode()
    assert "preemption does not help in root.a" in html
    assert html.count('data-testid="ack"') == 2
    assert '<span data-testid="alerts-unread-total">2</span> unread' in html
    assert ack_all in html
    client.post(reverse("alert_ack", args=[first.pk]))
    unread = client.get(reverse("alerts"), {"show": "unread"}).content.decode()
    assert "preemption does not help in root.a" not in unread
    assert "best effort in root.b" in unread
    assert '<span data-testid="alerts-unread-total">1</span> unread' in unread
    client.post(reverse("alert_ack_all"))
    assert not models.Alert.objects.filter(acknowledged_at__isnull=True).exists()
    after = client.get(reverse("alerts")).content.decode()
    assert '<span data-testid="alerts-unread-total">0</span> unread' in after
    assert ack_all not in after  # nothing left to acknowledge: no button


# --------------------------------------------------------------------------- imports and configs


def _upload(path: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes())


def test_import_configs_and_rest_snapshot(staff: Any, fixtures_dir: Path) -> None:
    """The upload page imports two config versions and the REST files; the diff reads well."""
    client = _client(staff)
    for name in ("queues-nested-gpu-previous.yaml", "queues-nested-gpu.yaml"):
        response = client.post(
            reverse("import"), {"kind": "config", "upload": _upload(fixtures_dir / "config" / name)}
        )
        assert response.status_code == 302, response.content.decode()[:500]
    rest = [_upload(p) for p in sorted((fixtures_dir / "rest").glob("partition_*.json"))]
    response = client.post(reverse("import"), {"kind": "snapshot", "upload": rest})
    assert response.status_code == 302
    snapshot = models.ClusterSnapshot.objects.get()
    assert f"snapshot={snapshot.pk}" in response["Location"]
    old, new = models.ConfigVersion.objects.order_by("number")
    html = client.get(reverse("config_diff"), {"a": old.pk, "b": new.pk}).content.decode()
    assert "root.batch" in html
    assert "decrease" in html
    assert 'data-testid="text-diff"' in html
    tree = client.get(response["Location"]).content.decode()
    assert "root.production.training" in _figure(tree, "tree-figure")["data"][0]["ids"]


def test_bad_import_is_refused_and_alerted(staff: Any, fixtures_dir: Path) -> None:
    """A refused file gets a 400 naming the problem, stores nothing, and raises an alert."""
    bad = fixtures_dir / "config" / "invalid" / "quota-delay-under-resources.yaml"
    response = _client(staff).post(reverse("import"), {"kind": "config", "upload": _upload(bad)})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-testid="import-error"' in html
    assert "quota.preemption.delay" in html
    assert not models.ConfigVersion.objects.exists()
    assert models.Alert.objects.filter(kind=models.Alert.Kind.IMPORT_FAILED).count() == 1


def test_oversized_upload_is_413(staff: Any, settings: Any) -> None:
    settings.DASHBOARD_MAX_UPLOAD_BYTES = 10
    response = _client(staff).post(
        reverse("import"),
        {"kind": "snapshot", "upload": SimpleUploadedFile("big.json", b"{" + b" " * 100 + b"}")},
    )
    assert response.status_code == 413
    assert "DASHBOARD_MAX_UPLOAD_BYTES" in response.content.decode()
    assert not models.ClusterSnapshot.objects.exists()


def test_bars_show_the_engines_preemptable(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    """root.a: used 8 cores, guaranteed 2 -> 6 cores preemptable (the engine's answer)."""
    figure = _client(viewer).get(reverse("tree_bars"), {"queue": "root.a"}).json()
    defined = figure["data"][0]
    assert dict(zip(defined["y"], defined["text"], strict=True)) == {
        "guaranteed": "2 cores",
        "allocated": "8 cores",
        "remaining": "8 cores",
        "preemptable": "6 cores",
    }
    assert figure["data"][1]["y"] == ["max"]  # root.a has no max: the hatched "not defined"


PAGES_BY_QUERY_COUNT = ("tree", "queue", "nodes", "history", "alerts", "changes")


def _page_queries(client: Client) -> dict[str, int]:
    """How many SQL queries each page costs (after a warm-up request for the caches)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out: dict[str, int] = {}
    for name in PAGES_BY_QUERY_COUNT:
        url = reverse(name) + ("?queue=root.a" if name == "queue" else "")
        assert client.get(url).status_code == 200
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        out[name] = len(captured.captured_queries)
    return out


def test_page_queries_do_not_grow_with_queues_history_or_alerts(staff: Any) -> None:
    """No page runs a query per queue, snapshot, change, run or alert it shows."""
    client = _client(staff)
    scenario = factories.small_scenario()
    a_children = scenario["queues"]["children"][0]["children"]
    a_children.extend({"name": f"extra{i}", "max": {"vcore": 4000}} for i in range(6))
    latest = _store(scenario)

    def add_history(i: int) -> None:  # one waiting change, what-if run and alert
        services.schedule_quota_change(
            latest.partition, f"root.a.extra{i}", new_max={"vcore": 1000 + i}, user=staff
        )
        factories.make_run(latest, queue=f"root.a.extra{i}")
        factories.make_alert(f"alert {i}")

    add_history(0)
    small = _page_queries(client)

    a_children.extend({"name": f"more{i}", "max": {"vcore": 4000}} for i in range(30))
    for i in range(6):
        latest = _store(scenario, captured_at=T0.replace(minute=i + 1))
    for i in range(1, 6):
        add_history(i)
    large = _page_queries(client)

    assert large == small, (small, large)
    # and the numbers themselves stay small (session, user, scope, then the page's own)
    assert max(small.values()) <= 18, small


def test_run_page_says_why_each_preempt_victim_is_needed(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """A preempt what-if: the victims table says what each victim frees on the node and under
    which queue's max (ask-1 needs 3 cores on n1, which has 2 free; root's max is n1's 10)."""
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_PREEMPT,
        snapshot=snapshot,
        request={"ask_key": "ask-1"},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert [v.allocation_key for v in run.victims.order_by("position")] == ["k7"]
    for page in ("run", "whatif"):
        if page == "run":
            response = _client(staff).get(reverse("run", args=[run.pk]))
        else:
            response = _client(staff).get(reverse("whatif"), {"run": run.pk})
        html = response.content.decode()
        assert "<th>needed because</th>" in html
        cells = re.findall(r'<td class="small" data-testid="victim-needed">(.*?)</td>', html)
        assert cells == [
            "frees vcore 1 core on node n1, which lacked vcore 1 core for the ask; frees vcore "
            "1 core in root, where the ask would exceed the max vcore 10 cores by vcore 1 core"
        ]


def test_run_page_explains_round_victims_and_escapes_queue_names(staff: Any) -> None:
    """A round: the victim is explained against the state its ask saw, naming the queue
    whose max it frees, and a queue name made of HTML shows as text."""
    scenario = factories.small_scenario()
    scenario["queues"]["children"].append(
        {
            "name": EVIL,
            "max": {"vcore": 1000},
            "children": [{"name": "in", "guaranteed": {"vcore": 1000}}, {"name": "out"}],
        }
    )
    scenario["nodes"].append({"id": "n2", "capacity": {"vcore": 2000}})
    scenario["allocations"].append(
        {"key": "e1", "queue": f"root.{EVIL}.out", "node": "n2", "resources": {"vcore": 1000}}
    )
    snapshot = services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0,
        scenario=scenario,
        asks=[
            # placed first on n1's 2 free cores; then ask-2 needs room under the evil max
            {"key": "ask-1", "queue": "root.b", "resources": {"vcore": 2000}, "priority": 5},
            {"key": "ask-2", "queue": f"root.{EVIL}.in", "resources": {"vcore": 1000}},
        ],
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.ROUND, snapshot=snapshot, request={}, enqueue=False
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    assert isinstance(run.result, dict)
    assert [(r["ask"], r["status"]) for r in run.result["results"]] == [
        ("ask-1", "fits"),
        ("ask-2", "preempted"),
    ]
    assert [(v.allocation_key, v.ask) for v in run.victims.all()] == [("e1", "ask-2")]
    html = _client(staff).get(reverse("run", args=[run.pk])).content.decode()
    cells = re.findall(r'<td class="small" data-testid="victim-needed">(.*?)</td>', html)
    assert cells == [
        f"frees vcore 1 core in root.{escape(EVIL)}, where the ask would exceed the max "
        "vcore 1 core by vcore 1 core"
    ]
    table = html.split('data-testid="victims-table"')[1].split("</table>")[0]
    assert EVIL not in table
