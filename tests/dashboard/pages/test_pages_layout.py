"""Pages: the configured tree without state, state marks, the queue list, skip link, charts."""

from __future__ import annotations

import json
import re
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.charts.nodes import node_heatmap_figure
from dashboard.charts.runs import history_timeline_figure
from dashboard.charts.values import NodeRow

pytestmark = pytest.mark.django_db
CONFIG = (
    "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
    "          - name: a\n            resources: {max: {vcore: 8}}\n"
    "          - name: " + "very-long-team-name-" * 3 + "end\n"
)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _figure(html: str, element_id: str) -> dict[str, Any]:
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S
    )
    assert match is not None
    figure: dict[str, Any] = json.loads(match.group(1))
    return figure


def test_a_config_without_snapshot_shows_the_configured_tree(viewer: Any, staff: Any) -> None:
    services.import_config(CONFIG.encode(), filename="q.yaml", user=staff, now=factories.T0)
    assert not models.ClusterSnapshot.objects.exists()
    response = _client(viewer).get(reverse("tree"))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'data-testid="no-state"' in html
    assert "No cluster state yet." in html
    ids = _figure(html, "tree-figure")["data"][0]["ids"]
    assert "root.a" in ids
    assert "data-bars-url" not in html  # no per-queue state to fetch


def test_long_queue_names_are_shortened_in_the_icicle_and_whole_in_the_list(
    viewer: Any, staff: Any
) -> None:
    services.import_config(CONFIG.encode(), filename="q.yaml", user=staff, now=factories.T0)
    html = _client(viewer).get(reverse("tree")).content.decode()
    long_name = "very-long-team-name-" * 3 + "end"
    labels = _figure(html, "tree-figure")["data"][0]["labels"]
    assert all(len(label) <= 30 for label in labels)
    assert any("…" in label for label in labels)
    assert f'<span class="queue-name mono">{long_name}</span>' in html  # the list: whole


def test_queue_state_is_told_by_a_mark_and_text_not_colour_alone(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    scenario = factories.small_scenario()
    scenario["queues"]["children"][0]["max"] = {"vcore": 8000}  # root.a at its max
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    html = _client(viewer).get(reverse("tree")).content.decode()
    figure = _figure(html, "tree-figure")["data"][0]
    label = figure["labels"][figure["ids"].index("root.a")]
    assert label == "■ a"
    assert re.search(
        r'data-queue="root.a"[^>]*>.*?■.*?<span class="visually-hidden">, at max</span>', html
    )
    assert 'class="queue-list"' in html


def test_every_page_has_a_skip_link_to_main(viewer: Any, snapshot: models.ClusterSnapshot) -> None:
    client = _client(viewer)
    for name in ("tree", "nodes", "history", "alerts", "changes", "configs"):
        html = client.get(reverse(name)).content.decode()
        assert '<a class="skip-link" href="#main">Skip to content</a>' in html, name
        assert '<main id="main"' in html, name


def test_the_queue_list_links_are_drill_down_urls(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    html = _client(viewer).get(reverse("tree")).content.decode()
    assert (
        f'href="/queues/?cluster=default&amp;partition=default&amp;snapshot={snapshot.pk}&amp;queue=root.a.x"'
        in html
    )


def test_empty_history_timeline_has_no_date_axis() -> None:
    figure = history_timeline_figure([])
    layout = figure["layout"]
    assert isinstance(layout, dict)
    assert layout["xaxis"] == {"visible": False}
    assert "No runs match" in json.dumps(layout["annotations"])


def test_heatmap_type_labels_get_their_room() -> None:
    rows = [NodeRow(id="n1", capacity={"ephemeral-storage": 10, "vcore": 1000})]
    layout = node_heatmap_figure(rows)["layout"]
    assert isinstance(layout, dict)
    assert layout["yaxis"]["automargin"] is True
