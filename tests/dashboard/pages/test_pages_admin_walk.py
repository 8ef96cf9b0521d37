"""The pages' third pass (issue 28): an administrator's walk with two clusters, with
Django's test client where the defect is on the server."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import factories
import pytest
from django.test import Client
from django.urls import reverse
from two_clusters import LAB_WEST

from dashboard import models, services

pytestmark = pytest.mark.django_db


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _partition(cluster: str) -> models.Partition:
    owner = models.Cluster.objects.create(name=cluster)
    return models.Partition.objects.create(cluster=owner, name="default")


# --------------------------------------------------------------------------- point 1


def test_acknowledge_all_on_a_filtered_feed_keeps_the_other_clusters_unread(staff: Any) -> None:
    """ "Acknowledge all" on the feed filtered to one cluster acknowledges that cluster's
    alerts only, and the feed's unread count is the filtered feed's."""
    west, east = _partition("lab-west"), _partition("acme-ml")
    for part, n in ((west, 2), (east, 3)):
        for i in range(n):
            alert = factories.make_alert(message=f"{part.cluster.name} alert {i}")
            alert.partition = part
            alert.save()
    client = _client(staff)
    html = client.get(reverse("alerts"), {"from_cluster": "lab-west"}).content.decode()
    assert '<span data-testid="alerts-unread-total">2</span> unread in lab-west' in html
    assert 'name="from_cluster" value="lab-west"' in html  # the button posts the filter
    client.post(reverse("alert_ack_all"), {"from_cluster": "lab-west", "kind": ""})
    unread = models.Alert.objects.filter(acknowledged_at__isnull=True)
    assert sorted(unread.values_list("partition__cluster__name", flat=True)) == ["acme-ml"] * 3
    everything = client.get(reverse("alerts")).content.decode()
    assert '<span data-testid="alerts-unread-total">3</span> unread.' in everything


# --------------------------------------------------------------------------- point 2


def _lab_west() -> models.Partition:
    """lab-west's config (root.etl: max vcore = guaranteed vcore, a 10m delay)."""
    services.import_config(
        (LAB_WEST / "config" / "queues.yaml").read_bytes(),
        filename="queues.yaml",
        cluster="lab-west",
    )
    return models.Partition.objects.get(cluster__name="lab-west")


def test_a_refused_schedule_form_comes_back_filled_in_and_in_the_pages_words(
    staff: Any,
) -> None:
    """The changes page's form refused by the service keeps its queue, max and delay,
    and its message names the type changed, in the pages' units, without field names."""
    part = _lab_west()
    client = _client(staff)
    url = reverse("change_create") + "?cluster=lab-west&partition=default"
    post = {
        "queue": "root.etl",
        "max__vcore": "8",
        "max__memory": "32Gi",
        "delay": "20m",
    }
    response = client.post(url, post)
    assert response.status_code == 200
    html = response.content.decode()
    errors = re.search(r'data-testid="schedule-errors">(.*?)</ul>', html, re.S)
    assert errors is not None, html
    text = errors.group(1)
    assert "the max of memory, 32 GiB, must be greater than its guarantee of 32 GiB" in text
    assert "new_max" not in text
    assert "vcore" not in text  # vcore stays at its max in force: not the administrator's
    assert 'value="root.etl"' in html
    assert 'value="32Gi"' in html
    assert 'value="20m"' in html
    assert not models.QuotaChange.objects.filter(partition=part).exists()


def test_a_type_left_at_its_max_in_force_is_not_refused(staff: Any) -> None:
    """root.etl's vcore max equals its guarantee in the cluster's own config; raising only
    its memory max is accepted (the design's rule is for a max the change lowers)."""
    part = _lab_west()
    change = services.schedule_quota_change(
        part, "root.etl", new_max={"vcore": 8000, "memory": 40 * 2**30}
    )
    assert change.new_max == {"vcore": 8000, "memory": 40 * 2**30}


# --------------------------------------------------------------------------- points 4 and 5


