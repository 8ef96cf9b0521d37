"""Pages: the scope in view, unknown things answered with the product's 404, human units."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse

from dashboard import models, services
from dashboard.display import humanize_text

pytestmark = pytest.mark.django_db
T0 = factories.T0


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _other_partition() -> models.ClusterSnapshot:
    snapshot: models.ClusterSnapshot = services.store_snapshot(
        partition_name="gpu",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=T0 + timedelta(hours=1),
        scenario=factories.small_scenario(),
    )
    return snapshot


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize(
    ("path", "params", "says"),
    [
        ("tree", {"partition": "nope"}, "There is no partition named &#x27;nope&#x27;"),
        ("nodes", {"snapshot": "999"}, "There is no snapshot 999"),
        ("history", {"snapshot": "x1"}, "is not a snapshot number"),
        ("queue", {"queue": "root.missing"}, "Queue &#x27;root.missing&#x27; is not in snapshot"),
        ("victims", {"queue": "root.missing"}, "Queue &#x27;root.missing&#x27; is not in snapshot"),
    ],
)
def test_unknown_things_get_a_404_in_the_product_layout(
    viewer: Any,
    snapshot: models.ClusterSnapshot,
    settings: Any,
    debug: bool,
    path: str,
    params: dict[str, str],
    says: str,
) -> None:
    settings.DEBUG = debug
    response = _client(viewer).get(reverse(path), params)
    html = response.content.decode()
    assert response.status_code == 404
    assert 'data-testid="not-found"' in html
    assert says in html
    assert 'class="topbar"' in html  # the product's own layout, with its navigation
    assert "Django" not in html
    assert "technical_404" not in html


def test_unknown_run_and_change_get_the_product_404(viewer: Any, settings: Any) -> None:
    settings.DEBUG = True
    client = _client(viewer)
    for url in (reverse("run", args=[4242]), reverse("change", args=[4242])):
        response = client.get(url)
        assert response.status_code == 404, url
        assert 'data-testid="not-found"' in response.content.decode()


def test_a_snapshot_of_another_partition_is_not_shown_silently(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    other = _other_partition()
    response = _client(viewer).get(
        reverse("tree"), {"partition": "default", "snapshot": str(other.pk)}
    )
    assert response.status_code == 404
    assert f"Snapshot {other.pk} belongs to partition &#x27;gpu&#x27;" in response.content.decode()


def test_a_run_page_shows_the_run_partition_in_the_top_bar_and_links(
    viewer: Any, snapshot: models.ClusterSnapshot
) -> None:
    other = _other_partition()  # the newest snapshot: the default scope is "gpu"
    run = factories.make_run(snapshot)
    html = _client(viewer).get(reverse("run", args=[run.pk]), {"partition": "gpu"}).content.decode()
    assert '<option value="default" selected>' in html
    assert f'<option value="{snapshot.pk}" selected>' in html
    assert (
        f'href="/nodes/?cluster=default&amp;partition=default&amp;snapshot={snapshot.pk}"' in html
    )
    assert "partition=gpu" not in html.split("<main")[0]
    assert other.pk != snapshot.pk


def test_a_change_page_follows_the_change_partition(
    viewer: Any, staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    _other_partition()
    change = services.schedule_quota_change(
        snapshot.partition, "root.b", new_max={"vcore": 1000}, user=staff, now=T0
    )
    html = _client(viewer).get(reverse("change", args=[change.pk])).content.decode()
    assert '<option value="default" selected>' in html


def test_alerts_and_reasons_show_human_units_and_times(viewer: Any) -> None:
    factories.make_alert(
        "root.a: usage memory 176093659136, vcore 44000 rose above the max "
        "{memory: 68719476736, vcore: 16000}; fires at 2026-09-01T10:00:05.123456+00:00"
    )
    html = _client(viewer).get(reverse("alerts")).content.decode()
    assert (
        "usage memory 164 GiB, vcore 44 cores rose above the max memory 64 GiB, vcore 16 cores"
        in html
    )
    assert "fires at 2026-09-01 10:00:05 UTC" in html
    assert "176093659136" not in html
    assert "123456" not in html


def test_humanize_leaves_plain_numbers_and_human_text_alone() -> None:
    text = "change 12 of root.a in snapshot 3: memory 1.5 GiB, nvidia.com/gpu 2, vcore 2 cores"
    assert humanize_text(text) == text
    assert humanize_text("{nvidia.com/gpu: 1, vcore: 500}") == "nvidia.com/gpu 1, vcore 0.5 cores"


def test_config_diff_does_not_credit_page_changes_to_the_config(
    viewer: Any, staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    config = (
        "partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n"
        "          - name: a\n            resources: {max: {vcore: 8}}\n"
        "          - name: b\n            resources: {max: {vcore: 8}}\n"
    )
    v1 = services.import_config(config.encode(), filename="q.yaml", user=staff, now=T0).versions[0]
    v2_text = config.replace(
        "max: {vcore: 8}}\n          - name: b", "max: {vcore: 6}}\n          - name: b"
    )
    v2 = services.import_config(
        v2_text.encode(), filename="q.yaml", user=staff, now=T0 + timedelta(minutes=1)
    ).versions[0]
    page_change = services.schedule_quota_change(
        v2.partition, "root.b", new_max={"vcore": 4000}, user=staff, now=T0 + timedelta(minutes=5)
    )
    html = _client(viewer).get(reverse("config_diff"), {"a": v1.pk, "b": v2.pk}).content.decode()
    scheduled, later = html.split('data-testid="later-changes"')
    assert f">#{page_change.pk}</a>" not in scheduled
    assert f">#{page_change.pk}</a>" in later
    assert "root.a" in scheduled


def _alert(partition: models.Partition | None, message: str, *, read: bool = False) -> None:
    models.Alert.objects.create(
        kind=models.Alert.Kind.IMPORT_WARNING,
        message=message,
        partition=partition,
        created_at=T0,
        last_seen_at=T0,
        acknowledged_at=T0 if read else None,
    )


def test_the_header_badge_counts_what_the_feed_lists(viewer: Any) -> None:
    """Two clusters with a partition ``default`` each: the badge counts every unread
    alert, as the feed it leads to lists every cluster's (issue 38); its title says how
    many concern the cluster in view (its own and those of no cluster)."""
    made = {}
    for name in ("acme", "lab"):
        made[name] = services.store_snapshot(
            partition_name="default",
            cluster_name=name,
            source_kind=models.ClusterSnapshot.Source.SCENARIO,
            captured_at=T0,
            scenario=factories.small_scenario(),
        ).partition
    for i in range(3):
        _alert(made["acme"], f"acme {i}")
    _alert(made["lab"], "lab unread")
    _alert(made["lab"], "lab read", read=True)
    _alert(None, "an import refused before it named a cluster")
    client = _client(viewer)
    feed = client.get(reverse("alerts"), {"show": "unread"}).content.decode()
    listed = feed.count('data-alert-id="')
    for name, here in (("acme", 4), ("lab", 2)):
        html = client.get(reverse("history"), {"cluster": name, "partition": "default"}).content
        assert (
            f'data-testid="unread-count" title="5 unread in every cluster, {here} of them in '
            f'cluster {name} or of no cluster">5<'
        ) in html.decode()
    assert listed == 5
