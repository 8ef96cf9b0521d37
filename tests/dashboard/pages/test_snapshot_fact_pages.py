"""The pages name YuniKorn's figures and facts as the scheduler does.

allocated (as reported), preempting and remaining per queue, every type kept
while any part of it is held; status, dynamic, max and running applications on
the queue page and in the tree; capacity as reported and what non-YuniKorn pods
occupy per node; gang placeholders flagged on allocations, in victim lists and
explanations. On lab-west (data/cluster-b) and the shared acme-ml answers.
"""

from __future__ import annotations

import html as html_mod
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_answers import rest_files
from rest_framework.test import APIClient

from dashboard import models, services
from dashboard.charts.compact import expand_hover

pytestmark = pytest.mark.django_db

CLUSTER_B = Path(__file__).parents[1] / "data" / "cluster-b" / "rest"
GIB = 2**30


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _figure(page: str, element_id: str) -> dict[str, Any]:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', page, re.S
    )
    assert match is not None, f"no figure {element_id}"
    figure: dict[str, Any] = json.loads(match.group(1))
    # as the page's script draws it: compact hover text joined back
    return expand_hover(figure)


def _limits(page: str) -> dict[str, list[str]]:
    """The queue page's limits table: type -> the cells after it, as text."""
    table = page.split('data-testid="limits-table"', 1)[1].split("</table>", 1)[0]
    head = re.findall(r"<th(?:\s[^>]*)?>(.*?)</th>", table.split("</thead>", 1)[0])
    assert head[:6] == ["type", "guaranteed", "allocated", "preempting", "remaining", "max"]
    out: dict[str, list[str]] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S):
        cells = [html_mod.unescape(c.strip()) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        out[cells[0]] = cells[1:]
    return out


@pytest.fixture
def lab_west(db: None) -> models.ClusterSnapshot:
    return services.import_snapshot(rest_files(CLUSTER_B, events=False), partition="lab-west")


def _queue_page(viewer: Any, snap: models.ClusterSnapshot, path: str) -> str:
    response = _client(viewer).get(
        reverse("queue"),
        {"partition": snap.partition.name, "snapshot": str(snap.pk), "queue": path},
    )
    assert response.status_code == 200
    return response.content.decode()


def test_sandbox_keeps_its_types_with_allocated_preempting_remaining(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    """root.sandbox's only usage is being preempted: each type shows, with 0 remaining."""
    limits = _limits(_queue_page(viewer, lab_west, "root.sandbox"))
    assert set(limits) == {"vcore", "memory", "pods"}
    # guaranteed, allocated, preempting, remaining
    assert limits["vcore"][:4] == ["not defined", "2 cores", "2 cores", "0 cores"]
    assert limits["memory"][:4] == ["not defined", "8 GiB", "8 GiB", "0 B"]
    assert limits["pods"][1:4] == ["1", "1", "0"]
    bars = _client(viewer).get(
        reverse("tree_bars"),
        {"partition": "lab-west", "snapshot": str(lab_west.pk), "queue": "root.sandbox"},
    )
    panels = [t for t in bars.json()["data"] if not t["name"].endswith(" not defined")]
    shown = {p["name"]: dict(zip(p["y"], p["text"], strict=True)) for p in panels}
    vcore, pods = shown["vcore defined"], shown["pods defined"]
    assert (vcore["allocated"], vcore["preempting"], vcore["remaining"]) == (
        "2 cores",
        "2 cores",
        "0 cores",
    )
    assert (pods["allocated"], pods["preempting"], pods["remaining"]) == ("1", "1", "0")


def test_reports_allocated_is_what_yunikorn_reports(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    """root.reports: allocated 14 cores (preempting 2 inside it), 12 remaining."""
    limits = _limits(_queue_page(viewer, lab_west, "root.reports"))
    assert limits["vcore"][1:4] == ["14 cores", "2 cores", "12 cores"]
    assert limits["memory"][1:4] == ["40 GiB", "4 GiB", "36 GiB"]


def test_gpu_held_only_by_a_preempted_allocation_stays_on_acme_ml(
    viewer: Any, fixtures_dir: Path
) -> None:
    """acme-ml root.research.nlp: its one GPU is being preempted; the GPU row stays."""
    snap = services.import_snapshot(rest_files(fixtures_dir / "rest", events=False))
    limits = _limits(_queue_page(viewer, snap, "root.research.nlp"))
    assert limits["nvidia.com/gpu"][1:4] == ["1", "1", "0"]
    assert limits["vcore"][1:4] == ["12 cores", "4 cores", "8 cores"]


def test_queue_status_dynamic_and_applications(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    legacy = _queue_page(viewer, lab_west, "root.legacy")
    assert re.search(r'data-testid="queue-status"[^>]*>Draining<', legacy)
    assert 'data-testid="queue-dynamic"' not in legacy
    team_x = _queue_page(viewer, lab_west, "root.tenants.team-x")
    assert re.search(r'data-testid="queue-status"[^>]*>Active<', team_x)
    assert "dynamic (from a child template)" in team_x
    apps = team_x.split('data-testid="queue-apps">', 1)[1].split("</p>", 1)[0]
    assert apps == "running applications 1 · max applications 2"
    etl = _queue_page(viewer, lab_west, "root.etl")
    apps = etl.split('data-testid="queue-apps">', 1)[1].split("</p>", 1)[0]
    assert apps == "running applications 2 · max applications 3"


def test_tree_labels_and_hover_say_status_and_dynamic(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    page = (
        _client(viewer)
        .get(reverse("tree"), {"partition": "lab-west", "snapshot": str(lab_west.pk)})
        .content.decode()
    )
    trace = _figure(page, "tree-figure")["data"][0]
    by_id = dict(
        zip(trace["ids"], zip(trace["labels"], trace["hovertext"], strict=True), strict=True)
    )
    label, hover = by_id["root.legacy"]
    assert label.endswith("legacy (Draining)")
    assert "status Draining" in hover
    label, hover = by_id["root.tenants.team-x"]
    assert label.endswith("team-x (dynamic)")
    assert "dynamic (from a child template) · running applications 1 of max 2" in hover
    _, hover = by_id["root.sandbox"]
    assert "vcore: allocated 2 cores · preempting 2 cores · remaining 0 cores" in hover
    assert "pods: allocated 1 · preempting 1 · remaining 0" in hover
    assert "running applications 2 of max 3" in by_id["root.etl"][1]
    queue_list = page.split('data-testid="queue-list"', 1)[1].split("</ul>", 1)[0]
    assert re.search(r'data-queue="root.legacy".*?>Draining</span>', queue_list)
    assert re.search(r'data-queue="root.tenants.team-x".*?>dynamic</span>', queue_list)


def test_nodes_show_reported_capacity_and_foreign_pods(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    page = (
        _client(viewer)
        .get(
            reverse("nodes"),
            {"partition": "lab-west", "snapshot": str(lab_west.pk), "node": "node-b"},
        )
        .content.decode()
    )
    table = page.split('data-testid="nodes-table"', 1)[1].split("</table>", 1)[0]
    node_b = table.split("node-b</a>", 1)[1].split("</tr>", 1)[0]
    # capacity as reported 8 cores, 2 of them occupied by prometheus: 6 for YuniKorn
    assert "reported 8 cores" in node_b
    assert "occupied by non-YuniKorn pods 2 cores" in node_b
    assert "/ 6 cores" in node_b
    node_c = table.split("node-c</a>", 1)[1].split("</tr>", 1)[0]
    assert "occupied" not in node_c
    foreign = page.split('data-testid="foreign-pods"', 1)[1].split("</table>", 1)[0]
    assert "monitoring/prometheus-k8s-0" in foreign
    heat = _figure(page, "nodes-figure")["data"][0]
    col = heat["x"].index("node-b")
    assert "occupied by non-YuniKorn pods 2 cores" in heat["hovertext"][0][col]
    assert "capacity as reported 8 cores" in heat["hovertext"][0][col]


def test_queue_page_flags_gang_allocations(viewer: Any, lab_west: models.ClusterSnapshot) -> None:
    page = _queue_page(viewer, lab_west, "root.etl")
    table = page.split('data-testid="allocations"', 1)[1].split("</table>", 1)[0]
    assert table.count("gang placeholder · spark-executor") == 2
    assert table.count("replaced a placeholder · spark-driver") == 1


def test_victims_page_says_which_candidates_are_placeholders(
    viewer: Any, lab_west: models.ClusterSnapshot
) -> None:
    placeholders = set(
        services.snapshot_allocations(lab_west)
        .filter(placeholder=True)
        .values_list("key", flat=True)
    )
    explanation = services.explain_victims(lab_west, "root.etl")
    items = [*explanation["candidates"], *explanation["exclusions"]]  # type: ignore[misc]
    flagged = {i["key"] for i in items if i.get("placeholder")}
    assert flagged == placeholders
    page = (
        _client(viewer)
        .get(
            reverse("victims"),
            {"partition": "lab-west", "snapshot": str(lab_west.pk), "queue": "root.etl"},
        )
        .content.decode()
    )
    assert page.count("gang placeholder · spark-executor") == 2


def _etl_with_lower_guarantee() -> models.ClusterSnapshot:
    """lab-west with root.etl guaranteed 2 cores (not 8): its usage is then above it."""
    files = rest_files(CLUSTER_B, events=False)
    tree = json.loads(files["partition_queues.json"])
    (etl,) = [q for q in tree["children"] if q["queuename"] == "root.etl"]
    etl["guaranteedResource"] = {"vcore": 2000, "memory": 8 * GIB}
    files["partition_queues.json"] = json.dumps(tree).encode()
    return services.import_snapshot(files, partition="lab-west")


def test_quota_run_flags_placeholder_victims(viewer: Any, viewer_client: APIClient) -> None:
    """A quota what-if on root.etl takes the two spark-executor placeholders: said everywhere."""
    snap = _etl_with_lower_guarantee()
    placeholders = set(
        services.snapshot_allocations(snap).filter(placeholder=True).values_list("key", flat=True)
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        snapshot=snap,
        request={"queue": "root.etl", "new_max": {"vcore": 2000}},
        enqueue=False,
    )
    services.execute_run(run.pk)
    run.refresh_from_db()
    victims = list(run.victims.order_by("position").values_list("allocation_key", flat=True))
    assert placeholders <= set(victims)

    api = viewer_client.get(f"/api/runs/{run.pk}/").json()
    flagged = {v["allocation_key"]: v["task_group"] for v in api["victims"] if v["placeholder"]}
    assert flagged == {k: "spark-executor" for k in placeholders}

    for url in (reverse("run", args=[run.pk]), reverse("whatif") + f"?run={run.pk}"):
        page = _client(viewer).get(url).content.decode()
        table = page.split('data-testid="victims-table"', 1)[1].split("</table>", 1)[0]
        assert table.count("gang placeholder · spark-executor") == 2, url
        leaves = page.split('data-testid="leaves-table"', 1)[1].split("</table>", 1)[0]
        assert leaves.count("gang placeholder · spark-executor") == 2, url
        callout = page.split('data-testid="run-gang"', 1)[1].split("</div>", 1)[0]
        for key in placeholders:
            # named by its pod first, its key (whole in the title) second
            said = re.search(
                rf'<span class="alloc-pod">([^<]+)</span> <span class="mono muted alloc-key" '
                rf'title="{key}">{key[:8]}…</span> is a gang placeholder of task group '
                "spark-executor",
                callout,
            )
            assert said is not None, url
            assert said.group(1).startswith("etl/tg-"), url


def test_predicted_enforcement_alert_names_placeholder_victims() -> None:
    """The dashboard's own timer run on root.etl: its alert says which victims are placeholders."""
    snap = _etl_with_lower_guarantee()
    placeholders = sorted(
        services.snapshot_allocations(snap).filter(placeholder=True).values_list("key", flat=True)
    )
    run = services.create_run(
        kind=models.PreemptionRun.Kind.QUOTA_ENFORCEMENT,
        snapshot=snap,
        request={"queue": "root.etl", "new_max": {"vcore": 2000}},
        trigger=models.PreemptionRun.Trigger.TIMER,
        enqueue=False,
    )
    services.execute_run(run.pk)
    (alert,) = models.Alert.objects.filter(run_id=run.pk, message__contains="timer fired")
    listed = ", ".join(f"{k} (task group spark-executor)" for k in placeholders)
    assert f"; gang placeholders among them: {listed}; claimed" in alert.message