def test_after_a_plan_post_the_page_stays_on_the_cluster_planned(staff: Any) -> None:
    """A POST on the plan page keeps the top bar, the form's URL and the summary on the
    cluster and partition planned, not the first cluster's."""
    _partition("acme-ml")  # first by name: the fallback the page must not show
    _lab_west()
    text = (
        (LAB_WEST / "config" / "queues.yaml")
        .read_text()
        .replace("max: {vcore: 8, memory: 48Gi}", "max: {vcore: 8, memory: 40Gi}")
    )
    response = _client(staff).post(
        reverse("plan"), {"partition": "lab-west/default", "text": text, "action": "plan"}
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert '<option value="lab-west" selected>' in html
    assert 'action="/plans/?cluster=lab-west&amp;partition=default"' in html
    assert 'data-testid="plan-where">lab-west/default</strong>' in html


def test_the_plans_hand_back_has_lf_line_ends_whatever_the_browser_sent(staff: Any) -> None:
    """A browser's form sends the config with CRLF; the queues.yaml, ConfigMap and kubectl
    patch handed back have LF line ends."""
    _lab_west()
    text = (LAB_WEST / "config" / "queues.yaml").read_text().replace("\n", "\r\n")
    response = _client(staff).post(
        reverse("plan"), {"partition": "lab-west/default", "text": text, "action": "handback"}
    )
    html = response.content.decode()
    assert 'data-testid="handback-configmap"' in html
    handback = services.planned_config_handback(text, partition="default", cluster="lab-west")
    for part in (handback.queues_yaml, handback.configmap, handback.kubectl_patch):
        assert "\r" not in part
    assert "\r" not in html[html.index("handback") :]


# --------------------------------------------------------------------------- point 7


def test_an_ask_over_its_queues_max_is_headlined_as_not_enough_queue_quota(
    staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Where the binding limit is the ask queue's max, the headline says so in the
    scheduler's words, not that the queue cannot stay within its guarantee."""
    scenario = factories.small_scenario()
    scenario["queues"]["children"][0]["max"] = {"vcore": 8000}  # root.a uses exactly 8 cores
    services.store_snapshot(
        partition_name="default",
        source_kind=models.ClusterSnapshot.Source.SCENARIO,
        captured_at=factories.T0,
        scenario=scenario,
    )
    client = _client(staff)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("whatif"),
            {
                "kind": "preempt",
                "ask_key": "",
                "queue": "root.a.x",
                "res__vcore": "1",
                "allow_preempt_other": "on",
            },
        )
    html = client.get(response["Location"]).content.decode()
    match = re.search(r'data-testid="run-reason">(.*?)</div>', html, re.S)
    assert match is not None
    headline = re.sub(r"<[^>]+>", "", match.group(1))
    assert headline.startswith(
        "Why not: not enough queue quota: vcore in queue root.a: 8 cores used + 1 core"
    ), headline
    # root.a.x has no guarantee: no engine rule about staying within one (issue 38)
    assert "guarantee" not in headline, headline


# --------------------------------------------------------------------------- point 12


def test_the_csv_gives_each_resource_type_a_column_in_the_pages_units(
    staff: Any, snapshot: models.ClusterSnapshot
) -> None:
    """Target and claimed: in words as the pages say them, and one numeric column per type
    in cores and GiB (both CSV exports); the API's JSON keeps millicores and bytes."""
    factories.PreemptionRunFactory.create(
        snapshot=snapshot,
        kind=models.PreemptionRun.Kind.WHATIF_QUOTA,
        target={"vcore": 2500, "memory": 3 * 2**29},
        claimed={"vcore": 2000},
        outcome="best_effort",
    )
    client = _client(staff)
    streamed = client.get(reverse("history_csv"))
    page = b"".join(streamed.streaming_content).decode()  # type: ignore[attr-defined]  # a StreamingHttpResponse
    api = client.get("/api/runs/export/").content.decode()
    for body in (page, api):
        (row,) = list(csv.DictReader(io.StringIO(body)))
        assert row["target"] == "memory 1.5 GiB, vcore 2.5 cores"
        assert row["claimed"] == "vcore 2 cores"
        assert row["target vcore (cores)"] == "2.5"
        assert row["target memory (GiB)"] == "1.5"
        assert row["claimed vcore (cores)"] == "2"
        assert row["claimed memory (GiB)"] == ""  # not defined: not 0
    (run,) = client.get("/api/runs/").json()["results"]
    assert run["target"] == {"vcore": 2500, "memory": 3 * 2**29}


def test_only_the_types_the_change_sets_are_checked_also_with_a_new_delay(staff: Any) -> None:
    """Issue 40, item 9: root.etl's vcore max equals its guarantee (the cluster's own
    config, accepted by the scheduler); a change of its memory max and its delay leaves
    vcore as it is, and vcore is not refused."""
    part = _lab_west()
    change = services.schedule_quota_change(
        part, "root.etl", new_max={"vcore": 8000, "memory": 40 * 2**30}, new_delay=1200.0
    )
    assert (change.new_max, change.delay) == ({"vcore": 8000, "memory": 40 * 2**30}, 1200.0)
